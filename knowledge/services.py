"""Knowledge writes: versioned snippets (create, activate, roll back, deactivate), embeddings and structured facts.

Every write that the admin, the REST API and `seed_knowledge` make goes through these functions.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any, Iterable

import pycountry
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from knowledge.models import (
    Category,
    Channel,
    EmbeddingState,
    OpeningHours,
    Role,
    Service,
    AuditAction,
    AuditEntry,
    AuditSubject,
    SmokeTest,
    Snippet,
    SnippetVersion,
    SpecialDay,
    SpecialHours,
    Status,
    Weekday,
    all_channels,
)
from knowledge.audit import audit_record, field_changes, is_user
from knowledge.tokens import token_estimate
from ratiba.errors import DomainError

logger = logging.getLogger(__name__)

KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
GATED_ROLES = frozenset({Role.GUARDRAIL, Role.BEHAVIOUR})
REVIEW_PERMISSION = "knowledge.review_snippetversion"
# The fields that make up a version's content: two versions with equal values here are the same text.
CONTENT_FIELDS = ("title", "body", "category", "role", "language", "channels", "tags", "status", "related_keys",
                  "notes", "valid_from", "valid_until", "last_reviewed_at", "translations")
TRANSLATION_LANGUAGES = ("sw",)  # the languages customers are answered in besides the snippet's own
EMBED_BATCH_SIZE = 64
# A booked service may last longer than a day (a weekly car hire, a 3-day carpet clean at the workshop): up to a year.
MAX_SERVICE_MINUTES = 365 * 24 * 60


class KnowledgeError(DomainError):
    """A knowledge write that cannot be carried out; `code` is machine-readable."""

    code = "knowledge_error"


class ReviewRequired(KnowledgeError):
    """The release gate: a guardrail or behaviour version needs a second person with review permission."""

    status = 403
    code = "review_required"


class SnippetNotFound(KnowledgeError):
    status = 404
    code = "not_found"


class SnippetExists(KnowledgeError):
    """A new key that another snippet already has."""

    status = 409
    code = "snippet_exists"


class ServiceExists(KnowledgeError):
    """A new service named like one that exists."""

    status = 409
    code = "service_exists"



# ----------------------------------------------------------------------------- validation helpers

def _as_date(value: Any, field: str) -> dt.date | None:
    if value in (None, ""):
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise ValidationError({field: [f"Enter a date as YYYY-MM-DD, not {value!r}."]}) from None


def _as_str_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValidationError({field: ["Enter a list of strings."]})
    items = []
    for item in value:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            # YAML reads a bare number ("tags: [360, photo booth]") as a number; the owner meant its text.
            item = str(item)
        if not isinstance(item, str) or not item.strip():
            raise ValidationError({field: [f"Every item must be a non-empty string, not {item!r}."]})
        if item.strip() not in items:
            items.append(item.strip())
    return items


def snippet_key_check(*, key: Any) -> str:
    """Return `key` if it is a valid snippet key, else raise ValidationError."""
    if not isinstance(key, str) or not KEY_RE.match(key):
        raise ValidationError({"key": [f"Invalid key {key!r}: use 1-100 lowercase letters, digits, '_' or '-'."]})
    return key


def snippet_content_clean(*, title: Any, body: Any, category: Any, role: Any, language: Any = "en",
                          channels: Any = None, tags: Any = None, status: Any = Status.ACCEPTED,
                          related_keys: Any = None, notes: Any = "", valid_from: Any = None,
                          valid_until: Any = None, last_reviewed_at: Any = None,
                          translations: Any = None) -> dict[str, Any]:
    """Validate and normalise a version's content; raise ValidationError naming every bad field."""
    errors: dict[str, list[str]] = {}
    clean: dict[str, Any] = {}

    def check(field: str, func):
        try:
            clean[field] = func()
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                errors.setdefault(name, []).extend(messages)

    def text(field: str, value: Any, max_length: int | None, required: bool) -> str:
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ValidationError({field: ["Enter text."]})
        value = value.strip()
        if required and not value:
            raise ValidationError({field: ["This field is required."]})
        if max_length and len(value) > max_length:
            raise ValidationError({field: [f"At most {max_length} characters (got {len(value)})."]})
        return value

    def choice(field: str, value: Any, choices) -> str:
        allowed = [c.value for c in choices]
        if value not in allowed:
            raise ValidationError({field: [f"Unknown {field} {value!r}: expected one of {', '.join(allowed)}."]})
        return str(value)

    def channel_list() -> list[str]:
        items = all_channels() if channels is None else _as_str_list(channels, "channels")
        allowed = [c.value for c in Channel]
        unknown = [item for item in items if item not in allowed]
        if unknown:
            raise ValidationError({"channels": [f"Unknown channel(s) {', '.join(unknown)}: expected {', '.join(allowed)}."]})
        if not items:
            raise ValidationError({"channels": ["Choose at least one channel."]})
        return items

    def related() -> list[str]:
        items = _as_str_list(related_keys, "related_keys")
        bad = [item for item in items if not KEY_RE.match(item)]
        if bad:
            raise ValidationError({"related_keys": [f"Invalid key(s): {', '.join(bad)}."]})
        return items

    def language_code() -> str:
        value = text("language", language or "en", 8, True).lower()
        if not re.match(r"^[a-z]{2,3}(-[a-z0-9]{2,4})?$", value):
            raise ValidationError({"language": [f"Invalid language code {value!r} (for example en, sw)."]})
        return value

    check("title", lambda: text("title", title, 200, True))
    check("body", lambda: text("body", body, 20_000, True))
    check("category", lambda: choice("category", category, Category))
    check("role", lambda: choice("role", role, Role))
    check("language", language_code)
    check("channels", channel_list)
    check("tags", lambda: [tag.lower() for tag in _as_str_list(tags, "tags")])
    check("status", lambda: choice("status", status, Status))
    check("related_keys", related)
    check("notes", lambda: text("notes", notes, None, False))
    check("valid_from", lambda: _as_date(valid_from, "valid_from"))
    check("valid_until", lambda: _as_date(valid_until, "valid_until"))
    check("last_reviewed_at", lambda: _as_date(last_reviewed_at, "last_reviewed_at"))
    check("translations", lambda: _translations_clean(translations))
    if not errors and clean["valid_from"] and clean["valid_until"] and clean["valid_until"] < clean["valid_from"]:
        errors["valid_until"] = ["Must be on or after valid_from."]
    if any(len(tag) > 50 for tag in clean.get("tags", [])):
        errors["tags"] = ["Each tag has at most 50 characters."]
    if errors:
        raise ValidationError(errors)
    return clean


