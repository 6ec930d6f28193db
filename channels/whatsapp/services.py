"""WhatsApp Cloud API channel: accept signed deliveries, answer each customer message once, send replies.

The webhook only checks the signature and stores what arrived (each message id once, by a unique index);
`inbound_handle` answers a stored message in a task, and `outbound_send` sends a stored reply. Every step
works from rows, so a broker or Graph API outage delays a reply but never loses it: `sweep` picks up
whatever is left waiting.
"""
from __future__ import annotations

import datetime as dt
import hmac
import json
import logging
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django_tenants.utils import schema_context

from channels.models import Direction, MessageStatus, Source, WhatsAppContact, WhatsAppMessage, WhatsAppStatus
from channels.registry.models import WhatsAppNumber
from channels.secrets import secret_decrypt, verify_token_hash
from channels.whatsapp import graph
from channels.whatsapp.formatting import canned_reply, command_of, whatsapp_text
from channels.whatsapp.payloads import MEDIA_KINDS, Change, InboundMessage, StatusUpdate, changes_read, signature_valid
from conversations import services as turns
from conversations.models import Session, Turn
from ratiba.redaction import stored_text

log = logging.getLogger(__name__)

WINDOW = dt.timedelta(hours=24)
SEND_LEASE = dt.timedelta(seconds=120)
STALE_AFTER = dt.timedelta(seconds=30)  # a stored message no task has taken this long is queued again
TEXT_KINDS = frozenset({"text", "button"})
_STATUS_RANK = {"sent": 1, "delivered": 2, "read": 3}
MAX_HANDLE_ATTEMPTS = 3


class SignatureInvalid(Exception):
    """The delivery's X-Hub-Signature-256 matches no secret it could have been signed with."""


class ChannelError(Exception):
    """Something an owner asked for that cannot be done (outside the window, opted out...), said plainly."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message)
        self.code = code


@dataclass
class DeliveryResult:
    """What one webhook delivery did: new messages queued, redeliveries ignored, statuses stored."""

    accepted: int = 0
    duplicates: int = 0
    statuses: int = 0
    unrouted: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- webhook: handshake and deliveries


def verify_token_matches(token: str) -> bool:
    """Meta's handshake token: WHATSAPP_VERIFY_TOKEN or the verify token of any connected number."""
    if not token:
        return False
    if settings.WHATSAPP_VERIFY_TOKEN and hmac.compare_digest(token, settings.WHATSAPP_VERIFY_TOKEN):
        return True
    return WhatsAppNumber.objects.filter(verify_token_hash=verify_token_hash(token)).exists()


def delivery_authorize(*, raw_body: bytes, signature: str) -> list[tuple[Change, WhatsAppNumber]]:
    """The changes of a delivery whose signature matches their number's app secret (or the platform's).

    The body is parsed only to learn which numbers' secrets may have signed it; nothing is stored or done
    before a secret matches. A change for a number with its own app secret needs that secret.
    """
    platform_ok = bool(settings.WHATSAPP_APP_SECRET) and signature_valid(
        raw_body=raw_body, header=signature, app_secret=settings.WHATSAPP_APP_SECRET)
    if not signature.startswith("sha256="):
        raise SignatureInvalid("Missing or malformed X-Hub-Signature-256.")
    try:
        payload = json.loads(raw_body)
    except (ValueError, RecursionError):
        payload = None
    changes = changes_read(payload)
    numbers = {n.phone_number_id: n for n in WhatsAppNumber.objects.select_related("tenant")
               .filter(phone_number_id__in={c.phone_number_id for c in changes})}
    own_ok: dict[str, bool] = {}
    for number in numbers.values():
        if number.app_secret_encrypted:
            own_ok[number.phone_number_id] = signature_valid(
                raw_body=raw_body, header=signature, app_secret=secret_decrypt(number.app_secret_encrypted))
    if not platform_ok and not any(own_ok.values()):
        raise SignatureInvalid("The signature matches no app secret for this delivery.")
    authorized = []
    for change in changes:
        number = numbers.get(change.phone_number_id)
        if number is None:
            log.warning("whatsapp delivery for an unconnected number %s ignored", change.phone_number_id)
            continue
        if own_ok.get(number.phone_number_id, platform_ok if not number.app_secret_encrypted else False):
            authorized.append((change, number))
    return authorized


