"""Shared fixtures: one test tenant (and a second for isolation) created once per session."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

TENANT_SCHEMA = "test_tenant"
TENANT_DOMAIN = "tenant.test.localhost"
OTHER_SCHEMA = "test_other"
OTHER_DOMAIN = "other.test.localhost"


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, django_db_keepdb, django_db_createdb,
                    django_db_modify_db_settings):
    """Always set up the test database, even for a run of committed-only tests (never touch the dev DB)."""
    from django.test.utils import setup_databases

    with django_db_blocker.unblock():
        setup_databases(verbosity=0, interactive=False, aliases={"default"},
                        keepdb=django_db_keepdb and not django_db_createdb)
    assert connection.settings_dict["NAME"].startswith("test_")
    yield


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate-limit counters and cached figures never leak from one test into the next."""
    from django.core.cache import cache

    from knowledge import embeddings

    cache.clear()
    # Query vectors are cached per process; a test that fakes the embedder must not leak into the next.
    embeddings._query_cache.clear()
    # LLM clients are cached per configuration; one built on a test's mocked transport must not serve the next.
    from llm import clients_clear

    clients_clear()
    # Without a broker the suite's tasks run inline; a test that pointed the app elsewhere must not leak.
    from ratiba.celery import app as celery_app

    celery_app.conf.task_always_eager = not settings.CELERY_BROKER_URL
    # Celery keeps "joining would block" in a process-wide global that every eager apply toggles; two eager
    # tasks overlapping in server threads (browser tests) can leave it stuck on, which then makes the
    # real-worker tests' result.get() refuse to wait.
    from celery._state import _set_task_join_will_block

    _set_task_join_will_block(False)
    yield


def _ensure_tenant(schema: str, name: str, domain: str):
    from ratiba.services import tenant_create

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
    from ratiba.services import api_key_issue

    return api_key_issue(tenant=tenant, label="tests").raw


@pytest.fixture
def api_client(tenant, api_key, client_for):
    """A client on the test tenant's host carrying a valid API key."""
    return client_for(tenant), {"HTTP_AUTHORIZATION": f"Bearer {api_key}"}


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
    from django.apps import apps

    tables = []
    for label in ("knowledge", "conversations", "telemetry", "channels"):
        tables += [f'"{schema}"."{model._meta.db_table}"' for model in apps.get_app_config(label).get_models()]
    if tables:
        with connection.cursor() as cursor:
            cursor.execute(f"truncate {', '.join(tables)} restart identity cascade")