def _content_of(version: SnippetVersion) -> dict[str, Any]:
    return {field: getattr(version, field) for field in CONTENT_FIELDS}


def _translations_clean(value: Any) -> dict[str, dict[str, str]]:
    """{"sw": {"title": ..., "body": ...}}: a body is required, the title may be left to the original."""
    if value in (None, "", {}):
        return {}
    if not isinstance(value, dict):
        raise ValidationError({"translations": ['Enter an object such as {"sw": {"title": "...", "body": "..."}}.']})
    clean: dict[str, dict[str, str]] = {}
    for language, item in value.items():
        if language not in TRANSLATION_LANGUAGES:
            raise ValidationError({"translations": [f"Unsupported language {language!r}: expected "
                                                    f"{', '.join(TRANSLATION_LANGUAGES)}."]})
        if item in (None, "", {}):
            continue  # an emptied translation is removed
        if not isinstance(item, dict) or set(item) - {"title", "body"}:
            raise ValidationError({"translations": [f"{language}: expected title and body only."]})
        title, body = item.get("title") or "", item.get("body") or ""
        if not isinstance(title, str) or not isinstance(body, str):
            raise ValidationError({"translations": [f"{language}: title and body must be text."]})
        if not body.strip():
            if title.strip():
                raise ValidationError({"translations": [f"{language}: a translated title needs a translated body."]})
            continue
        if len(title.strip()) > 200 or len(body.strip()) > 20_000:
            raise ValidationError({"translations": [f"{language}: at most 200 characters of title and 20,000 "
                                                    "of body."]})
        clean[language] = {"title": title.strip(), "body": body.strip()}
    return clean


# ----------------------------------------------------------------------------- release gate

def snippet_version_can_activate(*, version: SnippetVersion, user=None) -> tuple[bool, str]:
    """Whether `user` may make `version` live, and if not, why (the release gate for guardrail/behaviour)."""
    if version.role not in GATED_ROLES:
        return True, ""
    if user is None or not getattr(user, "is_authenticated", False) or not hasattr(user, "has_perm"):
        return False, (f"{version.get_role_display()} versions change every answer: a reviewer with the "
                       "review permission must release them in the admin.")
    if not user.has_perm(REVIEW_PERMISSION):
        return False, "You need the 'Can review and release guardrail/behaviour versions' permission."
    if version.created_by_id is not None and version.created_by_id == user.pk:
        return False, "A second person must release this version: its author cannot approve their own change."
    return True, ""


# ----------------------------------------------------------------------------- snippets

