"""Fine-tune the answerability cross-encoder on question/snippet pairs from the training folds.

    .venv/bin/python bench/unseen_data.py                 # first: seed and run every business (cached)
    .venv/bin/python bench/train_answerability.py         # train on folds 0-1, write the weights, score fold 2
    .venv/bin/python bench/train_answerability.py --eval  # score fold 2 with the shipped weights only

Pairs come from the cached runs of bench/unseen_data.py, only from TRAIN_FOLDS, each a question against
one window of a snippet (knowledge.retrieval.answerability.best_window): an answerable question's relevant
snippets are positives; the best-ranked other snippets, and each relevant snippet with the sentence that
shares most words with the question taken out (a near miss inside one long snippet), are negatives; a
labelled or synthetic near miss's best-ranked snippets are negatives; and generic off-topic requests
(CLINC150's in-scope `train` split only, never the `oos_*` splits the bench's generic questions are drawn
from; see `generic_questions`) paired with the business's nearest snippet (MiniLM cosine) are negatives too,
about GENERIC_PER_ANSWERABLE per answerable question, a third of them as the bag of English words a Swahili
question's glossary rendering gives. Fold 2 is kept out: the refusal
model's second stage is fitted there (bench/fit_refusal.py), and the score's AUC there is what it does on
businesses it never saw; folds 3-4 are only reported.

The model starts from the first LAYERS layers of the shipped all-MiniLM-L6-v2; its word embeddings stay
frozen (read from the package), so only the layers and the head are written, in fp16, to
bench/results/answerability.safetensors; `bench/fit_refusal.py --answerability` then reports it as a second
stage. An experiment: see docs/BENCHMARKS.md ("A cross-encoder, tried and not shipped").
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, unseen_data  # noqa: E402

TRAIN_FOLDS = (0, 1)
HOLDOUT_FOLD = 2
LAYERS = 3
NEGATIVES_PER_RUN = 2
EPOCHS = 2
WRITTEN_WEIGHT = 3.0  # the written businesses are the closest to the ones the product serves
BATCH = 16
SEED = 7
GENERIC_PER_ANSWERABLE = 0.5  # generic off-topic negatives per answerable question of a business
GENERIC_AS_WORDS = 1 / 3  # share of them given as a bare word list (how a Swahili question reaches the model)
CLINC_PATH = common.EVAL_DIR / "public" / "raw" / "clinc150" / "data_full.json.gz"
CLINC_SPLIT = "train"  # in-scope requests; the evaluated generic questions come from oos_train/oos_val/oos_test
# CLINC domains and intents a business might answer (a bakery's recipes, a driving school's cars, a clinic's
# insurance, a phone shop's phones, bookings and orders), and chit-chat the product handles elsewhere.
CLINC_SKIP_DOMAINS = {"kitchen_and_dining", "travel", "auto_and_commute", "small_talk", "meta"}
CLINC_SKIP_INTENTS = {"insurance", "insurance_change", "find_phone", "make_call", "text", "share_location",
                      "order", "order_status", "shopping_list", "shopping_list_update", "calendar",
                      "calendar_update", "meeting_schedule", "schedule_meeting", "reminder", "reminder_update",
                      "todo_list", "todo_list_update", "smart_home"}
# Words that could make a request in-scope for some business here (the public set's own filters, widened to
# the written businesses' trades).
CLINC_BLOCK = (
    r"\b(hotels?|rooms?|restaurants?|food|eat|menu|dinner|lunch|breakfast|reserv\w*|book\w*|trains?|taxis?|"
    r"cabs?|uber|ride|tickets?|stations?|park\w*|wi-?fi|internet|pets?|dogs?|cats?|animals?|smok\w*|check ?in|"
    r"check ?out|pay\w*|cards?|cash|refund|cancel\w*|travel\w*|trip|flights?|bike|luggage|bags?|pool|gym|"
    r"wheelchair|drinks?|alcohol|beer|wine|vegan|vegetarian|e-?mails?|mail|google|apps?|online|web\w*|"
    r"appointments?|open\w*|hours?|price\w*|cost\w*|deliver\w*|repair\w*|fix\w*|phones?|screen|battery|"
    r"clean\w*|wash\w*|laundry|dry|plumb\w*|pipes?|leak\w*|water|toilet|solar|panels?|electric\w*|power|"
    r"vet\w*|spa|massage|bak\w*|cakes?|bread|lessons?|driv\w*|cars?|licen[cs]e|tests?|doctor|health\w*|"
    r"pain|injur\w*|therap\w*|buy\w*|order\w*|ship\w*|warranty|discount)\b")


def by_similarity(pool) -> list:
    return sorted(pool, key=lambda c: -(c.similarity if c.similarity is not None else -1.0))


def _without_answer(question: str, title: str, body: str) -> str | None:
    """The snippet's best window once the sentence sharing most words with the question is taken out.

    What a near miss looks like inside one long snippet: the same topic, the detail asked for gone. None
    when the snippet has a single sentence or no sentence shares a word with the question.
    """
    from knowledge.retrieval.answerability import overlap, sentences, windows
    from knowledge.retrieval.relevance import content_words, salient_words

    words = salient_words(content_words(question))
    parts = sentences(body)
    if len(parts) < 2 or not words:
        return None
    scores = [overlap(words, part) for part in parts]
    best = max(range(len(parts)), key=lambda i: scores[i])
    if scores[best] == 0:
        return None
    rest = parts[:best] + parts[best + 1:]
    return max(windows(title, rest), key=lambda text: overlap(words, text))


def pairs_for(runs, *, deletions: bool = True) -> list[tuple[str, str, int, str]]:
    """(question, window, label, business) for every run's best candidates and relevant snippets."""
    from knowledge.retrieval.answerability import best_window

    out = []
    for run in runs:
        if not run.answerable and run.unanswerable_kind not in ("in_domain", "synthetic"):
            continue
        seen = set()

        def add(text, label):
            if text and text not in seen:
                seen.add(text)
                out.append((run.embedding_text, text, label, run.business))

        for candidate in run.pool:
            if candidate.key in run.relevant:
                add(best_window(run.embedding_text, candidate.title, candidate.body), 1)
                if deletions:
                    add(_without_answer(run.embedding_text, candidate.title, candidate.body), 0)
        negatives = [c for c in by_similarity(run.pool) if c.key not in run.relevant][:NEGATIVES_PER_RUN]
        for candidate in negatives:
            add(best_window(run.embedding_text, candidate.title, candidate.body), 0)
    return out


