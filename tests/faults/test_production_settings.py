"""Production settings (DEBUG=0) behind a TLS-terminating proxy: secure, HTTP-only cookies, HSTS, CSRF, and a
redirect to https unless the proxy says the request came over TLS (X-Forwarded-Proto). Checked in a fresh
process (settings are read once) against the test database, through real requests."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings
from django.db import connection

PROBE = r"""
import json, django
django.setup()
from django.conf import settings as s
from django.test import Client

host = "tenant.test.localhost"
plain = Client(HTTP_HOST=host).get("/healthz")
proxied = Client(HTTP_HOST=host, HTTP_X_FORWARDED_PROTO="https")
health = proxied.get("/healthz")
login = proxied.get("/admin/login/")
csrf = login.cookies.get("csrftoken")
checked = Client(HTTP_HOST=host, HTTP_X_FORWARDED_PROTO="https", enforce_csrf_checks=True)
forged = checked.post("/admin/login/", {"username": "x", "password": "y"})
print(json.dumps({
    "settings": {name: getattr(s, name) for name in (
        "DEBUG", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER",
        "SECURE_CONTENT_TYPE_NOSNIFF", "X_FRAME_OPTIONS")},
    "csrf_middleware": "django.middleware.csrf.CsrfViewMiddleware" in s.MIDDLEWARE,
    "plain": [plain.status_code, plain.headers.get("Location")],
    "health": [health.status_code, health.headers.get("Strict-Transport-Security")],
    "login_headers": [login.headers.get("X-Frame-Options"), login.headers.get("X-Content-Type-Options")],
    "csrf_cookie": {"secure": bool(csrf and csrf["secure"]), "samesite": csrf["samesite"] if csrf else None},
    "forged_login": forged.status_code,
}))
"""


def test_production_settings_secure_cookies_hsts_and_https_redirect_behind_the_proxy(tenants):
    env = dict(os.environ, DEBUG="0", SECRET_KEY="p" * 64 + "-production-like-secret",
               ALLOWED_HOSTS=".localhost", RATIBA_DB_NAME=connection.settings_dict["NAME"],
               DJANGO_SETTINGS_MODULE="ratiba.settings", LOG_LEVEL="WARNING")
    for name in ("SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "DATABASE_URL"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=settings.BASE_DIR, env=env, capture_output=True,
                            text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["settings"] == {
        "DEBUG": False, "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_SSL_REDIRECT": True, "SECURE_HSTS_SECONDS": 31_536_000, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True, "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_CONTENT_TYPE_NOSNIFF": True, "X_FRAME_OPTIONS": "DENY"}
    assert probe["csrf_middleware"] is True
    # Plain http (no proxy header) is sent to https; through the TLS proxy the page is served with HSTS.
    assert probe["plain"] == [301, "https://tenant.test.localhost/healthz"]
    assert probe["health"] == [200, "max-age=31536000; includeSubDomains; preload"]
    assert probe["login_headers"] == ["DENY", "nosniff"]
    assert probe["csrf_cookie"] == {"secure": True, "samesite": "Lax"}
    assert probe["forged_login"] == 403  # a POST without the CSRF token is refused