def _locked_snippet(snippet_id: int) -> Snippet:
    # Every write to one key's versions locks its Snippet row: version numbers and the active flag
    # then change one transaction at a time.
    return Snippet.objects.select_for_update().get(pk=snippet_id)


def _activate_locked(*, version: SnippetVersion, user=None, actor: str | None = None) -> SnippetVersion:
    now = timezone.now()
    others = SnippetVersion.objects.filter(snippet_id=version.snippet_id, is_active=True).exclude(pk=version.pk)
    previous = list(others.values_list("version", flat=True))
    # Deactivate first: the partial unique index is checked per statement, not at commit.
    others.update(is_active=False, updated_at=now)
    version.is_active = True
    version.activated_at = now
    version.activated_by = user if getattr(user, "pk", None) and hasattr(user, "has_perm") else None
    version.save(update_fields=["is_active", "activated_at", "activated_by", "updated_at"])
    _audit(action=AuditAction.ACTIVATED, key=version.key, version=version.version, user=user, actor=actor,
           detail={"previous_active": previous[0] if previous else None})
    return version


def _audit(*, action: str, key: str, version: int | None, user=None, actor: str | None = None,
           detail: dict | None = None) -> AuditEntry:
    # Called inside the transaction that makes the change: the entry and the change commit (or not) together.
    return audit_record(subject=AuditSubject.SNIPPET, action=action, key=key, version=version, user=user,
                        actor=actor, detail=detail)


def _publish_embedding(version_id: int) -> None:
    from knowledge.tasks import embed_snippet_version

    try:
        embed_snippet_version.delay(version_id)
    except Exception as exc:  # noqa: BLE001 — a broker outage must never lose the saved version
        # The version stays pending; `embed_pending_sweep` embeds it when the broker is back.
        logger.warning("embedding not queued for snippet version %s (left pending): %s", version_id, exc)


def snippet_version_queue_embedding(*, version_id: int) -> None:
    """Queue the embedding of a version once the current transaction commits (never fails the save)."""
    transaction.on_commit(partial(_publish_embedding, version_id), robust=True)


def snippet_version_create(*, key: str, title: str, body: str, category: str, role: str, language: str = "en",
                           channels: list[str] | None = None, tags: list[str] | None = None,
                           status: str = Status.ACCEPTED, related_keys: list[str] | None = None, notes: str = "",
                           valid_from: dt.date | None = None, valid_until: dt.date | None = None,
                           last_reviewed_at: dt.date | None = None, translations: dict | None = None,
                           created_by=None, activate: bool = True,
                           enforce_release_gate: bool = True, queue_embedding: bool = True,
                           check_related: bool = True, actor: str | None = None) -> SnippetVersion:
    """Save a new version of `key` (creating the key if new) and activate it unless the release gate blocks it.

    A gated version (guardrail/behaviour) whose author is `created_by` always stays inactive, awaiting review.
    `enforce_release_gate=False` is for operator commands (seed files are the reviewed artefact).
    `actor` names a caller that is not a user (an API key, a command) in the audit log.
    """
    snippet_key_check(key=key)
    content = snippet_content_clean(title=title, body=body, category=category, role=role, language=language,
                                    channels=channels, tags=tags, status=status, related_keys=related_keys,
                                    notes=notes, valid_from=valid_from, valid_until=valid_until,
                                    last_reviewed_at=last_reviewed_at, translations=translations)
    if key in content["related_keys"]:
        raise ValidationError({"related_keys": ["A snippet cannot be related to itself."]})
    if check_related and content["related_keys"]:
        known = set(Snippet.objects.filter(key__in=content["related_keys"]).values_list("key", flat=True))
        dangling = [item for item in content["related_keys"] if item not in known]
        if dangling:
            raise ValidationError({"related_keys": [f"Unknown snippet key(s): {', '.join(dangling)}."]})
    with transaction.atomic():
        # Insert-if-missing then lock: race-free without get_or_create's savepoints (seeds make many of these).
        Snippet.objects.bulk_create([Snippet(key=key)], ignore_conflicts=True)
        snippet = Snippet.objects.select_for_update().get(key=key)
        last = snippet.versions.order_by("-version").values_list("version", flat=True).first() or 0
        version = SnippetVersion(
            snippet=snippet, key=key, version=last + 1,
            token_count=token_estimate(f"{content['title']}\n{content['body']}"),
            embedding_state=EmbeddingState.PENDING, created_by=created_by if is_user(created_by) else None,
            **content,
        )
        allowed = False
        if activate:
            allowed, _reason = (snippet_version_can_activate(version=version, user=created_by)
                                if enforce_release_gate else (True, ""))
        if allowed and last == 0:
            # The key's first version: nothing else can be active, so it is inserted live in one statement.
            version.is_active = True
            version.activated_at = timezone.now()
            version.activated_by = created_by if is_user(created_by) else None
        version.save(force_insert=True)
        _audit(action=AuditAction.CREATED, key=key, version=version.version, user=created_by, actor=actor)
        if allowed and last == 0:
            _audit(action=AuditAction.ACTIVATED, key=key, version=version.version, user=created_by, actor=actor,
                   detail={"previous_active": None})
        if allowed and last > 0:
            _activate_locked(version=version, user=created_by, actor=actor)
        if queue_embedding:
            snippet_version_queue_embedding(version_id=version.pk)
    return version


