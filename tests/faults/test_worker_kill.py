"""A Celery worker killed with SIGKILL in the middle of a task: the message comes back (acks late), another run
finishes the job, and the result is correct and idempotent — nothing done twice, no duplicate rows.

Two ways a worker dies:
- the whole worker process (solo pool): its message stays unacknowledged in Redis until the visibility timeout
  (set to seconds here via CELERY_VISIBILITY_TIMEOUT), then a new worker receives it;
- the pool child running the task (prefork): with reject_on_worker_lost the parent requeues the message at once
  and a fresh child runs it.
Both run on a private queue under a private Redis key prefix, against the test database, with the real model.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest
import redis
from django.db import connection
from django_tenants.utils import schema_context
from tenant_schemas_celery.app import CeleryApp

from knowledge.models import EmbeddingState, Snippet, SnippetVersion
from tests.support.workers import worker_start, worker_stop

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
VISIBILITY_SECONDS = 8
PENDING_VERSIONS = 400

pytestmark = pytest.mark.redis


class Broker:
    """A private queue and key prefix on the test Redis, a sender app, and workers started on demand."""

    def __init__(self, tmp_path: Path):
        try:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
        except redis.exceptions.ConnectionError as exc:  # in CI Redis runs: this must fail, not skip
            pytest.fail(f"Redis is required at {REDIS_URL}: {exc}")
        tag = uuid.uuid4().hex[:8]
        self.queue = f"faults-{tag}"
        # Our short visibility timeout must never redeliver another test run's messages: own key space.
        self.prefix = f"faults-{tag}:"
        self.logs = tmp_path
        self.workers: list[subprocess.Popen] = []
        self.sender = CeleryApp(f"faults-sender-{tag}", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
        self.sender.conf.broker_transport_options = {"global_keyprefix": self.prefix}

    def start_worker(self, name: str, *, pool: str) -> subprocess.Popen:
        env = dict(os.environ, CELERY_BROKER_URL=REDIS_URL, CELERY_RESULT_BACKEND=REDIS_URL,
                   CELERY_BROKER_KEY_PREFIX=self.prefix, CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_SECONDS),
                   CELERY_UNACKED_RESTORE_INTERVAL="1", CELERY_UNACKED_RESTORE_THROTTLE="1",
                   RATIBA_DB_NAME=connection.settings_dict["NAME"], DJANGO_SETTINGS_MODULE="ratiba.settings",
                   EMBEDDING_PROVIDER="local", LOG_LEVEL="INFO")
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        worker = worker_start(queue=self.queue, env=env, log=log, pool=pool, name=name)
        worker.log_file = log
        self.workers.append(worker)
        return worker

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        self.sender.close()
        for worker in self.workers:
            worker_stop(worker, grace=15)
            worker.log_file.close()
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"{self.prefix}*"):
            client.delete(key)


@pytest.fixture
def broker(tmp_path):
    broker = Broker(tmp_path)
    try:
        yield broker
    finally:
        broker.close()


def _wait_until(condition, *, seconds: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")


def _pending_versions(count: int) -> list[int]:
    Snippet.objects.bulk_create([Snippet(key=f"fact-{n:04d}") for n in range(count)])
    snippets = {s.key: s for s in Snippet.objects.all()}
    rows = [SnippetVersion(snippet=snippets[f"fact-{n:04d}"], key=f"fact-{n:04d}", version=1, is_active=True,
                           title=f"House fact {n}",
                           body=f"Fact number {n}: the spa keeps {n % 7 + 1} spare robes per treatment room, "
                                f"and room {n % 12 + 1} is cleaned every {n % 5 + 2} hours.",
                           category="general", role="retrieved", token_count=30,
                           embedding_state=EmbeddingState.PENDING)
            for n in range(count)]
    return [row.pk for row in SnippetVersion.objects.bulk_create(rows)]


def test_a_worker_killed_mid_sweep_is_replaced_and_the_sweep_finishes_without_redoing_work(committed, broker):
    ids = _pending_versions(PENDING_VERSIONS)
    done = SnippetVersion.objects.filter(embedding_state=EmbeddingState.DONE)
    first = broker.start_worker("first", pool="solo")
    with schema_context(committed.schema_name):
        result = broker.sender.send_task("knowledge.embed_pending_sweep", queue=broker.queue)
    # Mid-task: the first batch (64 versions) is committed, the rest are still pending.
    _wait_until(lambda: done.count() > 0, seconds=240, what="the first embedded batch")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    killed_at = time.time()
    progress = done.count()
    assert 0 < progress < PENDING_VERSIONS, progress
    print(f"killed the solo worker with {progress}/{PENDING_VERSIONS} versions embedded")
    before_kill = dict(done.values_list("pk", "embedded_at"))

    broker.start_worker("second", pool="solo")
    # The message was never acknowledged: after the visibility timeout Redis hands it to the new worker.
    outcome = result.get(timeout=300)

    assert f"[{result.id}] received" in broker.log("first")
    assert f"[{result.id}] succeeded" not in broker.log("first")
    assert f"[{result.id}] received" in broker.log("second")
    assert outcome.get(committed.schema_name) == PENDING_VERSIONS - progress  # only what was left
    states = dict(SnippetVersion.objects.values_list("pk", "embedding_state"))
    assert sorted(states) == sorted(ids) and set(states.values()) == {EmbeddingState.DONE}
    # Versions embedded before the kill were not embedded again.
    assert dict(SnippetVersion.objects.filter(pk__in=before_kill).values_list("pk", "embedded_at")) == before_kill
    assert SnippetVersion.objects.filter(embedded_at__gt=killed_at_as_datetime(killed_at)).count() == (
        PENDING_VERSIONS - progress)
    assert SnippetVersion.objects.count() == PENDING_VERSIONS  # no duplicate rows


def killed_at_as_datetime(timestamp: float):
    import datetime as dt

    return dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)


def _long_guide(sections: int) -> bytes:
    parts = ["# Aria Spa house guide\n"]
    for n in range(sections):
        parts.append(f"\n## Room {n}\n\nRoom {n} has a heated table, two fresh robes and slippers for every guest. "
                     f"Therapists restock oils from the cupboard on the left before each of the {n % 9 + 3} "
                     f"daily sessions, and the room is aired for ten minutes between guests. Guests who need a "
                     f"quieter space can ask for room {(n + 3) % sections}, which faces the garden. The lights "
                     f"dim automatically at {n % 4 + 6} in the evening, and the door code changes weekly.\n")
    return "".join(parts).encode()


def test_a_pool_child_killed_mid_ingest_is_requeued_and_leaves_exactly_one_set_of_chunks(committed, broker):
    from knowledge.collections.models import Chunk, Document, DocumentFormat
    from knowledge.collections.services import collection_create

    collection = collection_create(name="house-guide")
    data = _long_guide(260)
    document = Document.objects.create(collection=collection, filename="guide.md", title="guide",
                                       format=DocumentFormat.MARKDOWN, size=len(data),
                                       sha256=hashlib.sha256(data).hexdigest(), content=data)
    worker = broker.start_worker("prefork", pool="prefork")
    with schema_context(committed.schema_name):
        result = broker.sender.send_task("knowledge.collections.ingest_document", args=[document.pk],
                                         queue=broker.queue)
    row = Document.objects.filter(pk=document.pk)
    # Mid-task: chunks are being embedded (some batches stored, more to go).
    _wait_until(lambda: row.filter(status="processing", chunks_done__gt=0).exists(), seconds=240,
                what="ingestion to be half-way")
    children = psutil.Process(worker.pid).children()
    assert len(children) == 1
    half = row.values_list("chunks_done", "chunks_total").get()
    os.kill(children[0].pid, signal.SIGKILL)
    assert half[0] < half[1], half
    print(f"killed the pool child with {half[0]}/{half[1]} chunks embedded")

    outcome = result.get(timeout=300)

    log = broker.log("prefork")
    assert "exited with 'signal 9 (SIGKILL)'" in log, log[-3000:]
    assert worker.poll() is None  # the worker survived its child
    document.refresh_from_db()
    total = document.chunks_total
    assert outcome == {"outcome": "indexed", "document_id": document.pk, "chunks": total, "error": ""}
    assert (document.status, document.chunks_done, document.attempts) == ("done", total, 2)
    chunks = Chunk.objects.filter(document=document)
    assert chunks.count() == total and chunks.filter(is_live=True).count() == total  # no leftover build
    assert sorted(chunks.values_list("ordinal", flat=True)) == list(range(total))  # no duplicates, none missing
    assert not chunks.filter(embedding__isnull=True).exists()
    assert total > half[0]
