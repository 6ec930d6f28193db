"""Shared fixtures: one test tenant (and a second for isolation) created once per session, the real embedder
loaded once per session and the fake one on request; helpers live in tests/support/."""
from __future__ import annotations

import pytest
from celery._state import _set_task_join_will_block
from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import setup_databases

from knowledge import embeddings
from knowledge.embeddings import EmbeddingError
from llm import clients_clear
from ratiba.celery import app as celery_app
from ratiba.services import api_key_issue, tenant_create
from tests.support.embedders import FakeEmbedder
from tests.support.spa import seed_all

TENANT_SCHEMA = "test_tenant"
TENANT_DOMAIN = "tenant.test.localhost"
OTHER_SCHEMA = "test_other"
OTHER_DOMAIN = "other.test.localhost"


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, django_db_keepdb, django_db_createdb,
                    django_db_modify_db_settings):
    """Always set up the test database, even for a run of committed-only tests (never touch the dev DB)."""
    with django_db_blocker.unblock():
        setup_databases(verbosity=0, interactive=False, aliases={"default"},
                        keepdb=django_db_keepdb and not django_db_createdb)
    assert connection.settings_dict["NAME"].startswith("test_")
    yield


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate-limit counters and cached figures never leak from one test into the next."""
    cache.clear()
    # Query vectors are cached per process; a test that fakes the embedder must not leak into the next.
    embeddings._query_cache.clear()
    # LLM clients are cached per configuration; one built on a test's mocked transport must not serve the next.
    clients_clear()
    # Without a broker the suite's tasks run inline; a test that pointed the app elsewhere must not leak.
    celery_app.conf.task_always_eager = not settings.CELERY_BROKER_URL
    # Celery keeps "joining would block" in a process-wide global that every eager apply toggles; two eager
    # tasks overlapping in server threads (browser tests) can leave it stuck on, which then makes the
    # real-worker tests' result.get() refuse to wait.
    _set_task_join_will_block(False)
    yield


@pytest.fixture(scope="session")
def real_embedder():
    """The process's all-MiniLM-L6-v2 embedder, its model loaded once for the whole run (never rebuilt)."""
    embedder = embeddings.get_embedder()
    embedder.embed(["load the model now"])
    return embedder


def _install(monkeypatch, embedder) -> None:
    monkeypatch.setattr(embeddings, "get_embedder", lambda: embedder)
    # Query vectors are cached per process: none made by the embedder replaced may answer for this one.
    embeddings._query_cache.clear()


@pytest.fixture
def fake_embedder(monkeypatch) -> FakeEmbedder:
    """The instant fake embedder in place of the real model for this test."""
    fake = FakeEmbedder()
    _install(monkeypatch, fake)
    return fake


@pytest.fixture
def failing_embedder(monkeypatch):
    """failing_embedder(retryable=...) -> the fake, now raising like a provider outage or a rejected request."""

    def install(*, retryable: bool = False) -> FakeEmbedder:
        fake = FakeEmbedder(error=EmbeddingError("provider said no", retryable=retryable),
                            info=embeddings.get_embedder().info)
        _install(monkeypatch, fake)
        return fake

    return install


def _ensure_tenant(schema: str, name: str, domain: str):
    tenant, _ = tenant_create(schema=schema, name=name, domain=domain)
    return tenant


@pytest.fixture(scope="session")
def tenants(django_db_setup, django_db_blocker):
    """Create (or reuse with --reuse-db) the two test tenants, outside any test transaction."""
    with django_db_blocker.unblock():
        connection.set_schema_to_public()
        first = _ensure_tenant(TENANT_SCHEMA, "Test Spa", TENANT_DOMAIN)
        second = _ensure_tenant(OTHER_SCHEMA, "Other Salon", OTHER_DOMAIN)
    return first, second


@pytest.fixture
def tenant(tenants, db):
    """The test tenant, with the connection switched to its schema for the test."""
    first, _ = tenants
    connection.set_tenant(first)
    yield first
    connection.set_schema_to_public()


@pytest.fixture
def other_tenant(tenants, db):
    return tenants[1]


@pytest.fixture
def client_for():
    """A Django test client bound to a tenant's host."""

    def make(tenant_or_host) -> Client:
        host = tenant_or_host if isinstance(tenant_or_host, str) else tenant_or_host.get_primary_domain().domain
        return Client(HTTP_HOST=host)

    return make


@pytest.fixture
def tenant_client(tenant, client_for):
    return client_for(tenant)


@pytest.fixture
def api_key(tenant):
    return api_key_issue(tenant=tenant, label="tests").raw


@pytest.fixture
def api_client(tenant, api_key, client_for):
    """A client on the test tenant's host carrying a valid API key."""
    return client_for(tenant), {"HTTP_AUTHORIZATION": f"Bearer {api_key}"}


@pytest.fixture
def spa(tenant):
    """The test tenant with the small spa of tests/support/spa.py: services, hours and six embedded snippets."""
    seed_all()
    return tenant


@pytest.fixture
def chat(spa, api_client):
    """POST a chat turn as JSON: chat(message=..., path=..., **fields) -> response."""
    client, headers = api_client

    def post(path: str = "/api/v1/chat/turns/", **payload):
        return client.post(path, data=payload, content_type="application/json", **headers)

    return post


@pytest.fixture
def committed(tenants, django_db_blocker):
    """Real commits in the test tenant (for concurrency and worker tests); tenant tables emptied after."""
    first, _ = tenants
    with django_db_blocker.unblock():
        connection.set_tenant(first)
        yield first
        _truncate_tenant_tables(first.schema_name)
        connection.set_schema_to_public()


def _truncate_tenant_tables(schema: str) -> None:
    tables = []
    for label in ("knowledge", "conversations", "telemetry", "channels"):
        tables += [f'"{schema}"."{model._meta.db_table}"' for model in apps.get_app_config(label).get_models()]
    if tables:
        with connection.cursor() as cursor:
            cursor.execute(f"truncate {', '.join(tables)} restart identity cascade")