def snippet_create(*, key: str, created_by=None, actor: str | None = None, **content: Any) -> SnippetVersion:
    """Create a new key with its version 1 (`content`: snippet_version_create's); raise SnippetExists if taken.

    The key's unique index refuses the second of two concurrent creates inside the transaction: a look
    before the insert would let both through, the second silently saving version 2.
    """
    snippet_key_check(key=key)
    with transaction.atomic():
        try:
            with transaction.atomic():  # a savepoint: the refused insert leaves the outer transaction usable
                Snippet.objects.create(key=key)
        except IntegrityError:
            raise SnippetExists("A snippet with this key already exists: PATCH it to save a new version.") from None
        return snippet_version_create(key=key, created_by=created_by, actor=actor, **content)


def snippet_edit(*, key: str, changes: dict[str, Any], created_by=None, activate: bool = True,
                 enforce_release_gate: bool = True, actor: str | None = None) -> SnippetVersion:
    """Save a new version of `key` = its active (else latest) version with `changes` applied; no-op if unchanged."""
    unknown = sorted(set(changes) - set(CONTENT_FIELDS))
    if unknown:
        raise ValidationError({name: ["This field cannot be edited."] for name in unknown})
    base = snippet_version_current(key=key)
    content = _content_of(base)
    merged = {**content, **changes}
    cleaned = snippet_content_clean(**merged)
    if cleaned == snippet_content_clean(**content):
        return base
    return snippet_version_create(key=key, **cleaned, created_by=created_by, activate=activate,
                                  enforce_release_gate=enforce_release_gate, actor=actor)


def snippet_version_current(*, key: str) -> SnippetVersion:
    """The active version of `key`, else its latest; raise SnippetNotFound."""
    version = (SnippetVersion.objects.filter(key=key).order_by("-is_active", "-version").first())
    if version is None:
        raise SnippetNotFound(f"No snippet with key {key!r}.")
    return version


def snippet_version_activate(*, version: SnippetVersion, user=None, enforce_release_gate: bool = True,
                             actor: str | None = None) -> SnippetVersion:
    """Make `version` the one active version of its key, atomically; raise ReviewRequired if the gate blocks it."""
    with transaction.atomic():
        _locked_snippet(version.snippet_id)
        fresh = SnippetVersion.objects.select_related("snippet").get(pk=version.pk)
        if enforce_release_gate:
            allowed, reason = snippet_version_can_activate(version=fresh, user=user)
            if not allowed:
                raise ReviewRequired(reason)
        if fresh.is_active:
            return fresh
        return _activate_locked(version=fresh, user=user, actor=actor)


def snippet_rollback(*, key: str, to_version: int, user=None, enforce_release_gate: bool = True,
                     actor: str | None = None) -> SnippetVersion:
    """Roll `key` back to version `to_version`'s content as a NEW version, then try to activate it.

    History stays linear and auditable (docs/adr/0003): the new version records who rolled back and when,
    and reuses the old version's embedding. Guardrail/behaviour rollbacks pass the release gate like any
    other version, so the new version may come back inactive (awaiting a second reviewer): check `is_active`.
    """
    source = SnippetVersion.objects.filter(key=key, version=to_version).first()
    if source is None:
        raise SnippetNotFound(f"Snippet {key!r} has no version {to_version}.")
    content = _content_of(source)
    content["notes"] = f"Rollback to v{to_version}." + (f" {source.notes}" if source.notes else "")
    reuse_embedding = (source.embedding_state == EmbeddingState.DONE and source.embedding is not None
                       and source.title_embedding is not None)
    # One transaction: the new version, its audit entries and its activation commit together or not at all.
    with transaction.atomic():
        version = snippet_version_create(key=key, **content, created_by=user, activate=False,
                                         queue_embedding=not reuse_embedding, check_related=False, actor=actor)
        _audit(action=AuditAction.ROLLED_BACK, key=key, version=version.version, user=user, actor=actor,
               detail={"to_content_of": to_version})
        if reuse_embedding:
            SnippetVersion.objects.filter(pk=version.pk).update(
                embedding=source.embedding, title_embedding=source.title_embedding,
                embedding_state=EmbeddingState.DONE,
                embedding_model=source.embedding_model, embedded_at=timezone.now())
            version.refresh_from_db()
        allowed, _reason = (snippet_version_can_activate(version=version, user=user)
                            if enforce_release_gate else (True, ""))
        if allowed:
            version = snippet_version_activate(version=version, user=user, actor=actor,
                                               enforce_release_gate=enforce_release_gate)
    return version


