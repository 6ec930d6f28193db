"""Hand-offs the owner hears about: a mail to the staff (and a WhatsApp alert to the owner) when one is
recorded, and what the hand-off page shows: open requests with their conversation and the customer's contact.
"""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from functools import partial

from django.core.mail import EmailMultiAlternatives
from django.db import connection, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django_tenants.utils import schema_context

from channels.models import HandoffAlert, MessageStatus, Source, WhatsAppContact, WhatsAppMessage
from channels.registry.models import WhatsAppNumber
from channels.whatsapp import services as whatsapp
from conversations.models import HandoffRequest, HandoffStatus
from conversations.services import handoff_set_status
from ratiba.models import Tenant
from telemetry.digest import _tenant_name_and_link, digest_recipients

log = logging.getLogger(__name__)

OPEN_STATUSES = (HandoffStatus.NEW, HandoffStatus.CONTACTED)
CONVERSATION_LINES = 30


# ----------------------------------------------------------------------------- announcing


def _publish(task_name: str, handoff_id: int, *, schema: str) -> None:
    from channels import tasks  # tasks import this module

    try:
        with schema_context(schema):
            getattr(tasks, task_name).delay(handoff_id)
    except Exception as exc:  # noqa: BLE001 - the hand-off is stored and listed whatever happens to the alert
        log.warning("hand-off %s: %s not queued: %s", handoff_id, task_name, exc)


def handoff_announce_on_commit(handoff: HandoffRequest) -> None:
    """Queue the alert for a hand-off once the turn that recorded it commits (HANDOFF_ANNOUNCER)."""
    transaction.on_commit(partial(_publish, "handoff_announce", handoff.pk, schema=connection.schema_name),
                          robust=True)


def handoff_contact_announce_on_commit(handoff: HandoffRequest) -> None:
    """Queue the mail telling staff a hand-off's contact arrived, once the turn commits (HANDOFF_CONTACT_ANNOUNCER)."""
    transaction.on_commit(partial(_publish, "handoff_contact_announce", handoff.pk,
                                  schema=connection.schema_name), robust=True)


def _whatsapp_contact(handoff: HandoffRequest) -> WhatsAppContact | None:
    return WhatsAppContact.objects.filter(session_id=handoff.session_id).first() if handoff.session_id else None


def contact_label(handoff: HandoffRequest, contact: WhatsAppContact | None = None) -> str:
    """How to reach the customer: what they gave, else their WhatsApp number."""
    contact = contact if contact is not None else _whatsapp_contact(handoff)
    parts = [handoff.contact] if handoff.contact else []
    if contact is not None:
        parts.append(f"+{contact.wa_id} (WhatsApp{', ' + contact.name if contact.name else ''})")
    return " · ".join(parts) or "not given yet"


def _alert_text(handoff: HandoffRequest, *, contact: str) -> str:
    parts = [handoff.get_kind_display(), handoff.what, handoff.when_text]
    return f"New {' · '.join(p for p in parts if p)} request. Contact: {contact}. “{handoff.message[:200]}”"


def handoff_announce(*, handoff_id: int) -> str:
    """Mail the staff about a hand-off and alert the owner's WhatsApp; does nothing the second time."""
    with transaction.atomic():
        handoff = HandoffRequest.objects.filter(pk=handoff_id).first()
        if handoff is None:
            return "missing"
        alert, _ = HandoffAlert.objects.get_or_create(handoff=handoff)
        alert = HandoffAlert.objects.select_for_update().get(pk=alert.pk)
        if alert.mailed_at or alert.note:
            return "already announced"
        contact = contact_label(handoff)
        recipients = digest_recipients()
        if recipients:
            _mail(handoff, contact=contact, recipients=recipients, update=False)
            alert.mailed_to, alert.mailed_at, alert.contact_announced = recipients, timezone.now(), contact
        else:
            alert.note = "No staff user has an email address: nobody was mailed."
        number = (WhatsAppNumber.objects.filter(tenant__schema_name=connection.schema_name).exclude(owner_number="")
                  .first())
        if number is not None:
            alert.whatsapp_message = whatsapp.notice_send(
                to=number.owner_number, body=_alert_text(handoff, contact=contact),
                phone_number_id=number.phone_number_id)
        alert.save()
    return "announced"


def handoff_contact_announce(*, handoff_id: int) -> str:
    """Mail the staff the contact a customer sent after their hand-off was announced; once per new contact.

    Before the first mail has gone out there is nothing to add: that mail reads the contact when it is sent.
    """
    with transaction.atomic():
        alert = HandoffAlert.objects.select_for_update().filter(handoff_id=handoff_id).first()
        if alert is None or alert.mailed_at is None:
            return "not announced yet"
        handoff = alert.handoff
        contact = contact_label(handoff)
        if contact == alert.contact_announced:
            return "already told"
        recipients = digest_recipients()
        if not recipients:
            return "nobody to mail"
        _mail(handoff, contact=contact, recipients=recipients, update=True)
        alert.contact_announced = contact
        alert.save(update_fields=["contact_announced"])
    return "contact announced"


