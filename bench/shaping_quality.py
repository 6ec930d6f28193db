"""Answer shaping: extractive answer quality, checks on legitimate answers, prompt size and cost, language guess.

    .venv/bin/python bench/shaping_quality.py              # dev tenant + 20 public core tenants
    .venv/bin/python bench/shaping_quality.py --dev-only

Runs on its own database (RATIBA_DB_NAME, default bench_shaping). For every answerable question the
product's retrieval (fetch_snippets) runs once; the same prompt is then answered by:

- product extractive (retrieval's top source leads; sentences by question coverage), the shipped default;
- extractive + embedding similarity (the optional hook, local MiniLM sentence vectors);
- lead-of-top baseline: the first two sentences of the top-ranked snippet (what "quote the best snippet"
  would give).

Reported: share of answered questions whose answer cites a relevant snippet (any / first citation),
answer length, compose time; how often the output filter or the grounding check would wrongly reject a
legitimate (extractive) answer; injection questions answered extractively never quote a guardrail or
behaviour section; prompt token estimates and the cost per turn they imply; the EN/SW language guess.
Prints Markdown tables and writes bench/results/shaping_quality-<stamp>.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.common import percentile, table  # noqa: E402

VARIANTS = ["product", "embedding_hook", "lead_of_top"]
LABELS = {"product": "product extractive (top source, coverage)",
          "embedding_hook": "extractive + embedding similarity hook",
          "lead_of_top": "baseline: first 2 sentences of top snippet"}
OUTPUT_TOKENS = 120  # an assumed typical answer length for the cost estimate


class Tally:
    def __init__(self):
        self.n = 0
        self.any_relevant = 0
        self.first_relevant = 0
        self.words: list[int] = []
        self.ms: list[float] = []

    def add(self, *, cited: list[str], relevant: frozenset[str], words: int, ms: float) -> None:
        self.n += 1
        self.any_relevant += int(any(key in relevant for key in cited))
        self.first_relevant += int(bool(cited) and cited[0] in relevant)
        self.words.append(words)
        self.ms.append(ms)

    def row(self, label: str) -> list:
        n = self.n or 1
        return [label, self.n, self.any_relevant / n, self.first_relevant / n, percentile(self.words, 50),
                percentile(self.ms, 50), percentile(self.ms, 95)]

    def as_dict(self) -> dict:
        n = self.n or 1
        return {"n": self.n, "cites_relevant": self.any_relevant / n, "first_citation_relevant": self.first_relevant / n,
                "words_p50": percentile(self.words, 50), "compose_ms_p50": percentile(self.ms, 50),
                "compose_ms_p95": percentile(self.ms, 95)}


def lead_of_top(prompt) -> tuple[str, list[str]]:
    from knowledge.retrieval.sentences import split_sentences

    knowledge = prompt.knowledge_sources
    if not knowledge:
        return "", []
    top = knowledge[0]
    return " ".join(split_sentences(top.body)[:2]), [top.key]


def with_prompt_refs(answer) -> str:
    """The extractive text with its renumbered [n] turned back into the prompt's refs (what grounding reads)."""
    import re

    mapping = {number: source.ref for number, source, _ in answer.cited}
    return re.sub(r"\[(\d+)\]", lambda m: f"[{mapping.get(int(m.group(1)), m.group(1))}]", answer.text)


def cited_keys(answer) -> list[str]:
    return [source.key for _, source, _ in answer.cited if source.kind != "facts"]


def run_tenant(tenant, *, tallies, checks, prompt_tokens, providers) -> None:
    from django.db import connection

    from conversations.facts import facts_for
    from conversations.grounding import LeakDetector, check_grounding
    from conversations.i18n import detect_language
    from conversations.prompting import assemble_prompt, core_sections_for_channel
    from knowledge.retrieval import fetch_snippets

    row, _how = common.seed_tenant(tenant, reseed=False)
    connection.set_tenant(row)
    try:
        core = core_sections_for_channel(channel="chat")
        for query in tenant.queries:
            if not query.answerable:
                continue
            intent = query.intent if query.intent in ("services", "hours", "other") else "other"
            retrieval = fetch_snippets(intent, query=query.text, channel="chat")
            if retrieval.refusal_reason or not retrieval.snippets:
                checks["refused"] += 1
                continue
            facts = facts_for(intent=intent, message=query.text) if intent in ("services", "hours") else None
            prompt = assemble_prompt(question=query.text, language=detect_language(query.text), channel="chat",
                                     intent=intent, snippets=list(retrieval.snippets), facts=facts,
                                     core_sections=core)
            prompt_tokens.append(prompt.token_estimate)
            for name, provider in providers.items():
                started = time.perf_counter()
                answer = provider.compose(prompt)
                elapsed = (time.perf_counter() - started) * 1000
                tallies[(tenant.dataset, name)].add(cited=cited_keys(answer), relevant=query.relevant,
                                                    words=len(answer.text.split()), ms=elapsed)
                if name == "product":
                    checks["answers"] += 1
                    checks["filter_false_positive"] += int(LeakDetector(prompt).check(answer.text).leaked)
                    checks["grounding_false_positive"] += int(not check_grounding(answer=with_prompt_refs(answer),
                                                                                  prompt=prompt).ok)
            started = time.perf_counter()
            text, keys = lead_of_top(prompt)
            tallies[(tenant.dataset, "lead_of_top")].add(cited=keys, relevant=query.relevant, words=len(text.split()),
                                                         ms=(time.perf_counter() - started) * 1000)
    finally:
        connection.set_schema_to_public()