def generic_questions(evaluated: set[str]) -> list[str]:
    """CLINC150 in-scope `train` requests no business here could answer, none of them an evaluated question."""
    import gzip
    import re

    data = json.loads(gzip.open(CLINC_PATH).read())
    domains = json.loads((CLINC_PATH.parent / "domains.json").read_text())
    skip = set(CLINC_SKIP_INTENTS) | {i for d in CLINC_SKIP_DOMAINS for i in domains[d]}
    block = re.compile(CLINC_BLOCK, re.I)
    out = sorted({text for text, intent in data[CLINC_SPLIT] if intent not in skip and not block.search(text)})
    evaluated_lower = {t.strip().lower() for t in evaluated}
    assert not evaluated_lower & {t.lower() for t in out}, "a generic training request is an evaluated question"
    return out


def as_words(text: str) -> str:
    """A request as the bag of salient English words a Swahili question's glossary rendering produces."""
    from knowledge.retrieval.relevance import content_words, salient_words

    return " ".join(salient_words(content_words(text))) or text


def generic_pairs(train_runs, evaluated: set[str]) -> list[tuple[str, str, int, str]]:
    """(request, nearest snippet's window, 0, business): generic off-topic negatives for each training business.

    The snippet is the business's closest by MiniLM cosine (the snippets any of its runs retrieved), the one
    retrieval would put first for an off-topic request; its window is chosen as at inference.
    """
    import numpy as np

    from knowledge.retrieval.answerability import best_window
    from knowledge.embeddings import embed_texts
    from knowledge.retrieval.pipeline import prepare_query
    from knowledge.services import embedding_text

    rng = random.Random(SEED + 1)
    pool = generic_questions(evaluated)
    rng.shuffle(pool)
    snippets: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    answerable = defaultdict(int)
    for run in train_runs:
        answerable[run.business] += run.answerable
        for candidate in run.pool:
            snippets[run.business].setdefault(candidate.key, (candidate.title, candidate.body))
    chosen: list[tuple[str, str]] = []  # (business, request)
    cursor = 0
    for business in sorted(snippets):
        n = max(1, round(GENERIC_PER_ANSWERABLE * answerable[business]))
        for _ in range(n):
            text = pool[cursor % len(pool)]
            cursor += 1
            chosen.append((business, as_words(text) if rng.random() < GENERIC_AS_WORDS else text))
    print(f"generic negatives: {len(chosen)} from {len(pool)} CLINC150 '{CLINC_SPLIT}' requests "
          f"({min(cursor, len(pool))} used) for {len(snippets)} businesses", flush=True)
    texts = [prepare_query(text).embedding_text for _b, text in chosen]
    question_vectors = np.array(embed_texts(texts))
    out = []
    for business in sorted(snippets):
        keys = sorted(snippets[business])
        vectors = np.array(embed_texts([embedding_text(title=snippets[business][k][0], body=snippets[business][k][1])
                                        for k in keys]))
        for i, (owner, _text) in enumerate(chosen):
            if owner != business:
                continue
            title, body = snippets[business][keys[int(np.argmax(vectors @ question_vectors[i]))]]
            out.append((texts[i], best_window(texts[i], title, body), 0, business))
    return out


