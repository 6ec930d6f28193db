"""Knowledge-admin fixtures: owners and reviewers in the test tenant, logged-in clients, a fast fake embedder."""
from __future__ import annotations

import hashlib
import math
import re

import pytest

from knowledge import embeddings
from knowledge.embeddings import EmbeddingInfo
from kadmin_builders import EDITOR_PERMS, REVIEWER_PERMS, make_staff


class HashEmbedder:
    """Bag-of-words hashed into 384 dimensions: deterministic and instant (these tests are about the admin)."""

    info = EmbeddingInfo(name="fake-hash-384", dimensions=384)

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * 384
            for word in re.findall(r"\w+", text.lower()):
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 384] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch):
    monkeypatch.setattr(embeddings, "get_embedder", lambda: HashEmbedder())


@pytest.fixture
def owner(tenant):
    return make_staff("owner", superuser=True)


@pytest.fixture
def editor(tenant):
    """Can edit snippets but has no review permission."""
    return make_staff("editor", perms=EDITOR_PERMS)


@pytest.fixture
def reviewer(tenant):
    return make_staff("reviewer", perms=REVIEWER_PERMS)


@pytest.fixture
def login(tenant, client_for):
    """A client on the test tenant's host logged in as `user`."""

    def make(user):
        client = client_for(tenant)
        client.force_login(user)
        return client

    return make


@pytest.fixture
def owner_client(owner, login):
    return login(owner)