def snippet_deactivate(*, key: str, user=None, actor: str | None = None) -> SnippetVersion | None:
    """Take `key` out of use (no active version); its versions are kept. Returns the version deactivated."""
    with transaction.atomic():
        snippet = Snippet.objects.filter(key=key).first()
        if snippet is None:
            raise SnippetNotFound(f"No snippet with key {key!r}.")
        _locked_snippet(snippet.pk)
        active = SnippetVersion.objects.filter(snippet=snippet, is_active=True).first()
        if active is not None:
            active.is_active = False
            active.save(update_fields=["is_active", "updated_at"])
            _audit(action=AuditAction.DEACTIVATED, key=key, version=active.version, user=user, actor=actor)
        return active


# ----------------------------------------------------------------------------- embeddings

def embedding_text(*, title: str, body: str) -> str:
    """The text a version is embedded from (title then body)."""
    return f"{title}\n\n{body}"


def snippet_versions_embed(*, version_ids: Iterable[int] | None = None, force: bool = False,
                           batch_size: int = EMBED_BATCH_SIZE) -> int:
    """Embed versions (all of the schema's if `version_ids` is None) in batches; skip ones already done
    with the current model unless `force`. Returns how many were embedded. Raises EmbeddingError."""
    from knowledge.embeddings import embed_texts, embedding_model_name

    model = embedding_model_name()
    queryset = SnippetVersion.objects.all()
    if version_ids is not None:
        queryset = queryset.filter(pk__in=list(version_ids))
    if not force:
        queryset = queryset.exclude(embedding_state=EmbeddingState.DONE, embedding_model=model)
    ids = list(queryset.order_by("pk").values_list("pk", flat=True))
    done = 0
    for start in range(0, len(ids), batch_size):
        rows = list(SnippetVersion.objects.filter(pk__in=ids[start:start + batch_size])
                    .only("pk", "title", "body").order_by("pk"))
        # One model call per batch for both vectors: the full text and the title alone.
        vectors = embed_texts([embedding_text(title=row.title, body=row.body) for row in rows]
                              + [row.title for row in rows])
        now = timezone.now()
        for row, vector, title_vector in zip(rows, vectors[:len(rows)], vectors[len(rows):], strict=True):
            row.embedding = vector
            row.title_embedding = title_vector
            row.embedding_state = EmbeddingState.DONE
            row.embedding_model = model
            row.embedded_at = now
        SnippetVersion.objects.bulk_update(rows, ["embedding", "title_embedding", "embedding_state", "embedding_model",
                                                  "embedded_at"])
        done += len(rows)
    return done


def snippet_version_embedding_failed(*, version_id: int) -> None:
    """Mark a version's embedding as failed (a permanent provider error); keyword search still finds it."""
    SnippetVersion.objects.filter(pk=version_id).update(embedding_state=EmbeddingState.FAILED)


# ----------------------------------------------------------------------------- structured facts

def currency_check(*, currency: Any) -> str:
    """Return the upper-cased ISO 4217 code, or raise ValidationError."""
    code = str(currency or "").strip().upper()
    if len(code) != 3 or pycountry.currencies.get(alpha_3=code) is None:
        raise ValidationError({"currency": [f"Unknown currency {currency!r}: use an ISO 4217 code such as KES."]})
    return code


