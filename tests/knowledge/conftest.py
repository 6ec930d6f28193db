"""Knowledge tests embed with a fast deterministic fake unless they ask for `real_embedder`."""
from __future__ import annotations

import hashlib
import math
import re

import pytest

from knowledge import embeddings
from knowledge.embeddings import EmbeddingInfo


class FakeEmbedder:
    """Bag-of-words hashed into 384 dimensions: similar wording gives similar vectors, instantly."""

    info = EmbeddingInfo(name="fake-hash-384", dimensions=384)

    def __init__(self):
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        vectors = []
        for text in texts:
            vector = [0.0] * 384
            for word in re.findall(r"\w+", text.lower()):
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 384] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


@pytest.fixture(autouse=True)
def fake_embedder(request, monkeypatch):
    if "real_embedder" in request.fixturenames:
        yield None
        return
    fake = FakeEmbedder()
    monkeypatch.setattr(embeddings, "get_embedder", lambda: fake)
    # Query vectors are cached per process: never let fake ones leak into other tests (or the reverse).
    embeddings._query_cache.clear()
    yield fake
    embeddings._query_cache.clear()


@pytest.fixture
def real_embedder():
    """The real local all-MiniLM-L6-v2 model (slow to load: use in few tests)."""
    return embeddings.get_embedder()
