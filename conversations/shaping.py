"""Answer shaping: the entry point the dispatcher calls once it has knowledge and facts for a question.

    answer = shape_answer(question=..., language="en", channel="chat", intent="other",
                          snippets=retrieval.snippets, facts=facts, force_extractive=over_hard_ceiling)

It assembles the prompt, runs the configured provider and checks the answer before it leaves:

- no API key, `force_extractive` or a `meter` at its limit (the cost ceiling), or LLM_PROVIDER=extractive ->
  the extractive answer;
- a ProviderError or timeout -> the extractive answer, `provider_error` says what failed;
- the output filter finds system-prompt or guardrail/behaviour text -> the extractive answer,
  `output_filtered=True`;
- a price, time, date or phone number not found in a cited source or the facts -> the extractive answer,
  `grounding_fallback=True`.

An LLM call goes down the one LLM path (`llm`) and is priced into the caller's `meter` (a turn's) or, when
none is given, into the answer's own `cost_usd` alone.

Every fallback is recorded here as a telemetry event (`provider_error` or `grounding_fallback`), so
callers need not record it again. Nothing here raises for a provider failure.

Streaming (`shape_answer_stream`) yields AnswerDelta items, then exactly one ShapedAnswer. The output
filter runs on every delta and holds back the last few words, so leaked text is cut before it is sent;
grounding needs the whole answer, so it runs at the end. When the final answer differs from what was
streamed, `ShapedAnswer.replaces_streamed_text` is True and clients must replace the text they showed
with `ShapedAnswer.text` (the SSE final event carries it as `answer` plus that flag).
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection

from conversations import i18n
from conversations.grounding import LeakDetector, check_grounding, cited_refs
from conversations.prompting import AssembledPrompt, CoreSection, Source, assemble_prompt, core_sections_for_channel
from conversations.providers import (ExtractiveProvider, Provider, ProviderError, ProviderNotConfigured,
                                     ProviderResult, TextDelta, get_provider, has_api_key)
from conversations.providers.extractive import ExtractiveAnswer, chunk_text
from conversations.translations import LANGUAGE_FIELD, in_customer_language, record_missing_versions
from knowledge.retrieval.sentences import strip_metadata
from knowledge.retrieval.types import RetrievedSnippet
from llm import Meter
from telemetry.services import event_record

logger = logging.getLogger(__name__)

EXCERPT_CHARS = 240
INFERRED_CITATIONS = 3
# Words held back while streaming, so a leaked run is caught before any of it is sent.
STREAM_HOLDBACK_WORDS = 10
# What the answer shaper's prompt tells an LLM to write, alone, when the data does not answer the question.
NO_ANSWER_MARKER = "[[NO_ANSWER]]"
LLM_REFUSAL_REASON = "no_relevant_context"


@dataclass(frozen=True)
class Citation:
    """A source an answer quotes: which snippet and version, how it scored, when it was last reviewed."""

    ref: int  # the [n] marker in the answer text
    key: str
    version: int
    title: str
    score: float
    excerpt: str
    last_reviewed_at: str | None = None
    source: str = "snippet"  # "snippet" | "chunk" | "facts"
    location: dict = field(default_factory=dict)  # document title / heading / page for chunks
    # "" for the text as written; "sw" when the answer quoted the owner-approved Swahili version.
    language: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ShapedAnswer:
    """The answer that leaves, what produced it, what it cost and which checks replaced an LLM answer."""

    text: str
    citations: list[Citation]
    provider: str  # who wrote `text`: "extractive" after any fallback
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0  # what was spent, including an LLM answer that was then rejected
    grounding_fallback: bool = False
    output_filtered: bool = False
    provider_error: str | None = None  # "<code>: <message>" when the provider failed
    # Why the extractive provider answered: no_api_key | not_configured | cost_ceiling | provider_error |
    # output_filter | grounding.
    fallback_reason: str | None = None
    requested_provider: str = ""  # what settings (or the caller) asked for
    attempted_model: str = ""  # the LLM model that was called, if any
    prompt_version: str = ""
    prompt_tokens: int = 0  # estimate of the assembled prompt
    latency_ms: int = 0
    replaces_streamed_text: bool = False
    unsupported_claims: list[str] = field(default_factory=list)
    # Set when the LLM found no grounded answer in what it was given: `text` is then the deflection.
    refusal_reason: str | None = None

    @property
    def used_llm(self) -> bool:
        return self.provider != ExtractiveProvider.name

    def citations_as_dicts(self) -> list[dict]:
        return [citation.to_dict() for citation in self.citations]

    def meta(self) -> dict:
        """The answer-side fields of a turn's `meta`."""
        return {"provider": self.provider, "model": self.model, "requested_provider": self.requested_provider,
                "prompt_tokens": self.prompt_tokens, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": self.cost_usd,
                "grounding_fallback": self.grounding_fallback, "output_filtered": self.output_filtered,
                "provider_error": self.provider_error, "fallback_reason": self.fallback_reason,
                "prompt_version": self.prompt_version}


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of answer text for a streaming client."""

    text: str


# ----------------------------------------------------------------------------- building blocks


def prepare_prompt(*, question: str, language: str, channel: str, intent: str = "other",
                   snippets: Sequence[RetrievedSnippet] = (), facts: Any | None = None,
                   personality: dict | None = None, core_sections: Sequence[CoreSection] | None = None,
                   history: Sequence[dict] = (), read_as: str | None = None) -> AssembledPrompt:
    """Assemble the prompt, loading the channel's guardrail/behaviour sections and the tenant's personality."""
    if core_sections is None:
        core_sections = core_sections_for_channel(channel=channel)
    if personality is None:
        personality = getattr(getattr(connection, "tenant", None), "personality", None) or {}
    return assemble_prompt(question=question, language=language, channel=channel, intent=intent,
                           snippets=snippets, facts=facts, core_sections=core_sections, personality=personality,
                           history=history, read_as=read_as)


def _citation(source: Source, *, ref: int, excerpt: str | None = None) -> Citation:
    # Authoring metadata (a Keywords line) is never shown to a customer, in an excerpt either.
    text = strip_metadata(excerpt if excerpt is not None else source.body)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > EXCERPT_CHARS:
        text = text[: EXCERPT_CHARS - 1].rsplit(" ", 1)[0] + "…"
    location = dict(source.citation)
    language = str(location.pop(LANGUAGE_FIELD, "") or "")
    return Citation(ref=ref, key=source.key, version=source.version, title=source.title,
                    score=round(float(source.score), 4), excerpt=text, last_reviewed_at=source.last_reviewed_at,
                    source=source.kind, location=location, language=language)


def citations_for_extractive(answer: ExtractiveAnswer) -> list[Citation]:
    return [_citation(source, ref=number, excerpt=" ".join(quoted)) for number, source, quoted in answer.cited]


def citations_for_llm(text: str, prompt: AssembledPrompt) -> list[Citation]:
    """The sources an LLM answer cites by [n]; without markers, the top retrieved sources and the facts."""
    refs = [ref for ref in cited_refs(text) if prompt.source_by_ref(ref) is not None]
    if refs:
        return [_citation(prompt.source_by_ref(ref), ref=ref) for ref in refs]
    knowledge = [s for s in prompt.sources if s.kind != "facts"][:INFERRED_CITATIONS]
    facts = [s for s in prompt.sources if s.kind == "facts"]
    return [_citation(source, ref=source.ref) for source in facts + knowledge]


def _choose(*, provider: Provider | None, force_extractive: bool, force_reason: str,
            meter: Meter) -> tuple[Provider, str, str | None]:
    """(provider to run, provider that was requested, why the extractive one replaced it)."""
    extractive = ExtractiveProvider()
    requested = provider.name if provider is not None else (settings.LLM_PROVIDER or "extractive").strip().lower()
    if not meter.allows_call() and requested != extractive.name:
        # The turn's calls so far reached the session's hard ceiling: no answer call either.
        force_extractive, force_reason = True, "cost_ceiling"
    if force_extractive:
        return extractive, requested, force_reason if requested != extractive.name else None
    if provider is not None:
        return provider, requested, None
    if requested == extractive.name:
        return extractive, requested, None
    if requested in ("anthropic", "openai") and not has_api_key(requested):
        return extractive, requested, "no_api_key"
    try:
        # Cheap to build: the SDK client behind it is cached per configuration in `llm.clients`.
        return get_provider(requested), requested, None
    except ProviderNotConfigured as exc:
        logger.warning("LLM provider unavailable, answering extractively: %s", exc)
        return extractive, requested, "not_configured"


def _extractive_answer(prompt: AssembledPrompt, *, requested: str, started: float, **extra) -> ShapedAnswer:
    provider = ExtractiveProvider()
    # It cannot translate: a Swahili customer gets the owner's Swahili version where there is one.
    composed = provider.compose(in_customer_language(prompt))
    record_missing_versions(composed, language=prompt.language)
    return ShapedAnswer(text=composed.text, citations=citations_for_extractive(composed), provider=provider.name,
                        model=provider.model, requested_provider=requested, prompt_version=prompt.template_version,
                        prompt_tokens=prompt.token_estimate, latency_ms=_elapsed_ms(started), **extra)


def _elapsed_ms(started: float) -> int:
    return int(round((time.monotonic() - started) * 1000))


def _record(name: str, prompt: AssembledPrompt, answer: ShapedAnswer, **payload) -> None:
    event_record(name=name, payload={"intent": prompt.intent, "channel": prompt.channel,
                                     "requested_provider": answer.requested_provider,
                                     "model": answer.attempted_model, "fallback_reason": answer.fallback_reason,
                                     "question": prompt.question[:200], **payload})


def _on_provider_error(prompt: AssembledPrompt, exc: ProviderError, *, requested: str, model: str, started: float,
                       **extra) -> ShapedAnswer:
    logger.warning("LLM provider failed (%s, retryable=%s); answering extractively: %s", exc.code, exc.retryable, exc)
    answer = _extractive_answer(prompt, requested=requested, started=started, fallback_reason="provider_error",
                                provider_error=f"{exc.code}: {exc}"[:500], attempted_model=model, **extra)
    _record("provider_error", prompt, answer, code=exc.code, retryable=exc.retryable, status_code=exc.status_code,
            error=str(exc)[:500])
    return answer


def _checked(prompt: AssembledPrompt, *, text: str, result, requested: str, started: float,
             detector: LeakDetector) -> ShapedAnswer:
    """The LLM answer if it passes the output filter and the grounding check, else the extractive one."""
    spent = {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
             "cost_usd": result.cost_usd, "attempted_model": result.model}
    leak = detector.check(text)
    if leak.leaked:
        answer = _extractive_answer(prompt, requested=requested, started=started, output_filtered=True,
                                    fallback_reason="output_filter", **spent)
        _record("grounding_fallback", prompt, answer, check="output_filter", leaked_from=leak.reason,
                excerpt=leak.excerpt[:200])
        return answer
    # After the leak check: a reply that repeats the prompt also repeats the marker's instruction.
    if NO_ANSWER_MARKER in text:
        # A typed refusal, never the model's own "I don't know": the turn records it as a gap.
        return ShapedAnswer(text=i18n.deflection(LLM_REFUSAL_REASON, language=prompt.language), citations=[],
                            provider=result.provider, model=result.model, requested_provider=requested,
                            prompt_version=prompt.template_version, prompt_tokens=prompt.token_estimate,
                            latency_ms=_elapsed_ms(started), refusal_reason=LLM_REFUSAL_REASON, **spent)
    grounding = check_grounding(answer=text, prompt=prompt)
    if not grounding.ok:
        unsupported = [f"{claim.kind}:{claim.text}" for claim in grounding.unsupported]
        unsupported += [f"ref:[{ref}]" for ref in grounding.invalid_refs]
        answer = _extractive_answer(prompt, requested=requested, started=started, grounding_fallback=True,
                                    fallback_reason="grounding", unsupported_claims=unsupported, **spent)
        _record("grounding_fallback", prompt, answer, check="grounding", unsupported=unsupported)
        return answer
    return ShapedAnswer(text=text, citations=citations_for_llm(text, prompt), provider=result.provider,
                        model=result.model, requested_provider=requested, prompt_version=prompt.template_version,
                        prompt_tokens=prompt.token_estimate, latency_ms=_elapsed_ms(started), **spent)


# ----------------------------------------------------------------------------- entry points


def shape_answer(*, question: str, language: str, channel: str, intent: str = "other",
                 snippets: Sequence[RetrievedSnippet] = (), facts: Any | None = None,
                 personality: dict | None = None, core_sections: Sequence[CoreSection] | None = None,
                 force_extractive: bool = False, force_reason: str = "cost_ceiling",
                 provider: Provider | None = None, history: Sequence[dict] = (),
                 read_as: str | None = None, meter: Meter | None = None) -> ShapedAnswer:
    """A checked answer to `question` from the given knowledge and facts; never raises for provider failures.

    An LLM call is priced into `meter` (a turn's, with the session's ceiling) or, without one, into the
    answer's own `cost_usd` only.
    """
    started = time.monotonic()
    meter = meter if meter is not None else Meter()
    prompt = prepare_prompt(question=question, language=language, channel=channel, intent=intent,
                            snippets=snippets, facts=facts, personality=personality, core_sections=core_sections,
                            history=history, read_as=read_as)
    chosen, requested, reason = _choose(provider=provider, force_extractive=force_extractive,
                                        force_reason=force_reason, meter=meter)
    if isinstance(chosen, ExtractiveProvider):
        return _extractive_answer(prompt, requested=requested, started=started, fallback_reason=reason)
    try:
        result = chosen.generate(prompt, meter=meter)
    except ProviderError as exc:
        return _on_provider_error(prompt, exc, requested=requested, model=chosen.model, started=started)
    return _checked(prompt, text=result.text, result=result, requested=requested, started=started,
                    detector=LeakDetector(prompt))


def shape_answer_stream(*, question: str, language: str, channel: str, intent: str = "other",
                        snippets: Sequence[RetrievedSnippet] = (), facts: Any | None = None,
                        personality: dict | None = None, core_sections: Sequence[CoreSection] | None = None,
                        force_extractive: bool = False, force_reason: str = "cost_ceiling",
                        provider: Provider | None = None, history: Sequence[dict] = (),
                        read_as: str | None = None, meter: Meter | None = None) -> Iterator[AnswerDelta | ShapedAnswer]:
    """AnswerDelta items, then one ShapedAnswer (see the module docstring for `replaces_streamed_text`)."""
    started = time.monotonic()
    meter = meter if meter is not None else Meter()
    prompt = prepare_prompt(question=question, language=language, channel=channel, intent=intent,
                            snippets=snippets, facts=facts, personality=personality, core_sections=core_sections,
                            history=history, read_as=read_as)
    chosen, requested, reason = _choose(provider=provider, force_extractive=force_extractive,
                                        force_reason=force_reason, meter=meter)
    if isinstance(chosen, ExtractiveProvider):
        answer = _extractive_answer(prompt, requested=requested, started=started, fallback_reason=reason)
        yield from (AnswerDelta(text=piece) for piece in chunk_text(answer.text))
        yield answer
        return

    detector = LeakDetector(prompt)
    received = ""  # everything the provider sent
    sent = 0  # how much of it the client has
    result = None
    calls_before = len(meter.calls)
    stream = chosen.stream(prompt, meter=meter)
    try:
        for item in stream:
            if isinstance(item, TextDelta):
                received += item.text
                if detector.check(received).leaked:
                    break  # stop reading; the final answer replaces it below
                safe = _holdback_point(received)
                marker = received.find(NO_ANSWER_MARKER[:2])
                if marker >= 0:
                    safe = min(safe, marker)  # the refusal marker (or what may become it) is never sent
                if safe > sent:
                    yield AnswerDelta(text=received[sent:safe])
                    sent = safe
            else:
                result = item
    except ProviderError as exc:
        answer = _on_provider_error(prompt, exc, requested=requested, model=chosen.model, started=started,
                                    replaces_streamed_text=sent > 0)
        if sent == 0:
            yield from (AnswerDelta(text=piece) for piece in chunk_text(answer.text))
        yield answer
        return
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()

    if result is None:
        # Cut short by the output filter: the usage report never came, so the LLM layer priced an estimate.
        result = (meter.calls[-1].completion if len(meter.calls) > calls_before
                  else ProviderResult(text=received, provider=chosen.name, model=chosen.model))
    answer = _checked(prompt, text=result.text, result=result, requested=requested, started=started,
                      detector=detector)
    # An LLM refusal is replaced by the deflection exactly like a rejected LLM answer.
    if answer.used_llm and not answer.refusal_reason:
        if sent < len(answer.text):
            yield AnswerDelta(text=answer.text[sent:])
    else:
        answer.replaces_streamed_text = sent > 0
        if sent == 0:
            yield from (AnswerDelta(text=piece) for piece in chunk_text(answer.text))
    yield answer


def _holdback_point(text: str) -> int:
    """The offset up to which streamed text may be released: all but the last few words."""
    starts = [match.start() for match in re.finditer(r"\S+", text)]
    if len(starts) <= STREAM_HOLDBACK_WORDS:
        return 0
    return starts[-STREAM_HOLDBACK_WORDS]