def service_clean(*, name: Any, description: Any = "", duration_minutes: Any = None, price: Any,
                  currency: Any = "KES", is_active: Any = True) -> dict[str, Any]:
    """Validate a service's fields; raise ValidationError naming every bad field."""
    errors: dict[str, list[str]] = {}
    clean: dict[str, Any] = {}
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 200:
        errors["name"] = ["Enter a name of 1-200 characters."]
    else:
        clean["name"] = name.strip()
    clean["description"] = (description or "").strip() if isinstance(description, (str, type(None))) else ""
    if not isinstance(description, (str, type(None))):
        errors["description"] = ["Enter text."]
    if duration_minutes is None or (isinstance(duration_minutes, str) and not duration_minutes.strip()):
        clean["duration_minutes"] = None  # a product
    else:
        try:
            minutes = int(duration_minutes)
            if (isinstance(duration_minutes, bool) or str(minutes) != str(duration_minutes).strip()
                    or not 1 <= minutes <= MAX_SERVICE_MINUTES):
                raise ValueError
            clean["duration_minutes"] = minutes
        except (TypeError, ValueError):
            errors["duration_minutes"] = [f"Enter a whole number of minutes between 1 and {MAX_SERVICE_MINUTES} "
                                          "(a year), or leave it empty for a product."]
    try:
        amount = Decimal(str(price))
        if not amount.is_finite() or amount < 0 or amount != amount.quantize(Decimal("0.01")) or amount >= 10 ** 10:
            raise InvalidOperation
        clean["price"] = amount.quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        errors["price"] = [f"Enter a price of 0 or more with at most 2 decimals, not {price!r}."]
    try:
        clean["currency"] = currency_check(currency=currency)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if not isinstance(is_active, bool):
        errors["is_active"] = ["Enter true or false."]
    clean["is_active"] = bool(is_active)
    if errors:
        raise ValidationError(errors)
    return clean


def _service_insert(clean: dict[str, Any], *, position: int | None, user, actor: str | None) -> Service:
    # The name's unique index decides (in a savepoint), not a look-before that a concurrent insert would race.
    if position is None:
        position = (Service.objects.order_by("-position").values_list("position", flat=True).first() or 0) + 1
    try:
        with transaction.atomic():
            service = Service.objects.create(position=position, **clean)
    except IntegrityError:
        raise ServiceExists("A service with this name exists: PATCH it.") from None
    audit_record(subject=AuditSubject.SERVICE, action=AuditAction.CREATED, key=service.name, user=user,
                 actor=actor, detail=field_changes(before={}, after=clean))
    return service


def service_create(*, name: str, description: str = "", duration_minutes: int | None = None, price: Decimal | str,
                   currency: str = "KES", is_active: bool = True, user=None, actor: str | None = None) -> Service:
    """Add a new service (validated); raise ServiceExists if one already has this name."""
    clean = service_clean(name=name, description=description, duration_minutes=duration_minutes, price=price,
                          currency=currency, is_active=is_active)
    with transaction.atomic():
        return _service_insert(clean, position=None, user=user, actor=actor)


def service_upsert(*, name: str, description: str = "", duration_minutes: int | None = None, price: Decimal | str,
                   currency: str = "KES", is_active: bool = True, position: int | None = None, user=None,
                   actor: str | None = None) -> Service:
    """Create or update the service called `name` (validated); unchanged rows are not written."""
    clean = service_clean(name=name, description=description, duration_minutes=duration_minutes, price=price,
                          currency=currency, is_active=is_active)
    with transaction.atomic():
        service = Service.objects.select_for_update().filter(name=clean["name"]).first()
        if service is None:
            try:
                return _service_insert(clean, position=position, user=user, actor=actor)
            except ServiceExists:
                # Inserted by another writer since the look-up: update that row instead.
                service = Service.objects.select_for_update().get(name=clean["name"])
        if position is not None:
            clean["position"] = position
        return _service_save(service, clean, user=user, actor=actor)


def _service_save(service: Service, clean: dict[str, Any], *, user, actor: str | None) -> Service:
    before = {field: getattr(service, field) for field in clean}
    changed = [field for field, value in clean.items() if before[field] != value]
    if changed:
        for field in changed:
            setattr(service, field, clean[field])
        service.save(update_fields=changed)
        audit_record(subject=AuditSubject.SERVICE, action=AuditAction.CHANGED, key=service.name, user=user,
                     actor=actor, detail=field_changes(before=before, after=clean))
    return service


def service_update(*, service: Service, changes: dict[str, Any], user=None, actor: str | None = None) -> Service:
    """Apply a partial update to a service (validated as a whole)."""
    allowed = {"name", "description", "duration_minutes", "price", "currency", "is_active"}
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise ValidationError({name: ["This field cannot be edited."] for name in unknown})
    current = {field: getattr(service, field) for field in allowed}
    clean = service_clean(**{**current, **changes})
    try:
        # A rename onto a taken name is refused by the unique index, not by a look-before a concurrent rename races.
        with transaction.atomic():
            return _service_save(service, clean, user=user, actor=actor)
    except IntegrityError:
        for field, value in current.items():
            setattr(service, field, value)  # the caller's object as it is stored
        raise ValidationError({"name": [f"A service called {clean['name']!r} already exists."]}) from None