def delivery_accept(*, raw_body: bytes, signature: str) -> DeliveryResult:
    """Check a webhook delivery and store it in each business's schema; handling is queued on commit."""
    result = DeliveryResult()
    for change, number in delivery_authorize(raw_body=raw_body, signature=signature):
        with schema_context(number.tenant.schema_name), transaction.atomic():
            for message in change.messages:
                if _inbound_store(message, phone_number_id=number.phone_number_id):
                    result.accepted += 1
                else:
                    result.duplicates += 1
            for status in change.statuses:
                result.statuses += _status_store(status)
    return result


def _contact_touch(message: InboundMessage, *, phone_number_id: str) -> WhatsAppContact:
    contact, _ = WhatsAppContact.objects.get_or_create(
        wa_id=message.wa_id, defaults={"phone_number_id": phone_number_id, "name": message.profile_name})
    at = message.timestamp or timezone.now()
    # The window runs from the customer's latest message; deliveries can arrive out of order.
    WhatsAppContact.objects.filter(pk=contact.pk).filter(Q(last_inbound_at__isnull=True) | Q(last_inbound_at__lt=at)) \
        .update(last_inbound_at=at, phone_number_id=phone_number_id, updated_at=timezone.now())
    if message.profile_name and message.profile_name != contact.name:
        WhatsAppContact.objects.filter(pk=contact.pk).update(name=message.profile_name)
    return contact


def _inbound_store(message: InboundMessage, *, phone_number_id: str) -> bool:
    """Store a customer message once; False when its id was already stored (a redelivery)."""
    if WhatsAppMessage.objects.filter(wamid=message.wamid).exists():
        return False
    contact = _contact_touch(message, phone_number_id=phone_number_id)
    try:
        # A savepoint: a concurrent delivery of the same id loses here, on the unique index, and stops.
        with transaction.atomic():
            row = WhatsAppMessage.objects.create(
                direction=Direction.IN, wamid=message.wamid, contact=contact, kind=message.kind, body=message.text,
                source=Source.CUSTOMER, status=MessageStatus.RECEIVED, meta_timestamp=message.timestamp)
    except IntegrityError:
        return False
    _on_commit_enqueue("channels.whatsapp_handle_inbound", row.pk)
    return True


def _status_store(update: StatusUpdate) -> int:
    try:
        with transaction.atomic():
            WhatsAppStatus.objects.create(wamid=update.wamid, status=update.status, meta_timestamp=update.timestamp,
                                          errors=update.errors,
                                          message=WhatsAppMessage.objects.filter(wamid=update.wamid).first())
    except IntegrityError:
        return 0  # the same status redelivered
    message = WhatsAppMessage.objects.select_for_update().filter(wamid=update.wamid, direction=Direction.OUT).first()
    if message is not None:
        _status_apply(message, update.status, update.errors)
    return 1


def _status_apply(message: WhatsAppMessage, status: str, errors: list) -> None:
    """Move a sent message's status forward (sent < delivered < read); a failure is kept with its reason."""
    if status == "failed":
        first = errors[0] if errors and isinstance(errors[0], dict) else {}
        message.status = MessageStatus.FAILED
        message.error_code = str(first.get("code") or "failed")[:40]
        message.error_message = str(first.get("title") or first.get("message") or "Meta reported a failure")[:300]
        message.save(update_fields=["status", "error_code", "error_message", "updated_at"])
    elif _STATUS_RANK.get(status, 0) > _STATUS_RANK.get(message.status, 0) and message.status != MessageStatus.FAILED:
        message.status = status
        message.save(update_fields=["status", "updated_at"])


# ----------------------------------------------------------------------------- queueing


def _on_commit_enqueue(task_name: str, message_id: int) -> None:
    # The schema is fixed now: tenant-schemas-celery sends a task to the schema current at send time, and the
    # commit may run the callback after the caller left its schema_context.
    transaction.on_commit(partial(_enqueue, task_name, message_id, schema=connection.schema_name), robust=True)


