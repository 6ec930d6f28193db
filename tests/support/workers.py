"""A real Celery worker in its own process group, for tests that need one (warm-up, worker kills)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def worker_start(*, queue: str, env: dict, log, pool: str = "prefork", name: str | None = None) -> subprocess.Popen:
    """`celery -A ratiba worker` on `queue` with one child, its output written to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ratiba", "worker", "-Q", queue, "--pool", pool,
         "--concurrency", "1", "-l", "info", *(["-n", f"{name}@%h"] if name else []), "--without-gossip",
         "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def worker_stop(worker: subprocess.Popen, *, grace: float) -> None:
    """SIGTERM the worker's process group, SIGKILL it if it is still there after `grace` seconds."""
    if worker.poll() is not None:
        return
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
