"""Platform writes: tenants, domains and API keys."""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django_tenants.utils import schema_context

from knowledge.audit import audit_record
from knowledge.models import AuditAction, AuditSubject
from ratiba.models import ApiKey, Domain, KeyScope, Tenant

SCHEMA_RE = re.compile(r"^[a-z][a-z0-9_]{1,62}$")
RESERVED_SCHEMAS = {"public", "information_schema", "pg_catalog", "pg_toast"}
KEY_PREFIX = "rk_"


class PlatformError(ValueError):
    """A request the platform cannot carry out, with a message for the operator."""


@dataclass(frozen=True)
class OwnerInvite:
    """An owner's login in their business's schema and the one-time link that sets its password."""

    username: str
    email: str
    created: bool
    set_password_url: str


@dataclass(frozen=True)
class IssuedKey:
    """A freshly issued key: `raw` is shown once and never stored."""

    api_key: ApiKey
    raw: str


def check_schema_name(schema: str) -> None:
    if not SCHEMA_RE.match(schema) or schema in RESERVED_SCHEMAS or schema.startswith("pg_"):
        raise PlatformError(
            f"Invalid schema name {schema!r}: use 2-63 lowercase letters, digits or underscores, starting with a letter."
        )


def tenant_create(*, schema: str, name: str, domain: str, timezone_name: str = "UTC",
                  languages: list[str] | None = None, currency: str = "KES") -> tuple[Tenant, bool]:
    """Create a tenant with its schema and primary domain; return (tenant, created). Idempotent."""
    check_schema_name(schema)
    domain = domain.strip().lower()
    existing = Tenant.objects.filter(schema_name=schema).first()
    if existing is not None:
        owner = Domain.objects.filter(domain=domain).exclude(tenant=existing).first()
        if owner is not None:
            raise PlatformError(f"Domain {domain!r} already belongs to tenant {owner.tenant.schema_name!r}.")
        Domain.objects.get_or_create(domain=domain, tenant=existing, defaults={"is_primary": not existing.domains.exists()})
        return existing, False
    if Domain.objects.filter(domain=domain).exists():
        raise PlatformError(f"Domain {domain!r} already belongs to another tenant.")
    tenant = Tenant(schema_name=schema, name=name, timezone=timezone_name, languages=languages or ["en"],
                    currency=currency)
    tenant.save()  # creates the schema and runs the tenant migrations
    Domain.objects.create(domain=domain, tenant=tenant, is_primary=True)
    alias = host_safe_domain(domain)
    if alias != domain and not Domain.objects.filter(domain=alias).exists():
        # Browsers and Django reject "_" in a Host header (aria_spa.localhost): serve a hyphenated alias too.
        Domain.objects.create(domain=alias, tenant=tenant, is_primary=False)
    return tenant, True


def tenant_profile_update(*, tenant: Tenant, name: str, timezone_name: str, languages: list[str],
                          currency: str) -> list[str]:
    """Set a tenant's profile (name, time zone, languages, currency); return the fields that changed."""
    wanted = {"name": name, "timezone": timezone_name, "languages": list(languages), "currency": currency}
    changed = [field for field, value in wanted.items() if getattr(tenant, field) != value]
    for field in changed:
        setattr(tenant, field, wanted[field])
    if changed:
        tenant.save(update_fields=changed)
    return changed


def tenant_owner_invite(*, tenant: Tenant, email: str) -> OwnerInvite:
    """Create (or find) the owner's login in the tenant's schema and return a one-time set-password link.

    Nobody knows the login's password until the link is used; the link is Django's password-reset token, so
    it stops working once a password is set (or after PASSWORD_RESET_TIMEOUT). Re-running gives a fresh link.
    """
    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise PlatformError(f"{email!r} is not a valid e-mail address.") from None
    if tenant.schema_name == "public":
        raise PlatformError("Owners belong to a business, not to the public schema.")
    User = get_user_model()
    with schema_context(tenant.schema_name), transaction.atomic():
        user = User.objects.filter(email__iexact=email).order_by("pk").first()
        created = user is None
        if created:
            # Superuser of their own schema only: every schema has its own users (django-tenants).
            user = User(username=email[:150], email=email, is_staff=True, is_superuser=True)
            # A random password nobody knows rather than an unusable one: Django's reset-by-email skips
            # users without a usable password, and an owner whose link expired must still get in.
            user.set_password(secrets.token_urlsafe(32))
            user.save()
        token = default_token_generator.make_token(user)
        uid = urlsafe_base64_encode(force_bytes(user.pk))
    primary = tenant.get_primary_domain()
    base = settings.TENANT_LINK_BASE.format(domain=host_safe_domain(primary.domain if primary else ""))
    path = reverse("password_reset_confirm", urlconf=settings.ROOT_URLCONF, kwargs={"uidb64": uid, "token": token})
    return OwnerInvite(username=user.get_username(), email=email, created=created,
                       set_password_url=f"{base.rstrip('/')}{path}")


