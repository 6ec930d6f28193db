"""A real task through the Redis broker to a real worker, running in the sender's tenant schema."""
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
from django_tenants.utils import schema_context

from knowledge.models import Snippet
from tenant_schemas_celery.app import CeleryApp

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
ROOT = Path(settings.BASE_DIR)


@pytest.fixture
def redis_worker(tenants):
    """Start `celery worker` on a private queue against the test database; stop it after."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:  # in CI Redis runs: this must fail, not skip
        pytest.fail(f"Redis is required at {REDIS_URL}: {exc}")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, CELERY_BROKER_URL=REDIS_URL, CELERY_RESULT_BACKEND=REDIS_URL,
               RATIBA_DB_NAME=connection.settings_dict["NAME"], DJANGO_SETTINGS_MODULE="ratiba.settings")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ratiba", "worker", "-Q", queue, "--pool", "solo",
         "--concurrency", "1", "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    # A sender app of the same tenant-aware class, pointed at Redis (the suite's own app runs eagerly).
    sender = CeleryApp("sender", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    try:
        yield sender, queue
    finally:
        sender.close()
        worker.terminate()
        try:
            output = worker.communicate(timeout=10)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            worker.kill()
            output = ""
        if os.environ.get("SHOW_WORKER_LOG"):
            print(output)


def test_a_task_sent_in_a_tenant_runs_in_that_schema_on_a_real_worker(redis_worker, tenants, django_db_blocker):
    first, second = tenants
    sender, queue = redis_worker
    with django_db_blocker.unblock():
        with schema_context(first.schema_name):
            Snippet.objects.create(key="worker-probe")
        try:
            started = time.monotonic()
            with schema_context(first.schema_name):
                in_first = sender.send_task("ratiba.tenant_probe", queue=queue).get(timeout=60)
            with schema_context(second.schema_name):
                in_second = sender.send_task("ratiba.tenant_probe", queue=queue).get(timeout=30)
        finally:
            with schema_context(first.schema_name):
                Snippet.objects.filter(key="worker-probe").delete()
    assert in_first == {"schema": first.schema_name, "snippets": 1}
    assert in_second == {"schema": second.schema_name, "snippets": 0}
    assert time.monotonic() - started < 90
