"""Deployment files: docker-compose wiring and production settings."""
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_deployment_services_with_the_right_images_and_commands():
    services = _compose()["services"]
    assert {"db", "redis", "web", "worker", "beat", "migrate"} <= set(services)
    assert services["db"]["image"].startswith("pgvector/pgvector:pg16")
    assert services["redis"]["image"].startswith("redis:")
    assert services["web"]["command"][0] == "gunicorn" and "ratiba.wsgi:application" in services["web"]["command"]
    assert services["worker"]["command"][:4] == ["celery", "-A", "ratiba", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "ratiba", "beat"]


def test_compose_app_environment_names_are_settings_the_app_reads():
    services = _compose()["services"]
    settings_source = (ROOT / "ratiba" / "settings.py").read_text()
    read_names = set(re.findall(r'env_(?:str|bool|int|float|list)\("([A-Z_]+)"', settings_source))
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert set(env) <= read_names, set(env) - read_names
        assert env["DATABASE_URL"].startswith("postgres://") and "@db:5432/" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        assert env["DEBUG"] == "0"


def test_compose_app_services_wait_for_a_healthy_database():
    services = _compose()["services"]
    assert "healthcheck" in services["db"]
    for name in ("web", "worker", "beat", "migrate"):
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"


def test_check_deploy_is_clean_with_production_settings():
    env = dict(os.environ, DEBUG="0", SECRET_KEY="x" * 64 + "-production-like-secret-key",
               ALLOWED_HOSTS=".example.com", DATABASE_URL="postgres://u:p@127.0.0.1:1/none")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env.update(DEBUG="0", DATABASE_URL="postgres://u:p@127.0.0.1:1/none")
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
