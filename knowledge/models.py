"""What a business knows: versioned snippets, structured facts, retrieval settings, smoke tests."""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Replace
from pgvector.django import HnswIndex, VectorField


class Category(models.TextChoices):
    POLICY = "policy"
    FACILITY = "facility"
    PREP = "prep"
    SERVICE = "service"
    HOURS = "hours"
    GENERAL = "general"


class Role(models.TextChoices):
    GUARDRAIL = "guardrail"
    BEHAVIOUR = "behaviour"
    RETRIEVED = "retrieved"


class Status(models.TextChoices):
    CANONICAL = "canonical"
    ACCEPTED = "accepted"
    DRAFT = "draft"
    DEPRECATED = "deprecated"


class Channel(models.TextChoices):
    CHAT = "chat"
    WHATSAPP = "whatsapp"
    EMAIL = "email"


def all_channels() -> list[str]:
    return [choice.value for choice in Channel]


class Snippet(models.Model):
    """A stable key whose content lives in versions; the row activations lock on."""

    key = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


# Columns no page or list needs (vectors and search documents): deferred wherever versions are listed.
SNIPPET_HEAVY_FIELDS = ("embedding", "title_embedding", "search_vector", "title_search")


class EmbeddingState(models.TextChoices):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


class SnippetVersion(models.Model):
    """One immutable version of a snippet's content; exactly one per key is active."""

    snippet = models.ForeignKey(Snippet, on_delete=models.CASCADE, related_name="versions")
    # Copied from the snippet so the generated search column can weight it (a generated
    # column cannot read another table).
    key = models.SlugField(max_length=100, editable=False)
    version = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    body = models.TextField()
    category = models.CharField(max_length=16, choices=Category.choices, default=Category.GENERAL)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.RETRIEVED)
    language = models.CharField(max_length=8, default="en")
    channels = ArrayField(models.CharField(max_length=16, choices=Channel.choices), default=all_channels)
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACCEPTED)
    related_keys = ArrayField(models.SlugField(max_length=100), default=list, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    notes = models.TextField(blank=True)
    valid_from = models.DateField(null=True, blank=True)
    valid_until = models.DateField(null=True, blank=True)
    last_reviewed_at = models.DateField(null=True, blank=True)
    # Owner-approved versions in other languages: {"sw": {"title": ..., "body": ...}}, versioned with the
    # snippet. The extractive answer quotes the customer's language version (conversations/translations.py).
    translations = models.JSONField(default=dict, blank=True)

    is_active = models.BooleanField(default=False)
    activated_at = models.DateTimeField(null=True, blank=True)
    activated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    # The title alone, embedded too: a customer's question often matches the question an owner wrote as
    # the title better than title + body together (ADR 0007 §1e). Compared with each candidate only, so
    # it has no index of its own.
    title_embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_state = models.CharField(max_length=10, choices=EmbeddingState.choices,
                                       default=EmbeddingState.PENDING)
    embedding_model = models.CharField(max_length=100, blank=True)
    embedded_at = models.DateTimeField(null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=(
            SearchVector("title", weight="A", config=settings.TEXT_SEARCH_CONFIG)
            + SearchVector(Replace("key", Value("_"), Value(" ")), weight="A", config=settings.TEXT_SEARCH_CONFIG)
            + SearchVector("body", weight="B", config=settings.TEXT_SEARCH_CONFIG)
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # The title's and key's lexemes alone, stored: retrieval counts the question's words found in them for
    # every candidate, and stemming the title per candidate per query cost more than the search itself.
    title_search = models.GeneratedField(
        expression=(
            SearchVector("title", config=settings.TEXT_SEARCH_CONFIG)
            + SearchVector(Replace("key", Value("_"), Value(" ")), config=settings.TEXT_SEARCH_CONFIG)
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["key", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["snippet", "version"], name="snippet_version_unique"),
            models.UniqueConstraint(fields=["snippet"], condition=Q(is_active=True), name="one_active_version_per_key"),
            models.CheckConstraint(condition=Q(valid_until__isnull=True) | Q(valid_from__isnull=True)
                                   | Q(valid_until__gte=models.F("valid_from")), name="valid_range_ordered"),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="snippet_search_gin"),
            HnswIndex(name="snippet_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            models.Index(fields=["key", "is_active"], name="snippet_key_active"),
            models.Index(fields=["embedding_state"], name="snippet_embedding_state",
                         condition=Q(embedding_state="pending")),
        ]
        permissions = [("review_snippetversion", "Can review and release guardrail/behaviour versions")]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"


class Service(models.Model):
    """A bookable service or a product (no duration) with its price, answering the `services` intent directly."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    # None for a product: it is sold, not booked, so it takes no time.
    duration_minutes = models.PositiveIntegerField(null=True, blank=True)
    price = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="KES")
    is_active = models.BooleanField(default=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_product(self) -> bool:
        return self.duration_minutes is None


class Weekday(models.IntegerChoices):
    MON = 0, "Monday"
    TUE = 1, "Tuesday"
    WED = 2, "Wednesday"
    THU = 3, "Thursday"
    FRI = 4, "Friday"
    SAT = 5, "Saturday"
    SUN = 6, "Sunday"


class OpeningHours(models.Model):
    """One weekly opening range; a day may have several, none means closed."""

    weekday = models.PositiveSmallIntegerField(choices=Weekday.choices)
    opens = models.TimeField()
    closes = models.TimeField()

    class Meta:
        ordering = ["weekday", "opens"]
        verbose_name_plural = "opening hours"
        constraints = [models.CheckConstraint(condition=Q(closes__gt=models.F("opens")), name="weekly_closes_after_opens")]

    def __str__(self) -> str:
        return f"{self.get_weekday_display()} {self.opens:%H:%M}-{self.closes:%H:%M}"


class SpecialDay(models.Model):
    """A dated exception (holiday, training day): its ranges replace the weekly ones; none means closed."""

    date = models.DateField(unique=True)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["date"]

    def __str__(self) -> str:
        return f"{self.date} {self.note}".strip()


class SpecialHours(models.Model):
    """An opening range on a special day."""

    day = models.ForeignKey(SpecialDay, on_delete=models.CASCADE, related_name="ranges")
    opens = models.TimeField()
    closes = models.TimeField()

    class Meta:
        ordering = ["day__date", "opens"]
        constraints = [models.CheckConstraint(condition=Q(closes__gt=models.F("opens")), name="special_closes_after_opens")]


class RetrievalMode(models.TextChoices):
    AUTO = "auto", "Automatic (graduate when the KB overflows)"
    INLINE = "inline", "Pinned: inline (whole KB in the prompt)"
    HYBRID = "hybrid", "Pinned: hybrid (vector + keyword search)"


class RetrievalSettings(models.Model):
    """Per-tenant retrieval parameters (one row per schema); defaults follow the SOP."""

    mode = models.CharField(max_length=10, choices=RetrievalMode.choices, default=RetrievalMode.AUTO)
    current_mode = models.CharField(max_length=10, default="inline", editable=False)
    graduated_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Vector-first fusion, measured in docs/adr/0007-retrieval-fusion-graduation-refusal.md (§1).
    vector_weight = models.FloatField(default=0.8)
    keyword_weight = models.FloatField(default=0.1)
    heading_weight = models.FloatField(default=0.0)
    # Share of the title's own similarity in the vector score (the rest is the whole snippet's); ADR 0007 §1e.
    title_weight = models.FloatField(default=0.3)
    canonical_boost = models.FloatField(default=0.05)
    deprecated_penalty = models.FloatField(default=0.15)
    similarity_threshold = models.FloatField(default=0.25)
    top_k = models.PositiveIntegerField(default=8)
    overretrieve_factor = models.PositiveIntegerField(default=3)
    budget_chat_tokens = models.PositiveIntegerField(default=1500)
    budget_whatsapp_tokens = models.PositiveIntegerField(default=1500)
    budget_email_tokens = models.PositiveIntegerField(default=2000)
    fts_candidate_cap = models.PositiveIntegerField(default=200)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retrieval settings"

    def __str__(self) -> str:
        return f"Retrieval settings ({self.get_mode_display()})"


class SmokeTest(models.Model):
    """An owner's release check: this query must retrieve one of these keys."""

    query = models.CharField(max_length=500, unique=True)
    expected_keys = ArrayField(models.SlugField(max_length=100))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.query



class AuditSubject(models.TextChoices):
    SNIPPET = "snippet", "Snippet"
    SERVICE = "service", "Service or product"
    OPENING_HOURS = "opening_hours", "Weekly opening hours"
    SPECIAL_DAY = "special_day", "Special day"
    RETRIEVAL_SETTINGS = "retrieval_settings", "Retrieval settings"
    COLLECTION = "collection", "Collection"
    DOCUMENT = "document", "Document"
    API_KEY = "api_key", "API key"
    HANDOFF = "handoff", "Hand-off"


class AuditAction(models.TextChoices):
    CREATED = "created", "Created or saved"
    ACTIVATED = "activated", "Activated"
    ROLLED_BACK = "rolled_back", "Rolled back"
    DEACTIVATED = "deactivated", "Taken out of use"
    CHANGED = "changed", "Changed"
    DELETED = "deleted", "Deleted"
    ISSUED = "issued", "Key issued"
    REVOKED = "revoked", "Key revoked"


class AuditEntry(models.Model):
    """Who changed what an owner can see (snippets, prices, hours, settings, collections, keys, hand-offs), and when.

    (Snippet versions are never deleted: the admin and the API offer no delete, so taking a key out of use is
    the owner's "delete"; only deleting the whole tenant removes versions, and this log with them.)

    Written by the services in the transaction that makes the change, so an entry exists exactly when the
    change does. Append-only: a database trigger (migrations 0003 and 0011) rejects UPDATE and DELETE.
    """

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    subject = models.CharField(max_length=24, choices=AuditSubject.choices, default=AuditSubject.SNIPPET)
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    # What changed, named as the owner knows it: a snippet key, a service name, a weekday, a date, a
    # collection or document name, an API key prefix, a hand-off number.
    key = models.CharField(max_length=200)
    version = models.PositiveIntegerField(null=True, blank=True)
    # "user:<username>", "api_key:<prefix>", "command:<name>", "platform:<username>" or "system". A plain id
    # rather than a foreign key: an entry outlives the account, and nothing may rewrite it when the account goes.
    actor = models.CharField(max_length=160)
    user_id = models.BigIntegerField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)  # for changes: {field: [before, after]}

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["key", "-created_at"], name="knowledge_audit_key_created"),
                   models.Index(fields=["subject", "-created_at"], name="knowledge_audit_subject")]
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"

    def __str__(self) -> str:
        version = f" v{self.version}" if self.version else ""
        return f"{self.get_action_display()} {self.get_subject_display()} {self.key}{version} by {self.actor}"


from knowledge.collections.models import Chunk, Collection, Document  # noqa: E402,F401