def service_delete(*, service: Service, user=None, actor: str | None = None) -> None:
    """Remove a service or product (past answers keep their text); the audit log says who."""
    with transaction.atomic():
        before = {field: getattr(service, field) for field in
                  ("description", "duration_minutes", "price", "currency", "is_active")}
        service.delete()
        audit_record(subject=AuditSubject.SERVICE, action=AuditAction.DELETED, key=service.name, user=user,
                     actor=actor, detail=field_changes(before=before, after={field: None for field in before}))


TIME_RANGE_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def time_range_parse(*, text: Any, field: str = "hours") -> tuple[dt.time, dt.time]:
    """Parse "HH:MM-HH:MM" into (opens, closes); raise ValidationError if malformed or not ordered."""
    match = TIME_RANGE_RE.match(text) if isinstance(text, str) else None
    if not match:
        raise ValidationError({field: [f"Enter a range as HH:MM-HH:MM, not {text!r}."]})
    h1, m1, h2, m2 = (int(part) for part in match.groups())
    try:
        opens, closes = dt.time(h1, m1), dt.time(h2, m2)
    except ValueError:
        raise ValidationError({field: [f"{text!r} is not a valid time of day."]}) from None
    if closes <= opens:
        raise ValidationError({field: [f"{text!r}: closing time must be after opening time."]})
    return opens, closes


def time_ranges_check(*, ranges: Iterable[tuple[dt.time, dt.time]], field: str = "hours") -> list[tuple[dt.time, dt.time]]:
    """Validate a day's ranges (each ordered, none overlapping); return them sorted."""
    ordered = sorted(ranges)
    for opens, closes in ordered:
        if closes <= opens:
            raise ValidationError({field: [f"{opens:%H:%M}-{closes:%H:%M}: closing time must be after opening time."]})
    for (o1, c1), (o2, c2) in zip(ordered, ordered[1:]):
        if o2 < c1:
            raise ValidationError({field: [f"{o1:%H:%M}-{c1:%H:%M} overlaps {o2:%H:%M}-{c2:%H:%M}."]})
    return ordered


def _ranges_from(value: Iterable, field: str) -> list[tuple[dt.time, dt.time]]:
    ranges = []
    for item in value:
        ranges.append(time_range_parse(text=item, field=field) if isinstance(item, str) else tuple(item))
    return time_ranges_check(ranges=ranges, field=field)


def _ranges_text(ranges: Iterable[tuple[dt.time, dt.time]]) -> str:
    return ", ".join(f"{opens:%H:%M}-{closes:%H:%M}" for opens, closes in ranges) or "closed"


def opening_hours_set(*, weekday: int, ranges: Iterable, user=None, actor: str | None = None) -> list[OpeningHours]:
    """Replace one weekday's opening ranges ("HH:MM-HH:MM" strings or (opens, closes) pairs; [] = closed)."""
    if weekday not in Weekday.values:
        raise ValidationError({"weekday": [f"Unknown weekday {weekday!r}: use 0 (Monday) to 6 (Sunday)."]})
    wanted = _ranges_from(ranges, "ranges")
    with transaction.atomic():
        existing = list(OpeningHours.objects.select_for_update().filter(weekday=weekday).order_by("opens"))
        before = [(row.opens, row.closes) for row in existing]
        if before == wanted:
            return existing
        OpeningHours.objects.filter(weekday=weekday).delete()
        rows = [OpeningHours.objects.create(weekday=weekday, opens=o, closes=c) for o, c in wanted]
        audit_record(subject=AuditSubject.OPENING_HOURS, action=AuditAction.CHANGED, key=Weekday(weekday).label,
                     user=user, actor=actor, detail={"hours": [_ranges_text(before), _ranges_text(wanted)]})
        return rows


def opening_hours_set_week(*, week: dict[int, Iterable], user=None,
                           actor: str | None = None) -> dict[int, list[OpeningHours]]:
    """Replace the weekly hours of the given weekdays at once (all validated before any write)."""
    checked: dict[int, list] = {}
    errors: dict[str, list[str]] = {}
    for weekday, ranges in week.items():
        try:
            if weekday not in Weekday.values:
                raise ValidationError({"weekday": [f"Unknown weekday {weekday!r}."]})
            checked[weekday] = _ranges_from(ranges, "ranges")
        except ValidationError as exc:
            errors[Weekday(weekday).label.lower() if weekday in Weekday.values else str(weekday)] = exc.messages
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        return {weekday: opening_hours_set(weekday=weekday, ranges=ranges, user=user, actor=actor)
                for weekday, ranges in checked.items()}