def _enqueue(task_name: str, message_id: int, *, schema: str | None = None) -> None:
    from channels import tasks  # tasks import this module

    try:
        with schema_context(schema or connection.schema_name):
            getattr(tasks, task_name.split(".", 1)[1]).delay(message_id)
    except Exception as exc:  # noqa: BLE001 - a broker outage must never lose the stored message
        # The row stays as it is; `sweep` queues it again once it is older than STALE_AFTER.
        log.warning("whatsapp task %s not queued for message %s (left for the sweep): %s", task_name, message_id, exc)


def sweep(*, now: dt.datetime | None = None) -> dict:
    """Queue again what no task finished: stale inbound messages, queued, due and stalled replies."""
    now = now or timezone.now()
    stale = now - STALE_AFTER
    inbound = list(WhatsAppMessage.objects.filter(direction=Direction.IN, status=MessageStatus.RECEIVED,
                                                  updated_at__lt=stale, attempts__lt=MAX_HANDLE_ATTEMPTS)
                   .values_list("pk", flat=True)[:500])
    outbound = list(WhatsAppMessage.objects.filter(direction=Direction.OUT).filter(
        Q(status=MessageStatus.QUEUED, updated_at__lt=stale)
        | Q(status__in=[MessageStatus.RETRYING, MessageStatus.SENDING], next_attempt_at__lte=now))
        .values_list("pk", flat=True)[:500])
    for pk in inbound:
        _enqueue("channels.whatsapp_handle_inbound", pk)
    for pk in outbound:
        _enqueue("channels.whatsapp_send", pk)
    return {"inbound": len(inbound), "outbound": len(outbound)}


# ----------------------------------------------------------------------------- answering a customer message


def _language_of(contact: WhatsAppContact, text: str) -> str:
    if text.strip():
        from knowledge.retrieval.language import detect_language

        return detect_language(text).language
    return contact.language


def _reply(inbound: WhatsAppMessage, *, body: str, source: str = Source.BOT, turn: Turn | None = None) -> WhatsAppMessage:
    reply = WhatsAppMessage.objects.create(direction=Direction.OUT, contact=inbound.contact, kind="text", body=body,
                                           source=source, status=MessageStatus.QUEUED, reply_to=inbound, turn=turn)
    _on_commit_enqueue("channels.whatsapp_send", reply.pk)
    return reply


def _answer_text(inbound: WhatsAppMessage, contact: WhatsAppContact) -> None:
    session_id = contact.session.public_id if contact.session_id else None
    message = inbound.body[: turns.MAX_MESSAGE_CHARS]
    result = turns.turn_run(turns.TurnInput(message=message, session_id=session_id, channel="whatsapp"))
    turn = Turn.objects.select_related("session").get(public_id=result.turn_id)
    updates = {"language": turn.language}
    if contact.session_id != turn.session_id:
        updates["session"] = turn.session  # one session per customer number: follow-ups read the same turns
    WhatsAppContact.objects.filter(pk=contact.pk).update(**updates)
    _reply(inbound, body=whatsapp_text(result.answer), turn=turn)
    inbound.status, inbound.turn = MessageStatus.ANSWERED, turn