def _mail(handoff: HandoffRequest, *, contact: str, recipients: list[str], update: bool) -> None:
    """The staff mail for a hand-off (text and HTML): a new request, or the contact it now has."""
    name, base = _tenant_name_and_link()
    what = f"{handoff.get_kind_display().lower()} request" + (f": {handoff.what}" if handoff.what else "")
    subject = f"[{name}] {'Contact for' if update else 'New'} {what}"[:200]
    # Staff read the time in the business's own zone, as on the hand-off page.
    zone = Tenant.objects.filter(schema_name=connection.schema_name).values_list("timezone", flat=True).first()
    context = {"handoff": handoff, "contact": contact, "business": name, "subject": subject, "update": update,
               "link": f"{base}/handoffs/#handoff-{handoff.pk}", "zone": zone or "UTC"}
    mail = EmailMultiAlternatives(subject=subject, to=recipients,
                                  body=render_to_string("channels/email/handoff_new.txt", context))
    mail.attach_alternative(render_to_string("channels/email/handoff_new.html", context), "text/html")
    mail.send()


# ----------------------------------------------------------------------------- the hand-off page


@dataclass(frozen=True)
class Line:
    at: dt.datetime
    who: str  # customer | bot | owner | notice
    text: str
    status: str = ""
    error: str = ""


@dataclass
class HandoffCard:
    handoff: HandoffRequest
    contact: str
    whatsapp: WhatsAppContact | None
    can_message: bool
    cannot_message_reason: str
    lines: list[Line] = field(default_factory=list)


def _whatsapp_lines(contact: WhatsAppContact) -> list[Line]:
    rows = list(WhatsAppMessage.objects.filter(contact=contact).order_by("-created_at", "-id")[:CONVERSATION_LINES])
    lines = []
    for row in reversed(rows):
        text = row.body or f"[{row.kind}]"
        status = row.status if row.direction == "out" else ("held for you" if row.status == MessageStatus.HELD else "")
        error = f"{row.error_code}: {row.error_message}" if row.status == MessageStatus.FAILED else ""
        lines.append(Line(at=row.created_at, who=row.source, text=text, status=status, error=error))
    return lines


def _turn_lines(handoff: HandoffRequest) -> list[Line]:
    if not handoff.session_id:
        return [Line(at=handoff.created_at, who=Source.CUSTOMER, text=handoff.message)]
    turns = list(handoff.session.turns.order_by("-created_at", "-id")[: CONVERSATION_LINES // 2])
    lines = []
    for turn in reversed(turns):
        lines.append(Line(at=turn.created_at, who=Source.CUSTOMER, text=turn.message))
        if turn.answer:
            lines.append(Line(at=turn.created_at, who=Source.BOT, text=turn.answer))
    return lines


def handoff_cards(*, include_done: bool = False, limit: int = 50) -> list[HandoffCard]:
    """Open hand-offs, newest first, each with its conversation and whether a WhatsApp reply can go out."""
    rows = HandoffRequest.objects.select_related("session").order_by("-created_at")
    if not include_done:
        rows = rows.filter(status__in=OPEN_STATUSES)
    cards = []
    for handoff in rows[:limit]:
        contact = _whatsapp_contact(handoff)
        reason = ""
        if contact is not None:
            try:
                whatsapp.check_can_message(contact)
            except whatsapp.ChannelError as exc:
                reason = str(exc)
        cards.append(HandoffCard(handoff=handoff, contact=contact_label(handoff, contact), whatsapp=contact,
                                 can_message=contact is not None and not reason, cannot_message_reason=reason,
                                 lines=_whatsapp_lines(contact) if contact is not None else _turn_lines(handoff)))
    return cards


def failed_replies(*, days: int = 7) -> list[WhatsAppMessage]:
    """WhatsApp messages that could not be sent lately (the owner should know a customer got no answer)."""
    since = timezone.now() - dt.timedelta(days=days)
    return list(WhatsAppMessage.objects.filter(direction="out", status=MessageStatus.FAILED, updated_at__gte=since)
                .select_related("contact").order_by("-updated_at")[:50])


class HandoffActionError(Exception):
    """An action on the hand-off page that cannot be done, with the reason to show."""


def handoff_act(*, handoff: HandoffRequest, action: str, by: str, reply: str = "") -> str:
    """Apply a hand-off page action (done, contacted, reopen, takeover, release, reply); returns what happened."""
    if action in ("done", "contacted", "dismissed"):
        handoff_set_status(handoff=handoff, status=action)
        return f"Marked {action}."
    if action == "reopen":
        handoff_set_status(handoff=handoff, status=HandoffStatus.NEW)
        return "Reopened."
    contact = _whatsapp_contact(handoff)
    if contact is None:
        raise HandoffActionError("This conversation is not on WhatsApp.")
    if action == "takeover":
        whatsapp.contact_takeover(contact=contact, by=by)
        return "You have taken over: the assistant will not answer this customer until you hand back."
    if action == "release":
        whatsapp.contact_release(contact=contact)
        return "Handed back to the assistant."
    if action == "reply":
        try:
            whatsapp.owner_reply(contact=contact, body=reply, by=by)
        except whatsapp.ChannelError as exc:
            raise HandoffActionError(str(exc)) from exc
        if handoff.status == HandoffStatus.NEW:
            handoff_set_status(handoff=handoff, status=HandoffStatus.CONTACTED)
        return "Reply queued for WhatsApp."
    raise HandoffActionError(f"Unknown action {action!r}.")