def special_day_set(*, date: dt.date | str, ranges: Iterable, note: str = "", user=None,
                    actor: str | None = None) -> SpecialDay:
    """Create or replace a dated exception ([] ranges = closed all day)."""
    day_date = _as_date(date, "date")
    if day_date is None:
        raise ValidationError({"date": ["This field is required."]})
    wanted = _ranges_from(ranges, "ranges")
    note = (note or "").strip()
    if len(note) > 200:
        raise ValidationError({"note": ["At most 200 characters."]})
    with transaction.atomic():
        day, created = SpecialDay.objects.select_for_update().get_or_create(date=day_date, defaults={"note": note})
        before_note = "" if created else day.note
        before_ranges = [] if created else [(r.opens, r.closes) for r in day.ranges.order_by("opens")]
        if not created and day.note != note:
            day.note = note
            day.save(update_fields=["note"])
        if before_ranges != wanted:
            day.ranges.all().delete()
            SpecialHours.objects.bulk_create([SpecialHours(day=day, opens=o, closes=c) for o, c in wanted])
        detail = field_changes(before={} if created else {"note": before_note, "hours": _ranges_text(before_ranges)},
                               after={"note": note, "hours": _ranges_text(wanted)})
        if created or detail:
            action = AuditAction.CREATED if created else AuditAction.CHANGED
            audit_record(subject=AuditSubject.SPECIAL_DAY, action=action, key=day_date.isoformat(), user=user,
                         actor=actor, detail=detail)
    return day


def special_day_delete(*, date: dt.date | str, user=None, actor: str | None = None) -> bool:
    """Remove a dated exception; returns whether one existed."""
    day_date = _as_date(date, "date")
    with transaction.atomic():
        day = SpecialDay.objects.select_for_update().filter(date=day_date).first()
        if day is None:
            return False
        hours = _ranges_text((r.opens, r.closes) for r in day.ranges.order_by("opens"))
        day.delete()
        audit_record(subject=AuditSubject.SPECIAL_DAY, action=AuditAction.DELETED, key=day_date.isoformat(),
                     user=user, actor=actor, detail={"note": [day.note, None], "hours": [hours, None]})
    return True


# ----------------------------------------------------------------------------- smoke tests

def _smoke_test_clean(*, query: Any, expected_keys: Any) -> tuple[str, list[str]]:
    query = (query or "").strip()
    if not query or len(query) > 500:
        raise ValidationError({"query": ["Enter a query of 1-500 characters."]})
    keys = _as_str_list(expected_keys, "expected_keys")
    if not keys or any(not KEY_RE.match(key) for key in keys):
        raise ValidationError({"expected_keys": ["Enter one or more valid snippet keys."]})
    return query, keys


def _smoke_test_query_taken() -> ValidationError:
    return ValidationError({"query": ["Another smoke test already asks this question."]})


def smoke_test_upsert(*, query: str, expected_keys: list[str]) -> SmokeTest:
    """Create or update the smoke test for `query`."""
    query, keys = _smoke_test_clean(query=query, expected_keys=expected_keys)
    test, created = SmokeTest.objects.get_or_create(query=query, defaults={"expected_keys": keys})
    if not created and list(test.expected_keys) != keys:
        test.expected_keys = keys
        test.save(update_fields=["expected_keys"])
    return test


def smoke_test_create(*, query: str, expected_keys: list[str]) -> SmokeTest:
    """Add a smoke test; a question another test already asks is refused (by its unique index)."""
    query, keys = _smoke_test_clean(query=query, expected_keys=expected_keys)
    try:
        with transaction.atomic():
            return SmokeTest.objects.create(query=query, expected_keys=keys)
    except IntegrityError:
        raise _smoke_test_query_taken() from None


def smoke_test_update(*, test: SmokeTest, query: str, expected_keys: list[str]) -> SmokeTest:
    """Change a smoke test's question or keys in place; a question another test already asks is refused."""
    query, keys = _smoke_test_clean(query=query, expected_keys=expected_keys)
    try:
        with transaction.atomic():
            SmokeTest.objects.filter(pk=test.pk).update(query=query, expected_keys=keys)
    except IntegrityError:
        raise _smoke_test_query_taken() from None
    test.query, test.expected_keys = query, keys
    return test


def smoke_test_delete(*, query: str) -> bool:
    """Remove the smoke test for `query`; returns whether there was one."""
    deleted, _ = SmokeTest.objects.filter(query=query).delete()
    return bool(deleted)