def host_safe_domain(domain: str) -> str:
    """The domain with underscores (invalid in host names) replaced by hyphens."""
    return domain.replace("_", "-")


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _key_audit(api_key: ApiKey, *, action: str, user=None, actor: str | None = None,
               detail: dict | None = None) -> None:
    # The entry goes to the business's own audit log (its schema), in the transaction that changes the key.
    with schema_context(api_key.tenant.schema_name):
        audit_record(subject=AuditSubject.API_KEY, action=action, key=api_key.prefix, user=user, actor=actor,
                     detail=detail)


def api_key_issue(*, tenant: Tenant, label: str = "", scope: str = KeyScope.FULL, user=None,
                  actor: str | None = None) -> IssuedKey:
    """Issue a new key for a tenant; the raw key is returned once."""
    if scope not in KeyScope.values:
        raise PlatformError(f"Unknown key scope {scope!r}: use {' or '.join(KeyScope.values)}.")
    label = (label or "").strip()[:100]
    prefix = secrets.token_hex(6)
    raw = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        api_key = ApiKey.objects.create(tenant=tenant, label=label, scope=scope, prefix=prefix, key_hash=_digest(raw))
        _key_audit(api_key, action=AuditAction.ISSUED, user=user, actor=actor,
                   detail={"label": label, "scope": scope})
    return IssuedKey(api_key=api_key, raw=raw)


def api_key_relabel(*, api_key: ApiKey, label: str, user=None, actor: str | None = None) -> ApiKey:
    """Rename a key (its scope is fixed when issued)."""
    label = (label or "").strip()[:100]
    if label == api_key.label:
        return api_key
    with transaction.atomic():
        before = api_key.label
        api_key.label = label
        api_key.save(update_fields=["label"])
        _key_audit(api_key, action=AuditAction.CHANGED, user=user, actor=actor, detail={"label": [before, label]})
    return api_key


def api_key_revoke(*, api_key: ApiKey, user=None, actor: str | None = None) -> None:
    """Revoke a key; it stops working at once."""
    if api_key.revoked_at is not None:
        return
    with transaction.atomic():
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
        _key_audit(api_key, action=AuditAction.REVOKED, user=user, actor=actor,
                   detail={"label": api_key.label, "scope": api_key.scope})


def api_key_authenticate(*, raw: str, tenant: Tenant) -> ApiKey | None:
    """Return the active key of `tenant` matching `raw`, or None."""
    match = re.match(rf"^{KEY_PREFIX}([0-9a-f]{{12}})_[A-Za-z0-9_\-]{{20,80}}$", raw or "")
    if not match:
        return None
    api_key = ApiKey.objects.filter(prefix=match.group(1), revoked_at__isnull=True).first()
    # Digest compared in constant time; a key of another tenant is the same as no key.
    if api_key is None or not hmac.compare_digest(api_key.key_hash, _digest(raw)):
        return None
    if api_key.tenant_id != tenant.pk:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
        # Throttled so a busy key does not write on every request.
        with transaction.atomic():
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key


def tenant_delete(*, tenant: Tenant) -> None:
    """Delete a business completely: its schema with every table, then its keys, domains and row."""
    from django.db import connection

    if tenant.schema_name == "public":
        raise PlatformError("The public schema cannot be deleted.")
    check_schema_name(tenant.schema_name)
    connection.set_schema_to_public()
    # Dropped first and on its own: dropping inside the ORM's cascade transaction trips
    # Postgres' "pending trigger events" on the tenant's tables.
    with connection.cursor() as cursor:
        cursor.execute(f'DROP SCHEMA IF EXISTS "{tenant.schema_name}" CASCADE')
    with transaction.atomic():
        ApiKey.objects.filter(tenant=tenant).delete()
        Domain.objects.filter(tenant=tenant).delete()
        Tenant.objects.filter(pk=tenant.pk).delete()


TENANT_APP_LABELS = ("knowledge", "conversations", "telemetry", "channels")
# Derived or secret columns left out of an export: vectors are rebuilt by `reembed`.
EXPORT_EXCLUDED_FIELDS = {"embedding", "title_embedding", "search_vector", "title_search", "password"}


def tenant_export(*, tenant: Tenant) -> dict:
    """Every row of the tenant's own tables, as plain JSON-able dicts keyed by model label."""
    from django.apps import apps
    from django.contrib.auth import get_user_model
    from django_tenants.utils import schema_context

    models = [get_user_model()]
    for label in TENANT_APP_LABELS:
        models += list(apps.get_app_config(label).get_models())
    tables: dict[str, list[dict]] = {}
    with schema_context(tenant.schema_name):
        for model in models:
            fields = [f.attname for f in model._meta.concrete_fields if f.name not in EXPORT_EXCLUDED_FIELDS]
            tables[model._meta.label] = list(model.objects.order_by("pk").values(*fields))
    return {"tenant": {"schema": tenant.schema_name, "name": tenant.name, "timezone": tenant.timezone,
                       "domains": [d.domain for d in tenant.domains.all()]},
            "tables": tables}