def inbound_handle(*, message_id: int) -> str:
    """Answer one stored customer message (idempotent: a message already handled is left alone)."""
    try:
        with transaction.atomic():
            # The row lock makes a second worker on the same message wait, then find it handled.
            inbound = (WhatsAppMessage.objects.select_for_update(of=("self",)).select_related("contact", "contact__session")
                       .filter(pk=message_id, direction=Direction.IN).first())
            if inbound is None or inbound.status != MessageStatus.RECEIVED:
                return "skipped"
            contact = inbound.contact
            command = command_of(inbound.body) if inbound.kind in TEXT_KINDS else ""
            if command == "stop":
                contact.opted_out_at = timezone.now()
                contact.save(update_fields=["opted_out_at", "updated_at"])
                _reply(inbound, body=canned_reply("stop", contact.language), source=Source.NOTICE)
                inbound.status = MessageStatus.RECORDED
            elif command == "start" and contact.opted_out_at:
                contact.opted_out_at = None
                contact.save(update_fields=["opted_out_at", "updated_at"])
                _reply(inbound, body=canned_reply("start", contact.language), source=Source.NOTICE)
                inbound.status = MessageStatus.RECORDED
            elif contact.opted_out_at:
                inbound.status = MessageStatus.OPTED_OUT
            elif contact.paused_at:
                inbound.status = MessageStatus.HELD  # a person is answering; the hand-off page shows it
            elif inbound.kind in TEXT_KINDS and inbound.body.strip():
                _answer_text(inbound, contact)
            elif inbound.kind in MEDIA_KINDS:
                _reply(inbound, body=canned_reply("media", _language_of(contact, inbound.body)))
                inbound.status = MessageStatus.ANSWERED
            else:
                inbound.status = MessageStatus.RECORDED  # reactions, unsupported and unknown types
            # The text was needed unmasked to answer (a phone number for a hand-off); the stored copy may mask it.
            inbound.body = stored_text(inbound.body)
            inbound.save(update_fields=["status", "turn", "body", "updated_at"])
            return inbound.status
    except Exception as exc:
        # Everything above rolled back; count the attempt so a message that always fails stops being retried.
        WhatsAppMessage.objects.filter(pk=message_id).update(attempts=F("attempts") + 1, updated_at=timezone.now())
        failed = WhatsAppMessage.objects.filter(pk=message_id, attempts__gte=MAX_HANDLE_ATTEMPTS).update(
            status=MessageStatus.FAILED, error_code="handling_failed", error_message=f"{type(exc).__name__}"[:300])
        log.exception("whatsapp message %s could not be handled%s", message_id, " (gave up)" if failed else "")
        raise


# ----------------------------------------------------------------------------- sending


def window_open(contact: WhatsAppContact, *, now: dt.datetime | None = None) -> bool:
    """Free-form replies are accepted for 24 hours after the customer's last message."""
    now = now or timezone.now()
    return contact.last_inbound_at is not None and now - contact.last_inbound_at < WINDOW


def _number_of(contact: WhatsAppContact) -> WhatsAppNumber | None:
    return WhatsAppNumber.objects.filter(phone_number_id=contact.phone_number_id,
                                         tenant__schema_name=connection.schema_name).first()


def _fail(message: WhatsAppMessage, *, code: str, text: str) -> str:
    WhatsAppMessage.objects.filter(pk=message.pk).update(status=MessageStatus.FAILED, error_code=code[:40],
                                                         error_message=text[:300], next_attempt_at=None,
                                                         body=stored_text(message.body), updated_at=timezone.now())
    return MessageStatus.FAILED


def outbound_send(*, message_id: int, now: dt.datetime | None = None) -> str:
    """Send one stored reply through the Graph API (claimed first, so two workers never both send it)."""
    now = now or timezone.now()
    claimed = WhatsAppMessage.objects.filter(pk=message_id, direction=Direction.OUT).filter(
        Q(status=MessageStatus.QUEUED)
        | Q(status__in=[MessageStatus.RETRYING, MessageStatus.SENDING], next_attempt_at__lte=now)
    ).update(status=MessageStatus.SENDING, next_attempt_at=now + SEND_LEASE, attempts=F("attempts") + 1,
             updated_at=timezone.now())
    if not claimed:
        return "skipped"
    message = WhatsAppMessage.objects.select_related("contact", "reply_to").get(pk=message_id)
    contact = message.contact
    if contact.opted_out_at and message.source != Source.NOTICE:
        return _fail(message, code="opted_out", text="The customer sent STOP; nothing is sent to them.")
    if not window_open(contact, now=now):
        return _fail(message, code="outside_window",
                     text="More than 24 hours since the customer's last message: WhatsApp only accepts templates.")
    number = _number_of(contact)
    if number is None:
        return _fail(message, code="no_number", text="No connected WhatsApp number for this conversation.")
    reply_to = message.reply_to.wamid if message.reply_to_id and message.reply_to and message.reply_to.wamid else ""
    try:
        sent = graph.send_text(phone_number_id=number.phone_number_id, token=secret_decrypt(number.access_token_encrypted),
                               to=contact.wa_id, body=message.body, reply_to_wamid=reply_to)
    except graph.GraphError as exc:
        return _send_failed(message, exc, now=now)
    with transaction.atomic():
        # The text went out whole (a hand-off reply names the number the team will call); the copy kept from
        # now on follows REDACT_STORED_MESSAGES, like the turn it came from.
        WhatsAppMessage.objects.filter(pk=message.pk).update(status=MessageStatus.SENT, wamid=sent.wamid,
                                                             sent_at=timezone.now(), next_attempt_at=None,
                                                             body=stored_text(message.body), error_code="",
                                                             error_message="", updated_at=timezone.now())
        message = WhatsAppMessage.objects.select_for_update().get(pk=message.pk)
        # A status can arrive before the send call returned the message id: apply what is already stored.
        for status in WhatsAppStatus.objects.filter(wamid=sent.wamid).order_by("created_at"):
            WhatsAppStatus.objects.filter(pk=status.pk).update(message=message)
            _status_apply(message, status.status, status.errors)
    return message.status


