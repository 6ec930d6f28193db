"""Ingestion through the Redis broker on a real Celery worker, in the sender's tenant schema."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from tenant_schemas_celery.app import CeleryApp

from collection_docs import price_list_pdf
from knowledge.collections.models import Chunk, Document, DocumentFormat
from knowledge.collections.services import collection_create

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.mark.redis
def test_a_worker_ingests_an_uploaded_document_in_the_tenant_schema(committed):
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:  # in CI Redis runs: this must fail, not skip
        pytest.fail(f"Redis is required at {REDIS_URL}: {exc}")
    collection = collection_create(name="prices")
    data = price_list_pdf(pages=3)
    # Stored as an upload would be, without the inline (eager) ingestion the suite's own app does.
    document = Document.objects.create(collection=collection, filename="prices.pdf", title="prices",
                                       format=DocumentFormat.PDF, size=len(data), sha256="f" * 64, content=data)
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, CELERY_BROKER_URL=REDIS_URL, CELERY_RESULT_BACKEND=REDIS_URL,
               RATIBA_DB_NAME=connection.settings_dict["NAME"], DJANGO_SETTINGS_MODULE="ratiba.settings")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ratiba", "worker", "-Q", queue, "--pool", "solo",
         "--concurrency", "1", "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=Path(settings.BASE_DIR), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sender = CeleryApp("collections-sender", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    try:
        started = time.monotonic()
        first = sender.send_task("knowledge.collections.ingest_document", args=[document.pk],
                                 queue=queue).get(timeout=120)
        # A redelivered message (acks late) finds the document indexed and changes nothing.
        again = sender.send_task("knowledge.collections.ingest_document", args=[document.pk],
                                 queue=queue).get(timeout=60)
    finally:
        sender.close()
        worker.terminate()
        try:
            worker.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
    document.refresh_from_db()
    assert first == {"outcome": "indexed", "document_id": document.pk, "chunks": 3, "error": ""}
    assert again == {"outcome": "unchanged", "document_id": document.pk, "chunks": 3, "error": ""}
    assert (document.status, document.chunks_done, document.title) == ("done", 3, "Aria Spa Price List 2026")
    assert Chunk.objects.filter(document=document, is_live=True).count() == 3
    assert time.monotonic() - started < 150
