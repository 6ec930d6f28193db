"""Knowledge-admin fixtures: owners and reviewers in the test tenant, logged-in clients, the fake embedder."""
from __future__ import annotations

import pytest

from tests.support.builders import EDITOR_PERMS, REVIEWER_PERMS, make_user


@pytest.fixture(autouse=True)
def _instant_embeddings(fake_embedder):
    """These tests are about the admin, not about meaning: no real model."""


@pytest.fixture
def owner(tenant):
    return make_user("owner", superuser=True)


@pytest.fixture
def editor(tenant):
    """Can edit snippets but has no review permission."""
    return make_user("editor", perms=EDITOR_PERMS)


@pytest.fixture
def reviewer(tenant):
    return make_user("reviewer", perms=REVIEWER_PERMS)


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
