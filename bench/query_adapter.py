"""A query-side linear adapter for the MiniLM vectors, learned on the choosing folds: does it carry over?

    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/query_adapter.py            # fit on folds 0-1, choose on 2
    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/query_adapter.py --report   # + score folds 3-4 (once chosen)

A question embedding q is read as normalize(q + U V^T q) (rank r); snippet vectors stay as stored, so nothing
is re-embedded. It is trained on the answerable questions of folds 0-1 (softmax over each business's own
snippets, the product's blend of body and title cosine), its rank, strength and epochs chosen on fold 2, and
only then scored on folds 3-4. Needs the pools of bench/unseen_data.py.
"""
from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench import unseen_data  # noqa: E402

VECTORS_PATH = common.RESULTS_DIR / "unseen_vectors.pkl"
TITLE_WEIGHT = 0.3  # the product's default blend (fusion.py)


def business_vectors(runs) -> dict[str, tuple[list[str], object, object]]:
    """(keys, body vectors, title vectors) of every business the runs ask, read once and cached."""
    from django.db import connection

    cached = pickle.loads(VECTORS_PATH.read_bytes()) if VECTORS_PATH.exists() else {}
    wanted = sorted({run.business for run in runs} - set(cached))
    for schema in wanted:
        row = common.tenant_get_or_none(schema)
        connection.set_tenant(row)
        try:
            keys, _titles, vectors, title_vectors = unseen_data._eligible_vectors()
        finally:
            connection.set_schema_to_public()
        cached[schema] = (keys, vectors.astype("float32"), title_vectors.astype("float32"))
    if wanted:
        VECTORS_PATH.write_bytes(pickle.dumps(cached))
    return cached


def examples(runs, vectors) -> list[dict]:
    """One example per answerable question: its vector, its business's snippet matrix, the relevant rows."""
    found = []
    for run in runs:
        if not run.answerable or not run.query_vector:
            continue
        keys, body, title = vectors[run.business]
        positive = [i for i, key in enumerate(keys) if key in run.relevant]
        if not positive:
            continue
        found.append({"q": np.asarray(run.query_vector, dtype="float32"), "business": run.business,
                      "fold": run.fold, "dataset": run.dataset, "language": run.language, "positive": positive})
    return found


def train(train_set, vectors, *, rank: int, decay: float, epochs: int, temperature: float = 0.05,
          seed: int = 0):
    """U, V (384 x rank) minimising softmax loss over each business's snippets; U starts at zero."""
    import torch

    torch.manual_seed(seed)
    dim = 384
    u = torch.zeros(dim, rank, requires_grad=True)
    v = torch.nn.Parameter(torch.randn(dim, rank) * 0.05)
    optimizer = torch.optim.Adam([u, v], lr=2e-3)
    mats = {b: (torch.tensor(body), torch.tensor(title)) for b, (_k, body, title) in vectors.items()}
    by_business: dict[str, list[dict]] = {}
    for ex in train_set:
        by_business.setdefault(ex["business"], []).append(ex)
    # Each business counts the same, however many questions it has.
    weights = {b: 1.0 / len(items) for b, items in by_business.items()}
    for _epoch in range(epochs):
        optimizer.zero_grad()
        total = 0.0
        for business, items in by_business.items():
            body, title = mats[business]
            q = torch.tensor(np.stack([ex["q"] for ex in items]))
            adapted = torch.nn.functional.normalize(q + (q @ v) @ u.T, dim=1)
            scores = ((1 - TITLE_WEIGHT) * adapted @ body.T + TITLE_WEIGHT * adapted @ title.T) / temperature
            log_probs = torch.log_softmax(scores, dim=1)
            for row, ex in enumerate(items):
                total = total - weights[business] * torch.logsumexp(log_probs[row, ex["positive"]], dim=0)
        loss = total / len(by_business) + decay * (u.pow(2).sum() + v.pow(2).sum())
        loss.backward()
        optimizer.step()
    return u.detach().numpy(), v.detach().numpy()


