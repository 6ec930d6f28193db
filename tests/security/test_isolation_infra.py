"""Tenant isolation below the views: cache keys, rate-limit buckets and Celery tasks are per tenant.

The hard cases use the same name in both tenants on purpose (the same cache key, a user with the same
primary key in both schemas, a snippet version with the same id in both schemas), because ids and
names collide across schemas by design; only the tenant part of a key or a task keeps them apart.
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test import Client, override_settings
from django_tenants.utils import schema_context

from knowledge.models import EmbeddingState, Snippet, SnippetVersion
from ratiba.services import api_key_issue

A_HOST = "tenant.test.localhost"
B_HOST = "other.test.localhost"
SHARED_PK = 990_001  # the same primary key, deliberately, in both schemas
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _pending_version(*, pk: int, key: str, body: str) -> SnippetVersion:
    snippet = Snippet.objects.create(key=key)
    return SnippetVersion.objects.create(pk=pk, snippet=snippet, key=key, version=1, title=key.title(), body=body,
                                         category="facility", is_active=True)


# ----------------------------------------------------------------------------- cache


def test_the_same_cache_key_holds_separate_values_per_tenant(tenants):
    first, second = tenants
    with schema_context(first.schema_name):
        cache.set("figures:health:7", {"owner": "A"})
    with schema_context(second.schema_name):
        assert cache.get("figures:health:7") is None
        cache.set("figures:health:7", {"owner": "B"})
    with schema_context(first.schema_name):
        assert cache.get("figures:health:7") == {"owner": "A"}
    with schema_context(second.schema_name):
        assert cache.get("figures:health:7") == {"owner": "B"}


def test_cache_keys_carry_the_schema_name(tenants):
    first, second = tenants
    with schema_context(first.schema_name):
        key_a = cache.make_key("x")
    with schema_context(second.schema_name):
        key_b = cache.make_key("x")
    assert key_a != key_b
    assert first.schema_name in key_a and second.schema_name in key_b
    assert settings.CACHES["default"]["KEY_FUNCTION"] == "django_tenants.cache.make_key"


# ----------------------------------------------------------------------------- rate limits


@pytest.fixture
def one_window(monkeypatch):
    """Every request in the middle of one fixed minute, so no window boundary can split a test's counts."""
    import types

    from ratiba import ratelimit

    monkeypatch.setattr(ratelimit, "time", types.SimpleNamespace(time=lambda: 1_800_000_030.0))


@override_settings(API_RATE_LIMIT_PER_IP_PER_MINUTE=2)
def test_one_address_flooding_a_does_not_exhaust_its_allowance_on_b(tenants, db, one_window):
    first, second = tenants
    key_a, key_b = api_key_issue(tenant=first).raw, api_key_issue(tenant=second).raw
    client = Client()  # one client address (127.0.0.1) for both hosts
    on_a = [client.get("/api/v1/whoami/", HTTP_HOST=A_HOST, HTTP_AUTHORIZATION=f"Bearer {key_a}").status_code
            for _ in range(3)]
    on_b = [client.get("/api/v1/whoami/", HTTP_HOST=B_HOST, HTTP_AUTHORIZATION=f"Bearer {key_b}").status_code
            for _ in range(2)]
    assert on_a == [200, 200, 429]
    assert on_b == [200, 200]


@override_settings(API_RATE_LIMIT_PER_MINUTE=2, API_RATE_LIMIT_PER_IP_PER_MINUTE=1000)
def test_the_per_key_chat_limit_of_a_leaves_bs_keys_alone(tenants, db, one_window):
    first, second = tenants
    key_a, key_b = api_key_issue(tenant=first).raw, api_key_issue(tenant=second).raw
    client = Client()

    def turn(host: str, key: str) -> int:
        return client.post("/api/v1/chat/turns/", data={"message": "thanks"}, content_type="application/json",
                           HTTP_HOST=host, HTTP_AUTHORIZATION=f"Bearer {key}").status_code

    assert [turn(A_HOST, key_a) for _ in range(3)] == [200, 200, 429]
    assert [turn(B_HOST, key_b) for _ in range(2)] == [200, 200]


@override_settings(API_RATE_LIMIT_PER_MINUTE=2)
def test_owners_with_the_same_user_id_in_two_tenants_have_separate_chat_buckets(tenants, db, one_window):
    """The chat page's bucket is "user:<pk>": the same string in both schemas, kept apart by the cache key."""
    first, second = tenants
    browsers = {}
    for tenant, host in ((first, A_HOST), (second, B_HOST)):
        with schema_context(tenant.schema_name):
            owner = get_user_model().objects.create_user(pk=SHARED_PK, username=f"owner-{tenant.schema_name}",
                                                         is_staff=True)
            browser = Client(HTTP_HOST=host)
            browser.force_login(owner)
            browsers[host] = browser

    def send(host: str) -> int:
        response = browsers[host].post("/chat/stream/", data={"message": "thanks"}, content_type="application/json")
        if response.streaming:
            b"".join(response.streaming_content)
        return response.status_code

    assert [send(A_HOST) for _ in range(3)] == [200, 200, 429]
    assert [send(B_HOST) for _ in range(2)] == [200, 200]


