"""Collections tests use the real local embedding model unless a test swaps in the failing fake
(root conftest's `failing_embedder`)."""
from __future__ import annotations

import pytest

from knowledge.collections.services import document_upload


@pytest.fixture
def ingest(django_capture_on_commit_callbacks):
    """Upload through the service and run the queued (eager) ingestion as a commit would."""

    def run(collection, filename: str, data: bytes, content_type: str = ""):
        with django_capture_on_commit_callbacks(execute=True):
            return document_upload(collection=collection, filename=filename, data=data, content_type=content_type)

    return run