def injection_check(dev_tenant) -> dict:
    """The eval file's injection questions, answered end to end with the extractive provider."""
    import yaml
    from django.db import connection

    from conversations.prompting import core_sections_for_channel
    from knowledge.retrieval.sentences import split_sentences
    from conversations.shaping import shape_answer
    from knowledge.retrieval import fetch_snippets

    evaluation = yaml.safe_load((common.EVAL_DIR / "aria_spa.eval.yaml").read_text())
    questions = [item["text"] for item in evaluation["queries"] if item.get("kind") == "injection"]
    row = common.tenant_get_or_none(dev_tenant.schema)
    connection.set_tenant(row)
    leaked = 0
    try:
        core = core_sections_for_channel(channel="chat")
        protected = [sentence for section in core for sentence in split_sentences(section.body)]
        for text in questions:
            retrieval = fetch_snippets("other", query=text, channel="chat")
            # Answer even when retrieval refuses: the provider must still never echo a core section.
            answer = shape_answer(question=text, language="en", channel="chat", snippets=list(retrieval.snippets))
            leaked += int(any(sentence in answer.text for sentence in protected))
    finally:
        connection.set_schema_to_public()
    return {"questions": len(questions), "answers_quoting_core_sections": leaked}


def language_guess() -> list[list]:
    import yaml

    from conversations.i18n import detect_language

    evaluation = yaml.safe_load((common.EVAL_DIR / "aria_spa.eval.yaml").read_text())
    items = [(item["text"], item.get("language", "en")) for item in evaluation["queries"] + evaluation["unanswerable"]]
    rows = []
    for language in ("en", "sw"):
        subset = [(text, label) for text, label in items if label == language]
        correct = sum(1 for text, label in subset if detect_language(text) == label)
        rows.append([language, len(subset), correct / (len(subset) or 1)])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_shaping")
    common.setup_django(default_db="bench_shaping")
    from collections import defaultdict

    from conversations.prompting import load_prompt_template
    from conversations.providers.extractive import ExtractiveProvider, embedding_similarity
    from llm.pricing import cost_usd
    from knowledge.embeddings import embed_query
    from knowledge.tokens import token_estimate

    embed_query("warm up")  # model load is not compose time
    providers = {"product": ExtractiveProvider(), "embedding_hook": ExtractiveProvider(similarity=embedding_similarity)}
    dev, _skipped = common.load_dev_tenant()
    tenants = [dev] + ([] if args.dev_only else common.load_public_tenants("core"))
    tallies: dict = defaultdict(Tally)
    checks = defaultdict(int)
    prompt_tokens: list[int] = []
    started = time.perf_counter()
    for tenant in tenants:
        run_tenant(tenant, tallies=tallies, checks=checks, prompt_tokens=prompt_tokens, providers=providers)
    injection = injection_check(dev)
    elapsed = time.perf_counter() - started

    headers = ["method", "answered", "cites relevant", "1st citation relevant", "words p50", "ms p50", "ms p95"]
    for dataset, title in (("dev", "Dev tenant (aria_spa, answerable questions retrieval answered)"),
                           ("public", "Public core tenants (20, answerable questions retrieval answered)")):
        rows = [tallies[(dataset, name)].row(LABELS[name]) for name in VARIANTS if tallies[(dataset, name)].n]
        if rows:
            print(table(headers, rows, title=title))
    answers = checks["answers"] or 1
    print(f"\n(answerable questions that retrieval refused, so no answer was composed: {checks['refused']})")
    print(table(["check on legitimate (extractive) answers", "answers", "wrongly rejected", "rate"], [
        ["output filter (leak)", checks["answers"], checks["filter_false_positive"],
         checks["filter_false_positive"] / answers],
        ["grounding check", checks["answers"], checks["grounding_false_positive"],
         checks["grounding_false_positive"] / answers]], title="Checks (false positives)"))
    print(table(["injection questions (dev eval)", "answers quoting a guardrail/behaviour sentence"],
                [[injection["questions"], injection["answers_quoting_core_sections"]]], title="Prompt injection"))
    system_tokens = token_estimate(load_prompt_template().system_message)
    p50, p95 = percentile(prompt_tokens, 50), percentile(prompt_tokens, 95)
    cost_rows = []
    for provider, model in (("anthropic", "claude-haiku-4-5"), ("anthropic", "claude-sonnet-4-5"),
                            ("openai", "gpt-4o-mini"), ("openai", "gpt-4.1-mini")):
        for label, tokens in (("p50", p50), ("p95", p95)):
            cost_rows.append([f"{provider} {model}", label, tokens,
                              f"{cost_usd(provider=provider, model=model, input_tokens=int(tokens), output_tokens=OUTPUT_TOKENS):.5f}"])
    print(table(["model", "prompt", "input tokens (est.)", f"USD per turn (+{OUTPUT_TOKENS} out, no cache)"],
                cost_rows, title=f"Prompt size and cost (system message {system_tokens} tokens, "
                                 f"{len(prompt_tokens)} prompts)"))
    language_rows = language_guess()
    print(table(["labelled language", "questions", "guessed correctly"], language_rows,
                title="Language guess (i18n.detect_language) on aria_spa.eval.yaml"))
    print(f"\n{len(tenants)} tenants, {elapsed:.1f} s, revision {common.git_revision()}")
    path = common.write_result("shaping_quality", {
        "revision": common.git_revision(), "tenants": len(tenants),
        "methods": {f"{dataset}:{name}": tally.as_dict() for (dataset, name), tally in tallies.items()},
        "checks": dict(checks), "injection": injection, "prompt_tokens": {"p50": p50, "p95": p95,
                                                                          "system": system_tokens},
        "language_guess": language_rows, "cost": cost_rows})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