# ----------------------------------------------------------------------------- Celery, eager


def test_an_embedding_task_sent_in_a_embeds_as_version_and_not_bs_with_the_same_id(tenants, db):
    from knowledge.tasks import embed_snippet_version

    first, second = tenants
    with schema_context(second.schema_name):
        _pending_version(pk=SHARED_PK, key="b-only", body="Tenant B's own words.")
    with schema_context(first.schema_name):
        _pending_version(pk=SHARED_PK, key="a-only", body="Tenant A's own words.")
        assert embed_snippet_version.delay(SHARED_PK).get() == 1
        assert SnippetVersion.objects.get(pk=SHARED_PK).embedding_state == EmbeddingState.DONE
    with schema_context(second.schema_name):
        untouched = SnippetVersion.objects.get(pk=SHARED_PK)
        assert (untouched.key, untouched.embedding_state, untouched.embedding) == ("b-only", "pending", None)


def test_a_digest_task_sent_in_a_writes_its_digest_in_a_only(tenants, db):
    from telemetry.models import Digest
    from telemetry.tasks import daily_digest

    first, second = tenants
    with schema_context(second.schema_name):
        assert not Digest.objects.exists()
    with schema_context(first.schema_name):
        result = daily_digest.delay().get()
        assert result["schema"] == first.schema_name
        assert Digest.objects.count() == 1
    with schema_context(second.schema_name):
        assert not Digest.objects.exists()


# ----------------------------------------------------------------------------- Celery, a real worker


@pytest.fixture
def worker_queue(tenants):
    """A real `celery worker` on Redis (private queue, test database) and a sender app pointed at it."""
    from tenant_schemas_celery.app import CeleryApp

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:  # CI runs Redis: fail, never skip
        pytest.fail(f"Redis is required at {REDIS_URL}: {exc}")
    queue = f"test-sec-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, CELERY_BROKER_URL=REDIS_URL, CELERY_RESULT_BACKEND=REDIS_URL,
               RATIBA_DB_NAME=connection.settings_dict["NAME"], DJANGO_SETTINGS_MODULE="ratiba.settings")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ratiba", "worker", "-Q", queue, "--pool", "solo", "--concurrency",
         "1", "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=Path(settings.BASE_DIR), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sender = CeleryApp("security-sender", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    try:
        yield sender, queue
    finally:
        sender.close()
        worker.terminate()
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()


@pytest.mark.redis
def test_a_worker_runs_an_embedding_task_sent_in_a_against_as_row_only(worker_queue, tenants, django_db_blocker):
    first, second = tenants
    sender, queue = worker_queue
    with django_db_blocker.unblock():
        try:
            with schema_context(second.schema_name):
                _pending_version(pk=SHARED_PK, key="b-worker", body="Tenant B's pending words.")
            with schema_context(first.schema_name):
                _pending_version(pk=SHARED_PK, key="a-worker", body="Tenant A's pending words.")
                embedded = sender.send_task("knowledge.embed_snippet_version", args=[SHARED_PK],
                                            queue=queue).get(timeout=120)
                mine = SnippetVersion.objects.get(pk=SHARED_PK)
            with schema_context(second.schema_name):
                theirs = SnippetVersion.objects.get(pk=SHARED_PK)
        finally:
            for schema in (first.schema_name, second.schema_name):
                with schema_context(schema):
                    Snippet.objects.filter(key__in=["a-worker", "b-worker"]).delete()
    assert embedded == 1
    assert (mine.key, mine.embedding_state, len(mine.embedding)) == ("a-worker", "done", 384)
    assert (theirs.key, theirs.embedding_state, theirs.embedding) == ("b-worker", "pending", None)


@pytest.mark.redis
def test_a_worker_writes_the_digest_of_the_tenant_that_sent_it(worker_queue, tenants, django_db_blocker):
    from telemetry.models import Digest

    first, second = tenants
    sender, queue = worker_queue
    with django_db_blocker.unblock():
        try:
            with schema_context(first.schema_name):
                result = sender.send_task("telemetry.daily_digest", queue=queue).get(timeout=120)
                in_first = Digest.objects.count()
            with schema_context(second.schema_name):
                in_second = Digest.objects.count()
        finally:
            with schema_context(first.schema_name):
                Digest.objects.all().delete()
    assert result["schema"] == first.schema_name
    assert (in_first, in_second) == (1, 0)
