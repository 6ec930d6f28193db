"""Chat sessions, their turns, and the booking hand-offs they produce (one set per tenant schema)."""
from __future__ import annotations

import secrets

from django.contrib.postgres.fields import ArrayField
from django.db import models


def new_public_id() -> str:
    # Unguessable, URL-safe and short enough for a WhatsApp bridge to keep per phone number.
    return "s_" + secrets.token_urlsafe(18)


def new_turn_id() -> str:
    # Public turn ids are opaque too: a sequential number would reveal a business's volume.
    return "t_" + secrets.token_urlsafe(12)


class ChatChannel(models.TextChoices):
    CHAT = "chat"
    WHATSAPP = "whatsapp", "WhatsApp"
    EMAIL = "email"


class Intent(models.TextChoices):
    BOOKING = "booking"
    CANCEL = "cancel"
    RESCHEDULE = "reschedule"
    SERVICES = "services"
    HOURS = "hours"
    OTHER = "other"
    GREETING = "greeting"
    THANKS = "thanks"


class Session(models.Model):
    """One conversation with one customer on one channel."""

    public_id = models.CharField(max_length=40, unique=True, default=new_public_id, editable=False)
    channel = models.CharField(max_length=16, choices=ChatChannel.choices, default=ChatChannel.CHAT)
    language = models.CharField(max_length=8, default="en")
    # Names of the document collections this session searches (ADD_KB / CLEAR_KB).
    collections = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    turn_count = models.PositiveIntegerField(default=0)
    # What the last non-trivial turn retrieved, so "ok thanks" can reuse it without a search.
    last_retrieval = models.JSONField(default=dict, blank=True)
    last_intent = models.CharField(max_length=16, blank=True)
    api_key_prefix = models.CharField(max_length=16, blank=True)
    started_by = models.CharField(max_length=150, blank=True, help_text="Owner's username for /chat/ sessions.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["-updated_at"], name="chat_session_updated")]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.channel})"


class Turn(models.Model):
    """One customer message and the answer it got, with what produced the answer."""

    public_id = models.CharField(max_length=40, unique=True, default=new_turn_id, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    channel = models.CharField(max_length=16, choices=ChatChannel.choices, default=ChatChannel.CHAT)
    message = models.TextField()
    answer = models.TextField(blank=True)
    language = models.CharField(max_length=8, default="en")
    intent = models.CharField(max_length=16, choices=Intent.choices)
    intent_source = models.CharField(max_length=16, blank=True)  # rules | prototype | llm | trivial
    intent_confidence = models.FloatField(default=0.0)
    trivial = models.BooleanField(default=False)
    mode = models.CharField(max_length=16, blank=True)
    # [{key, version, score, match_type}] of what the answer could draw on.
    retrieval = models.JSONField(default=list, blank=True)
    citations = models.JSONField(default=list, blank=True)
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=100, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    refusal_reason = models.CharField(max_length=40, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["intent", "created_at"], name="chat_turn_intent_created")]

    def __str__(self) -> str:
        return f"{self.intent}: {self.message[:60]}"


class HandoffKind(models.TextChoices):
    BOOKING = "booking"
    CANCEL = "cancel"
    RESCHEDULE = "reschedule"
    CALLBACK = "callback", "Call back"


class HandoffStatus(models.TextChoices):
    NEW = "new"
    CONTACTED = "contacted"
    DONE = "done"
    DISMISSED = "dismissed"


class HandoffRequest(models.Model):
    """A booking, cancellation, reschedule or call-back a customer asked for; a person at the business follows up."""

    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="handoffs")
    turn = models.OneToOneField(Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="handoff")
    kind = models.CharField(max_length=16, choices=HandoffKind.choices)
    what = models.CharField(max_length=200, blank=True, help_text="The service named, if any.")
    when_text = models.CharField(max_length=200, blank=True, help_text="The day or time mentioned, as written.")
    contact = models.CharField(max_length=200, blank=True, help_text="Phone or email, if given.")
    channel = models.CharField(max_length=16, choices=ChatChannel.choices, default=ChatChannel.CHAT)
    message = models.TextField()
    status = models.CharField(max_length=16, choices=HandoffStatus.choices, default=HandoffStatus.NEW)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "-created_at"], name="handoff_status_created")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} — {self.what or 'unspecified'} ({self.get_status_display()})"
