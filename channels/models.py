"""A business's WhatsApp conversations (tenant schema): customers, every message each way, delivery statuses,
and the record that a hand-off was announced."""
from __future__ import annotations

from django.db import models
from django.db.models import Q


class WhatsAppContact(models.Model):
    """One customer's WhatsApp number: their chat session, their 24-hour window, opt-out and takeover."""

    wa_id = models.CharField(max_length=32, unique=True)
    # The business number the customer last wrote to: replies go out from it.
    phone_number_id = models.CharField(max_length=64)
    name = models.CharField(max_length=200, blank=True)
    session = models.ForeignKey("conversations.Session", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="whatsapp_contacts")
    language = models.CharField(max_length=8, default="en")
    # When the customer last wrote (Meta's timestamp): free-form replies are allowed for 24 hours after it.
    last_inbound_at = models.DateTimeField(null=True, blank=True)
    opted_out_at = models.DateTimeField(null=True, blank=True)
    # Set while a person has taken the conversation over: the bot records messages but does not answer.
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-last_inbound_at"]

    def __str__(self) -> str:
        return f"+{self.wa_id}" + (f" ({self.name})" if self.name else "")


class Direction(models.TextChoices):
    IN = "in"
    OUT = "out"


class Source(models.TextChoices):
    CUSTOMER = "customer"
    BOT = "bot"
    OWNER = "owner"  # a person replying from the hand-off page
    NOTICE = "notice"  # opt-out confirmations, hand-off alerts to the owner


class MessageStatus(models.TextChoices):
    # inbound
    RECEIVED = "received"  # stored by the webhook, not handled yet
    ANSWERED = "answered"
    RECORDED = "recorded"  # kept, deliberately not answered (reactions, unknown types, STOP)
    HELD = "held"  # arrived while a person had taken over
    OPTED_OUT = "opted_out"
    # outbound
    QUEUED = "queued"
    SENDING = "sending"
    RETRYING = "retrying"
    SENT = "sent"
    DELIVERED = "delivered"
    READ = "read"
    # either way
    FAILED = "failed"


class WhatsAppMessage(models.Model):
    """A message in or out; the wamid identifies it to Meta and makes a redelivery a no-op."""

    direction = models.CharField(max_length=3, choices=Direction.choices)
    wamid = models.CharField(max_length=200, null=True, blank=True, unique=True)
    contact = models.ForeignKey(WhatsAppContact, on_delete=models.CASCADE, related_name="messages")
    kind = models.CharField(max_length=24, default="text")  # Meta's message type, or "text" for what we send
    body = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=Source.choices)
    status = models.CharField(max_length=12, choices=MessageStatus.choices)
    reply_to = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies")
    turn = models.ForeignKey("conversations.Turn", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="whatsapp_messages")
    sent_by = models.CharField(max_length=150, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.CharField(max_length=300, blank=True)
    meta_timestamp = models.DateTimeField(null=True, blank=True)  # when the customer sent it (inbound)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="wa_message_status_next")]
        constraints = [
            # A customer message gets at most one bot answer, whatever redeliveries and retries happen.
            models.UniqueConstraint(fields=["reply_to"], condition=Q(source="bot"), name="wa_one_bot_reply"),
        ]

    def __str__(self) -> str:
        return f"{self.direction} {self.kind} {self.status}: {self.body[:50]}"


class WhatsAppStatus(models.Model):
    """A delivery status Meta reported for a message we sent (sent, delivered, read, failed)."""

    wamid = models.CharField(max_length=200, db_index=True)
    message = models.ForeignKey(WhatsAppMessage, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="statuses")
    status = models.CharField(max_length=16)
    meta_timestamp = models.DateTimeField(null=True, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["wamid", "status"], name="wa_status_once")]

    def __str__(self) -> str:
        return f"{self.wamid[:24]}… {self.status}"


class HandoffAlert(models.Model):
    """That a hand-off was announced (mail, WhatsApp): one row per hand-off, so a retried task never mails twice."""

    handoff = models.OneToOneField("conversations.HandoffRequest", on_delete=models.CASCADE, related_name="alert")
    mailed_to = models.JSONField(default=list, blank=True)
    mailed_at = models.DateTimeField(null=True, blank=True)
    whatsapp_message = models.ForeignKey(WhatsAppMessage, null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="+")
    note = models.CharField(max_length=300, blank=True)
    contact_announced = models.CharField(max_length=300, blank=True)  # the contact the staff were last told
    created_at = models.DateTimeField(auto_now_add=True)