def ranks(items, vectors, u=None, v=None) -> list[int]:
    """1-based rank of the first relevant snippet for each example (adapter applied when given)."""
    out = []
    for ex in items:
        keys, body, title = vectors[ex["business"]]
        q = ex["q"]
        if u is not None:
            q = q + (q @ v) @ u.T
            q = q / np.linalg.norm(q)
        scores = (1 - TITLE_WEIGHT) * body @ q + TITLE_WEIGHT * title @ q
        order = np.argsort(-scores, kind="stable")
        positions = [int(np.where(order == p)[0][0]) for p in ex["positive"]]
        out.append(min(positions) + 1)
    return out


def summary(rank_list) -> tuple[float, float, float]:
    n = len(rank_list) or 1
    return (sum(r == 1 for r in rank_list) / n, sum(r <= 5 for r in rank_list) / n,
            sum(1 / r for r in rank_list) / n)


def subsets(items):
    yield "written", [ex for ex in items if ex["dataset"] in ("own", "dev")]
    yield "public", [ex for ex in items if ex["dataset"] not in ("own", "dev")]
    yield "swahili", [ex for ex in items if ex["language"] == "sw"]
    yield "all", items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="also score folds 3-4 with the chosen setting")
    parser.add_argument("--rank", type=int, nargs="*", default=[8, 32])
    parser.add_argument("--decay", type=float, nargs="*", default=[1e-3, 1e-2])
    parser.add_argument("--epochs", type=int, nargs="*", default=[100, 300])
    parser.add_argument("--written-only", action="store_true", help="fit on the written businesses alone")
    args = parser.parse_args()
    common.setup_django(migrate=False)
    runs = unseen_data.load_runs()
    vectors = business_vectors(runs)
    items = examples(runs, vectors)
    fit = [ex for ex in items if ex["fold"] in (0, 1)
           and (not args.written_only or ex["dataset"] in ("own", "dev"))]
    choose = [ex for ex in items if ex["fold"] == 2]
    print(f"{len(fit)} questions to fit on (folds 0-1), {len(choose)} to choose on (fold 2)")
    rows = [["none", "", "", *[common.fmt(x) for name, part in subsets(choose) for x in summary(ranks(part, vectors))[::2]]]]
    best = None
    for rank in args.rank:
        for decay in args.decay:
            for epochs in args.epochs:
                u, v = train(fit, vectors, rank=rank, decay=decay, epochs=epochs)
                figures = {name: summary(ranks(part, vectors, u, v)) for name, part in subsets(choose)}
                rows.append([rank, decay, epochs, *[common.fmt(x) for name in figures for x in figures[name][::2]]])
                mrr = figures["written"][2] + figures["public"][2]
                if best is None or mrr > best[0]:
                    best = (mrr, rank, decay, epochs, u, v)
    headers = ["rank", "decay", "epochs"] + [f"{name} {m}" for name in ("written", "public", "swahili", "all")
                                              for m in ("hit@1", "MRR")]
    print(common.table(headers, rows, title="fold 2 (choosing), vector-only ranking"))
    if args.report and best is not None:
        _mrr, rank, decay, epochs, u, v = best
        print(f"chosen on fold 2: rank {rank}, decay {decay}, epochs {epochs}")
        report_rows = []
        for fold in unseen_data.REPORT_FOLDS:
            part = [ex for ex in items if ex["fold"] == fold]
            for name, sub in subsets(part):
                before, after = summary(ranks(sub, vectors)), summary(ranks(sub, vectors, u, v))
                report_rows.append([fold, name, len(sub), *[common.fmt(x) for pair in zip(before, after) for x in pair]])
        print(common.table(["fold", "subset", "n", "hit@1", "adapted", "hit@5", "adapted", "MRR", "adapted"],
                           report_rows, title="report folds: vector-only, raw vs adapted"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