def train(pairs, *, layers: int, epochs: int, threads: int, written: set[str], seed: int = SEED):
    import torch

    from knowledge.retrieval.answerability import MAX_TOKENS, build

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    model, tokenizer = build(None, layers=layers)
    for parameter in model.encoder.embeddings.parameters():
        parameter.requires_grad = False
    # Each business weighs the same within each label, so large public tenants do not decide for the rest.
    counts = defaultdict(int)
    for _q, _p, label, business in pairs:
        counts[(business, label)] += 1
    per_label = defaultdict(float)
    for (business, label), n in counts.items():
        per_label[label] += 1.0
    weights = [1.0 / counts[(b, label)] / per_label[label] * (WRITTEN_WEIGHT if b in written else 1.0)
               for _q, _p, label, b in pairs]
    scale = len(pairs) / sum(weights)
    weights = [w * scale for w in weights]
    optimizer = torch.optim.AdamW([
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head.")],
         "lr": 5e-5},
        {"params": model.head.parameters(), "lr": 1e-3},
    ], weight_decay=0.01)
    steps = epochs * ((len(pairs) + BATCH - 1) // BATCH)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / (0.06 * steps)) * max(0.0, 1 - step / steps))
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    step = 0
    started = time.perf_counter()
    model.train()
    lengths = [len(q) + len(p) for q, p, _label, _b in pairs]
    for epoch in range(epochs):
        # Batches of similar length pad less (two cores: padding is most of the cost), in random order.
        rng.shuffle(order)
        batches = []
        for start in range(0, len(order), BATCH * 50):
            chunk = sorted(order[start:start + BATCH * 50], key=lambda i: lengths[i])
            batches += [chunk[k:k + BATCH] for k in range(0, len(chunk), BATCH)]
        rng.shuffle(batches)
        running = 0.0
        for idx in batches:
            batch = tokenizer([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], truncation="only_second",
                              max_length=MAX_TOKENS, padding=True, return_tensors="pt")
            logits = model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
            labels = torch.tensor([float(pairs[i][2]) for i in idx])
            w = torch.tensor([weights[i] for i in idx])
            loss = (loss_fn(logits, labels) * w).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            running += loss.item()
            if step % 100 == 0:
                print(f"  epoch {epoch} step {step}/{steps} loss {running / 100:.4f} "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
                running = 0.0
    model.eval()
    return model


def save(model, path: Path, meta: dict) -> None:
    from knowledge.retrieval.answerability import write_weights

    write_weights(model, path, meta)


def soup(paths: list[Path], out: Path) -> None:
    """Average the weights of several trainings (same start, other seeds) into one model of the same size.

    Fine-tunings from the same pre-trained start stay in one basin, so their average reads like their
    ensemble at the cost of one model: what it says about a pair depends less on one training's luck.
    """
    from knowledge.retrieval.answerability import read_weights
    from safetensors.torch import save_file

    states, metas = zip(*(read_weights(path) for path in paths))
    averaged = {key: (sum(state[key].float() for state in states) / len(states)).half().contiguous()
                for key in states[0]}
    meta = dict(metas[0], soup=[path.name for path in paths], seeds=[m.get("seed") for m in metas])
    save_file(averaged, str(out), metadata={"ratiba": json.dumps(meta)})


def auc(scores: list[float], labels: list[int]) -> float:
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def evaluate(runs, scorer) -> None:
    """Per run: the best score over the top candidates; AUC answerable vs not, by dataset and language."""
    from knowledge.retrieval.answerability import best_window

    rows = []
    started = time.perf_counter()
    for run in runs:
        top = by_similarity(run.pool)[:2]
        read = [best_window(run.embedding_text, c.title, c.body) for c in top]
        scores = scorer.score_pairs(run.embedding_text, read) or [0.0]
        rows.append((run, max(scores), scores[0]))
    elapsed = time.perf_counter() - started
    print(f"scored {len(runs)} runs in {elapsed:.0f} s ({1000 * elapsed / max(len(runs), 1):.1f} ms per run)")
    timings = []
    for run in runs[:300]:
        top = by_similarity(run.pool)[:1]
        if not top:
            continue
        window = best_window(run.embedding_text, top[0].title, top[0].body)
        t0 = time.perf_counter()
        scorer.score_pairs(run.embedding_text, [window])
        timings.append(1000 * (time.perf_counter() - t0))
    print(f"one pair (window chosen beforehand), {len(timings)} runs: p50 {common.percentile(timings, 50):.1f} ms, "
          f"p95 {common.percentile(timings, 95):.1f} ms")
    table_rows = []
    for label, keep in (("all", lambda r: True), ("written", lambda r: r.dataset in ("own", "dev")),
                        ("public", lambda r: r.dataset == "public"), ("english", lambda r: r.language == "en"),
                        ("swahili", lambda r: r.language == "sw")):
        subset = [(r, best, first) for r, best, first in rows if keep(r) and (r.answerable or r.unanswerable_kind
                                                                              in ("in_domain", "synthetic"))]
        labels = [1 if r.answerable else 0 for r, _b, _f in subset]
        table_rows.append([label, len(subset), auc([b for _r, b, _f in subset], labels),
                           auc([f for _r, _b, f in subset], labels)])
    print(common.table(["runs", "n", "AUC best of top 2", "AUC top 1"], table_rows,
                       title=f"Answerable vs near miss, fold {HOLDOUT_FOLD} (never trained on)"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", action="store_true", help="score the holdout fold with the shipped weights")
    parser.add_argument("--layers", type=int, default=LAYERS)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0, help="train on at most this many pairs (a quick try)")
    parser.add_argument("--no-generic", action="store_true", help="no generic off-topic negatives (the second try)")
    parser.add_argument("--seed", type=int, default=SEED, help="the training's seed (initial head, batch order)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the weights (default: the bench's)")
    parser.add_argument("--soup", type=Path, nargs="+", default=None,
                        help="average these trainings' weights into --out and score that")
    args = parser.parse_args()
    common.setup_django(migrate=False)
    from bench.answerability import WEIGHTS_PATH
    from knowledge.retrieval.answerability import Reader

    out = args.out or WEIGHTS_PATH
    if args.soup:
        soup(args.soup, out)
        print(f"wrote {out} (average of {len(args.soup)} trainings)")
        args.eval = True

    runs = unseen_data.load_runs()
    if not args.eval:
        train_runs = [r for r in runs if r.fold in TRAIN_FOLDS]
        started = time.perf_counter()
        pairs = pairs_for(train_runs)
        if not args.no_generic:
            evaluated = {r.text for r in runs if r.unanswerable_kind == "generic"}
            generic = generic_pairs(train_runs, evaluated)
            for question, window, _label, business in generic[:5]:
                print(f"  e.g. {business}: {question!r} -> {window[:90]!r}")
            pairs += generic
        random.Random(SEED).shuffle(pairs)
        if args.limit:
            pairs = pairs[:args.limit]
        print(f"{len(pairs)} pairs ({sum(p[2] for p in pairs)} positive) from {len(train_runs)} runs of "
              f"{len({r.business for r in train_runs})} businesses, folds {list(TRAIN_FOLDS)}")
        written = {r.business for r in train_runs if r.dataset in ("own", "dev")}
        model = train(pairs, layers=args.layers, epochs=args.epochs, threads=args.threads, written=written,
                      seed=args.seed)
        save(model, out, {
            "layers": args.layers, "folds": list(TRAIN_FOLDS), "pairs": len(pairs), "epochs": args.epochs,
            "seed": args.seed,
            "generic_negatives": 0 if args.no_generic else len(generic),
            "source": "bench/train_answerability.py from the shipped all-MiniLM-L6-v2"})
        print(f"trained in {(time.perf_counter() - started) / 60:.1f} min (pairs built and model fitted)")
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    evaluate([r for r in runs if r.fold == HOLDOUT_FOLD], Reader(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