def _send_failed(message: WhatsAppMessage, exc: graph.GraphError, *, now: dt.datetime) -> str:
    if exc.code == graph.OUTSIDE_WINDOW:
        return _fail(message, code="outside_window", text=str(exc))
    rounds_left = message.attempts < settings.WHATSAPP_SEND_ROUNDS
    if not (exc.retryable and rounds_left):
        return _fail(message, code=exc.code, text=str(exc))
    delay = dt.timedelta(seconds=min(3600, 30 * 2 ** (message.attempts - 1)))
    WhatsAppMessage.objects.filter(pk=message.pk).update(status=MessageStatus.RETRYING, next_attempt_at=now + delay,
                                                         error_code=exc.code[:40], error_message=str(exc)[:300],
                                                         updated_at=timezone.now())
    return MessageStatus.RETRYING


# ----------------------------------------------------------------------------- a person takes over


def contact_for_session(session: Session) -> WhatsAppContact | None:
    return WhatsAppContact.objects.filter(session=session).first()


def contact_takeover(*, contact: WhatsAppContact, by: str) -> WhatsAppContact:
    """Pause the bot for this customer: their messages are kept for a person to answer."""
    contact.paused_at, contact.paused_by = timezone.now(), by[:150]
    contact.save(update_fields=["paused_at", "paused_by", "updated_at"])
    return contact


def contact_release(*, contact: WhatsAppContact) -> WhatsAppContact:
    """Give the conversation back to the bot (messages held meanwhile stay unanswered by it)."""
    contact.paused_at, contact.paused_by = None, ""
    contact.save(update_fields=["paused_at", "paused_by", "updated_at"])
    return contact


def check_can_message(contact: WhatsAppContact) -> None:
    """Raise ChannelError when WhatsApp would not deliver a free-form message to this customer now."""
    if contact.opted_out_at:
        raise ChannelError("This customer sent STOP: WhatsApp messages to them are off.", code="opted_out")
    if not window_open(contact):
        raise ChannelError("More than 24 hours have passed since the customer's last message; WhatsApp only "
                           "allows approved templates now. Call them instead.", code="outside_window")
    if _number_of(contact) is None:
        raise ChannelError("No WhatsApp number is connected for this conversation.", code="no_number")


def owner_reply(*, contact: WhatsAppContact, body: str, by: str) -> WhatsAppMessage:
    """A person's reply to the customer, sent through the Graph API like the bot's."""
    body = (body or "").strip()
    if not body:
        raise ChannelError("Write a reply first.", code="empty")
    if len(body) > graph.MAX_BODY_CHARS:
        raise ChannelError(f"A WhatsApp message holds at most {graph.MAX_BODY_CHARS} characters.", code="too_long")
    check_can_message(contact)
    with transaction.atomic():
        reply = WhatsAppMessage.objects.create(direction=Direction.OUT, contact=contact, kind="text", body=body,
                                               source=Source.OWNER, status=MessageStatus.QUEUED, sent_by=by[:150])
        _on_commit_enqueue("channels.whatsapp_send", reply.pk)
    return reply


def notice_send(*, to: str, body: str, phone_number_id: str) -> WhatsAppMessage:
    """A message from the business to a number (the owner's hand-off alert), sent if the window allows."""
    contact, _ = WhatsAppContact.objects.get_or_create(wa_id=to, defaults={"phone_number_id": phone_number_id})
    with transaction.atomic():
        message = WhatsAppMessage.objects.create(direction=Direction.OUT, contact=contact, kind="text", body=body,
                                                 source=Source.NOTICE, status=MessageStatus.QUEUED)
        _on_commit_enqueue("channels.whatsapp_send", message.pk)
    return message
