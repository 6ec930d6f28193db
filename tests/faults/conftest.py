"""Fault, audit and privacy tests: an instant fake embedder on request (`hash_embedder`), and the chat suite's
small spa (`spa`, `chat`) for end-to-end chat faults."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from knowledge import embeddings

# chat_kb.py (the chat tests' spa) and shaping_helpers.py (mocked LLM wire formats) live beside their own
# tests; basenames are unique across the suite.
for _folder in ("chat", "shaping"):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / _folder))


@pytest.fixture
def hash_embedder(monkeypatch):
    from faults_support import HashEmbedder

    fake = HashEmbedder()
    monkeypatch.setattr(embeddings, "get_embedder", lambda: fake)
    # Query vectors are cached per process: never let fake ones leak into other tests (or the reverse).
    embeddings._query_cache.clear()
    yield fake
    embeddings._query_cache.clear()


@pytest.fixture
def spa(tenant):
    """The test tenant with services, hours and six snippets embedded with the real local model."""
    from chat_kb import seed_all

    seed_all()
    return tenant


@pytest.fixture
def chat(spa, api_client):
    """POST a chat turn as JSON: chat(message=..., path=..., **fields) -> response."""
    client, headers = api_client

    def post(path: str = "/api/v1/chat/turns/", **payload):
        return client.post(path, data=payload, content_type="application/json", **headers)

    return post
