"""Collections tests use the real local embedding model unless a test swaps in a failing one."""
from __future__ import annotations

import pytest

from knowledge import embeddings
from knowledge.embeddings import EmbeddingError


class FailingEmbedder:
    """Raises like a provider outage (retryable) or a rejected request (terminal)."""

    def __init__(self, *, retryable: bool):
        self.info = embeddings.get_embedder().info
        self.retryable = retryable
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        raise EmbeddingError("provider said no", retryable=self.retryable)


@pytest.fixture
def failing_embedder(monkeypatch):
    def install(*, retryable: bool = False) -> FailingEmbedder:
        fake = FailingEmbedder(retryable=retryable)
        monkeypatch.setattr(embeddings, "get_embedder", lambda: fake)
        return fake

    return install


@pytest.fixture
def ingest(django_capture_on_commit_callbacks):
    """Upload through the service and run the queued (eager) ingestion as a commit would."""
    from knowledge.collections.services import document_upload

    def run(collection, filename: str, data: bytes, content_type: str = ""):
        with django_capture_on_commit_callbacks(execute=True):
            return document_upload(collection=collection, filename=filename, data=data, content_type=content_type)

    return run
