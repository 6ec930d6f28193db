"""Telemetry rows in each tenant's schema."""
from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from pgvector.django import VectorField


class EventName(models.TextChoices):
    KNOWLEDGE_OVERFLOW = "knowledge_overflow"
    KNOWLEDGE_GAP_CANDIDATE = "knowledge_gap_candidate"
    REFUSAL = "refusal"
    GROUNDING_FALLBACK = "grounding_fallback"
    PROVIDER_ERROR = "provider_error"
    COST_CEILING = "cost_ceiling"
    MODE_CHANGED = "retrieval_mode_changed"
    # An extractive answer quoted a snippet as written to a customer of another language (no approved version).
    TRANSLATION_MISSING = "translation_missing"


class Event(models.Model):
    """A telemetry event; the same payload is also written as a JSON log line."""

    name = models.CharField(max_length=40, choices=EventName.choices)
    payload = models.JSONField(default=dict)
    # A default rather than auto_now_add, so fixtures and benchmarks can write history.
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["name", "created_at"], name="event_name_created")]

    def __str__(self) -> str:
        return f"{self.name} @ {self.created_at:%Y-%m-%d %H:%M}"


class RetrievalLog(models.Model):
    """One chat turn's retrieval, with the SOP's kb_retrieval_logs columns (plus answer metadata)."""

    created_at = models.DateTimeField(default=timezone.now)
    channel = models.CharField(max_length=16, default="chat")
    session_id = models.CharField(max_length=100, blank=True)
    turn_id = models.CharField(max_length=100, blank=True)
    message_preview = models.CharField(max_length=200, blank=True)
    # [{key, version, similarity, tokens, match_type}], the SOP's retrieved_sections.
    retrieved_sections = models.JSONField(default=list, blank=True)
    retrieved_tokens = models.PositiveIntegerField(default=0)
    core_tokens = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    trivial = models.BooleanField(default=False)
    fallback_used = models.BooleanField(default=False)
    candidate_count = models.PositiveIntegerField(default=0)
    returned_count = models.PositiveIntegerField(default=0)
    skipped_for_budget_count = models.PositiveIntegerField(default=0)
    empty_retrieval = models.BooleanField(default=False)
    embedding_latency_ms = models.FloatField(default=0)
    retrieval_latency_ms = models.FloatField(default=0)
    mode = models.CharField(max_length=16, blank=True)
    intent = models.CharField(max_length=32, blank=True)
    provider = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=100, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    refused = models.BooleanField(default=False)
    refusal_reason = models.CharField(max_length=50, blank=True)
    language = models.CharField(max_length=8, blank=True)
    # The answer shaper's prompt version in force for the turn (conversations/prompts/answer_shaper.yaml).
    prompt_version = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Every dashboard figure is a range scan on created_at; BRIN would be smaller but
            # history written out of order (imports, fixtures) defeats it.
            models.Index(fields=["created_at"], name="retrieval_log_created"),
            models.Index(fields=["session_id", "created_at"], name="retrieval_log_session"),
        ]

    def __str__(self) -> str:
        return f"{self.intent or 'turn'} @ {self.created_at:%Y-%m-%d %H:%M}"


class RetrievalLogSection(models.Model):
    """One retrieved section of a logged turn, kept as rows so per-section figures avoid unnesting JSON."""

    log = models.ForeignKey(RetrievalLog, on_delete=models.CASCADE, related_name="sections")
    created_at = models.DateTimeField()  # copied from the log: the range filter needs no join
    key = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=0)
    similarity = models.FloatField(null=True, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    match_type = models.CharField(max_length=16, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["created_at", "key"], name="retrieval_section_created_key"),
            # "Never retrieved in 30 days" probes each active key: one index lookup per key.
            models.Index(fields=["key", "created_at"], name="retrieval_section_key_created"),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"


class GapStatus(models.TextChoices):
    OPEN = "open"
    DISMISSED = "dismissed"
    RESOLVED = "resolved"


class GapGroup(models.Model):
    """Unanswered questions that mean the same thing, grouped by embedding similarity."""

    label = models.CharField(max_length=300)  # the most central phrasing
    centroid = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)
    count = models.PositiveIntegerField(default=0)
    refused_count = models.PositiveIntegerField(default=0)
    examples = models.JSONField(default=list, blank=True)  # distinct phrasings, newest first (capped)
    languages = models.JSONField(default=dict, blank=True)  # {"en": 3, "sw": 1}
    closest = models.JSONField(default=list, blank=True)  # [{key, version, title, similarity}]
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    status = models.CharField(max_length=10, choices=GapStatus.choices, default=GapStatus.OPEN)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.JSONField(default=list, blank=True)  # [{key, version, title}] that answer it now
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-count", "-last_seen"]
        indexes = [models.Index(fields=["status", "count"], name="gap_group_status_count")]

    def __str__(self) -> str:
        return f"{self.label} ({self.count})"


class GapQuestion(models.Model):
    """One unanswered question (from a knowledge_gap_candidate event) and the group it joined."""

    event = models.OneToOneField(Event, on_delete=models.CASCADE, related_name="gap_question")
    group = models.ForeignKey(GapGroup, on_delete=models.CASCADE, related_name="questions")
    text = models.CharField(max_length=500)
    language = models.CharField(max_length=8, blank=True)
    refused = models.BooleanField(default=False)
    similarity = models.FloatField(default=1.0)  # to the group's centroid when it joined
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    asked_at = models.DateTimeField()

    class Meta:
        ordering = ["-asked_at"]

    def __str__(self) -> str:
        return self.text


class Digest(models.Model):
    """The daily digest of one tenant: what was built, kept for the browser, and who it was mailed to."""

    day = models.DateField(unique=True)
    built_at = models.DateTimeField(default=timezone.now)
    content = models.JSONField(default=dict)
    subject = models.CharField(max_length=200)
    text_body = models.TextField()
    recipients = ArrayField(models.EmailField(), default=list, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-day"]

    def __str__(self) -> str:
        return self.subject


class RetrievalDay(models.Model):
    """One sealed local day of telemetry, aggregated once (see telemetry.rollups); keyed by time zone."""

    day = models.DateField()
    zone = models.CharField(max_length=64)
    data = models.JSONField()
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-day"]
        constraints = [models.UniqueConstraint(fields=["zone", "day"], name="retrieval_day_zone_day")]

    def __str__(self) -> str:
        return f"{self.day} ({self.zone})"
