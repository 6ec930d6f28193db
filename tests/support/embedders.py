"""The one fake embedder: instant, deterministic vectors, so only tests about meaning load the real model."""
from __future__ import annotations

import hashlib
import math
import re

from knowledge.embeddings import EmbeddingError, EmbeddingInfo

DIMENSIONS = 384
FAKE_INFO = EmbeddingInfo(name="fake-hash-384", dimensions=DIMENSIONS)


class FakeEmbedder:
    """Bag-of-words hashed into 384 dimensions (similar wording, similar vectors); records each batch's size."""

    def __init__(self, *, error: EmbeddingError | None = None, info: EmbeddingInfo = FAKE_INFO):
        # With `error` every call raises it, like a provider outage (retryable) or a rejected request.
        self.info = info
        self.error = error
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        if self.error is not None:
            raise self.error
        return [_hashed(text) for text in texts]


def _hashed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]
