"""The database restarts under a running web server: requests fail fast with 503, then recover by themselves."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(args, env, timeout=180):
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture
def private_server(tmp_path_factory):
    """A web server on its own embedded PostgreSQL, so stopping that database disturbs nothing else."""
    data_dir = Path("/tmp") / f"ratiba-restart-{os.getpid()}"  # short path: unix socket names are limited
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(RATIBA_PGDATA=str(data_dir), RATIBA_DB_NAME="restart", DB_CONN_MAX_AGE="600")
    _run(["manage.py", "migrate_schemas", "--shared", "--noinput", "-v", "0"], env)
    _run(["manage.py", "add_tenant", "shop", "--name", "Shop", "--domain", "shop.localhost"], env)
    port = _free_port()
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "ratiba.wsgi:application", "--bind",
                            f"127.0.0.1:{port}", "--workers", "1", "--timeout", "30"],
                           cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield port, env
    finally:
        web.terminate()
        web.wait(timeout=10)
        _run(["-c", "from ratiba.embedded_db import stop_server; stop_server()"], env)
        subprocess.run(["rm", "-rf", str(data_dir)], check=False)


def _get(port: int) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}/healthz", headers={"Host": "shop.localhost"}, timeout=10)


def _wait_for(port: int, status: int, seconds: float = 30) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while True:
        try:
            response = _get(port)
            if response.status_code == status:
                return response
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no {status} within {seconds}s")
        time.sleep(0.2)


def test_requests_fail_fast_with_503_while_the_database_is_down_and_recover_after(private_server):
    port, env = private_server
    assert _wait_for(port, 200).json() == {"status": "ok", "schema": "shop"}

    _run(["-c", "from ratiba.embedded_db import stop_server; assert stop_server()"], env)
    started = time.monotonic()
    down = _get(port)
    assert down.status_code == 503
    assert time.monotonic() - started < 5
    assert down.json()["error"]["code"] == "unavailable"
    assert down.headers["Retry-After"] == "2"

    _run(["-c", "from ratiba.embedded_db import ensure_server; ensure_server()"], env)
    # Same gunicorn worker, no restart: Django's connection health check reconnects.
    assert _wait_for(port, 200, seconds=20).json()["schema"] == "shop"
