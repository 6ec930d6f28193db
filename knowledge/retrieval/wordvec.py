"""Word vectors for the refusal decision: each word embedded alone by the local MiniLM model, cached.

A word's vector is what the sentence model makes of the word on its own: "car" lands near "vehicle" and
"parking", "BPA" near nothing a tray-packaging snippet says. They are computed on demand (a batch of the
words not yet seen) and kept in a bounded process-wide cache: words do not depend on the tenant, so one
cache serves every business. The local model is used whatever EMBEDDING_PROVIDER says: it ships with the
project, and a word lookup must never be a paid network call.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from knowledge.embeddings import LocalEmbedder, get_embedder

CACHE_WORDS = 60_000  # ~90 MB as float32 at 384 dimensions; least recently used words leave first

_own_embedder: LocalEmbedder | None = None
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_lock = threading.Lock()


def word_vectors(words: list[str]) -> dict[str, np.ndarray]:
    """Unit vectors for `words` (lower-cased tokens), embedding only those not cached yet."""
    wanted = list(dict.fromkeys(words))
    with _lock:
        found = {word: _cache[word] for word in wanted if word in _cache}
        for word in found:
            _cache.move_to_end(word)
    missing = [word for word in wanted if word not in found]
    if missing:
        fresh = np.asarray(_local_model().embed(missing), dtype=np.float32)
        with _lock:
            for word, vector in zip(missing, fresh, strict=True):
                _cache[word] = vector
                found[word] = vector
            while len(_cache) > CACHE_WORDS:
                _cache.popitem(last=False)
    return found


def _local_model() -> LocalEmbedder:
    """The process's local model: the query embedder itself when it is local (loaded once)."""
    global _own_embedder
    embedder = get_embedder()
    if isinstance(embedder, LocalEmbedder):
        return embedder
    if _own_embedder is None:
        _own_embedder = LocalEmbedder()
    return _own_embedder


def warm() -> None:
    """Load the model (the first word lookup would otherwise pay for it)."""
    word_vectors(["warm"])
