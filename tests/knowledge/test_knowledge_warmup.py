"""Web processes and Celery workers (each prefork child, after its fork) warm the embedding model and every
business's word vectors in the background."""
from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid

import pytest
import redis
from django.db import connection
from tenant_schemas_celery.app import CeleryApp

from knowledge import warmup
from knowledge.retrieval import wordvec
from tests.support.workers import worker_start, worker_stop

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.mark.parametrize("argv, env, serving", [
    (["/venv/bin/gunicorn", "ratiba.wsgi:application"], {}, True),
    (["/venv/bin/celery", "-A", "ratiba", "worker"], {}, False),  # prefork children would inherit a held lock
    (["/venv/bin/celery", "-A", "ratiba", "beat"], {}, False),
    (["manage.py", "runserver", "127.0.0.1:8000"], {"RUN_MAIN": "true"}, True),
    (["manage.py", "runserver", "127.0.0.1:8000"], {}, False),  # the autoreloader's watcher
    (["manage.py", "runserver", "--noreload"], {}, True),
    (["manage.py", "migrate_schemas"], {}, False),
    (["/venv/bin/pytest"], {}, False),
])
def test_only_serving_processes_warm_up(monkeypatch, argv, env, serving):
    monkeypatch.delenv("RUN_MAIN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert warmup.is_serving(argv) is serving


def test_a_test_run_starts_no_warm_up_thread():
    assert warmup.warm_in_background() is False


@pytest.mark.django_db
def test_warm_up_embeds_the_words_of_live_snippets(tenant):
    from knowledge.services import snippet_version_create

    snippet_version_create(key="parking", title="Parking", body="Free basement parking for guests at Mirage Tower.",
                           category="facility", role="retrieved", queue_embedding=False)
    wordvec._cache.clear()
    assert warmup.warm() >= 6
    assert {"parking", "basement", "mirage", "tower", "guests"} <= set(wordvec._cache)


@pytest.mark.django_db
def test_warm_up_embeds_the_texts_services_rows_are_named_by(tenant):
    from conversations.facts import row_texts, services_list
    from knowledge import embeddings
    from knowledge.models import Service

    Service.objects.create(name="Consumer Unit Replacement", description="Old fuse box replaced.", price="18000")
    embeddings._document_cache.clear()
    warmup.warm()
    digests = {hashlib.sha1(text.encode()).hexdigest() for text in row_texts(services_list())}
    assert digests and digests <= set(embeddings._document_cache)


@pytest.fixture
def fresh_warmup(monkeypatch, settings):
    """A process that has not warmed yet, whose warm-up thread only records that it ran."""
    ran = []
    settings.WARM_AT_START = True
    monkeypatch.setattr(warmup, "_started", False)
    monkeypatch.setattr(warmup, "_warm_in_thread", lambda: ran.append(threading.current_thread().name))
    return ran


def _joined(ran: list, expected: int) -> list:
    deadline = time.monotonic() + 5
    while len(ran) < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return ran


def test_a_prefork_child_warms_up_once_when_it_starts(fresh_warmup):
    from celery.signals import worker_process_init

    worker_process_init.send(sender=None)
    worker_process_init.send(sender=None)  # a second signal in the same process does not warm again
    assert _joined(fresh_warmup, 1) == ["ratiba-warm-up"]
    time.sleep(0.05)
    assert fresh_warmup == ["ratiba-warm-up"]


@pytest.mark.parametrize("pool_module, warms", [
    ("celery.concurrency.solo", True),
    ("celery.concurrency.thread", True),
    ("celery.concurrency.prefork", False),  # the parent forks children later: it must never hold the model lock
])
def test_an_unforked_worker_warms_when_ready_and_a_prefork_parent_never(fresh_warmup, pool_module, warms):
    from celery.signals import worker_ready

    consumer = type("Consumer", (), {"pool": type("TaskPool", (), {"__module__": pool_module})()})()
    worker_ready.send(sender=consumer)
    assert _joined(fresh_warmup, 1 if warms else 0) == (["ratiba-warm-up"] if warms else [])


def test_no_worker_warms_when_warm_up_is_off(fresh_warmup, settings):
    from celery.signals import worker_process_init

    settings.WARM_AT_START = False
    worker_process_init.send(sender=None)
    time.sleep(0.05)
    assert fresh_warmup == []


@pytest.mark.redis
def test_a_real_prefork_worker_warms_its_child_and_still_runs_tasks(tenants, tmp_path):
    """The child (not the parent) loads the model after the fork, and a task sent right away is not stuck."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:  # in CI Redis runs: this must fail, not skip
        pytest.fail(f"Redis is required at {REDIS_URL}: {exc}")
    queue = f"warm-{uuid.uuid4().hex[:8]}"
    log_path = tmp_path / "worker.log"
    env = dict(os.environ, CELERY_BROKER_URL=REDIS_URL, CELERY_RESULT_BACKEND=REDIS_URL, WARM_AT_START="true",
               RATIBA_DB_NAME=connection.settings_dict["NAME"], DJANGO_SETTINGS_MODULE="ratiba.settings",
               LOG_LEVEL="INFO")
    with open(log_path, "wb") as log:
        worker = worker_start(queue=queue, env=env, log=log)
    sender = CeleryApp(f"warm-sender-{queue}", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    try:
        # Sent before the child has finished warming: it must be answered, not wait on a held lock.
        result = sender.send_task("celery.accumulate", args=(1, 2), queue=queue)
        assert result.get(timeout=90) == [1, 2]
        deadline = time.monotonic() + 90
        while "warmed the embedding model" not in log_path.read_text(errors="replace"):
            assert worker.poll() is None, log_path.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-2000:]
            time.sleep(0.5)
        warmed = [line for line in log_path.read_text(errors="replace").splitlines() if "warmed the embedding" in line]
        assert len(warmed) == 1 and "/ForkPoolWorker-1]" in warmed[0], warmed
    finally:
        sender.close()
        worker_stop(worker, grace=20)
