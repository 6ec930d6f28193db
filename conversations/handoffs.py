"""Booking, cancellation and reschedule requests: what the customer asked for, handed to a person.

The bot never books by itself (the guardrails forbid confirming a slot); it records a HandoffRequest
the owner sees in the admin and tells the customer what happens next, in their language.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.utils.module_loading import import_string

from conversations.facts import match_services, resolve_dates, services_list, tenant_today
from conversations.models import HandoffRequest, Session, Turn
from ratiba.redaction import stored_text

# Kenyan mobile numbers as typed (+254 7xx, 2547xx, 07xx, 01xx, with spaces or dashes) and e-mail addresses.
_PHONE = re.compile(r"(?<![\d+])(?:\+?254[\s-]?|0)(?:7|1)\d{2}[\s-]?\d{3}[\s-]?\d{3}(?!\d)")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
CONTACT_PATTERNS = (_PHONE, _EMAIL)
_TIME = re.compile(r"\b(?:at\s+|saa\s+)?(\d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}:\d{2})\b"
                   r"|\b(morning|afternoon|evening|tonight|asubuhi|mchana|jioni|usiku)\b", re.I)


@dataclass(frozen=True)
class HandoffDetails:
    what: str
    when_text: str
    contact: str


def extract_details(*, message: str) -> HandoffDetails:
    """The service, day/time and contact a message mentions (each may be empty)."""
    services = services_list()
    what = ", ".join(match_services(message, services))[:200]
    days = [label for _, label in resolve_dates(message, today=tenant_today())]
    times = [(m.group(1) or m.group(2)).strip() for m in _TIME.finditer(message)]
    when_text = ", ".join(dict.fromkeys(days + times))[:200]
    return HandoffDetails(what=what, when_text=when_text, contact=", ".join(extract_contacts(message))[:200])


def extract_contacts(text: str) -> list[str]:
    """Phone numbers and e-mail addresses in a text, as typed, each once."""
    contacts = [m.group(0).strip() for m in _PHONE.finditer(text or "")] + _EMAIL.findall(text or "")
    return list(dict.fromkeys(contacts))


def merged_contact(*values: str) -> str:
    """Names, numbers and addresses as one contact line ("Wanjiku, 0712 345 678"), each once, in order."""
    parts: list[str] = []
    for value in values:
        for part in (value or "").split(","):
            if part.strip() and part.strip() not in parts:
                parts.append(part.strip())
    return ", ".join(parts)[:200]


def handoff_record(*, kind: str, session: Session, turn: Turn | None, message: str, channel: str,
                   name: str = "") -> HandoffRequest:
    """Store a request for the business to follow up (with the customer's name when they gave it)."""
    details = extract_details(message=message)
    # The contact stays readable even with REDACT_STORED_MESSAGES: calling the customer back is the point.
    handoff = HandoffRequest.objects.create(kind=kind, session=session, turn=turn, message=stored_text(message),
                                            channel=channel, what=details.what, when_text=details.when_text,
                                            contact=merged_contact(name, details.contact))
    # The business hears about it (staff mail, owner's WhatsApp) once the turn commits; a dotted path in
    # settings, so conversations does not import the channels that deliver the alert.
    if settings.HANDOFF_ANNOUNCER:
        import_string(settings.HANDOFF_ANNOUNCER)(handoff)
    return handoff


def handoff_contact_add(*, handoff: HandoffRequest, contact: str = "", name: str = "",
                        note: str = "") -> HandoffRequest:
    """Attach the phone/e-mail and name a customer gave after the bot asked for them, and their `note`."""
    # Kept readable like the contact above; the note is what else they wrote with them ("it's for my mum in
    # Kiamunyi"), added to the request's message for the team.
    handoff.contact = merged_contact(handoff.contact or "", name, contact)
    fields = ["contact", "updated_at"]
    if note.strip():
        handoff.message = f"{handoff.message}\n{stored_text(note.strip())}"
        fields.append("message")
    handoff.save(update_fields=fields)
    if settings.HANDOFF_CONTACT_ANNOUNCER:
        # Staff were mailed without it: they hear about the contact too (channels), once it commits.
        import_string(settings.HANDOFF_CONTACT_ANNOUNCER)(handoff)
    return handoff


_NEXT_STEPS = {
    "en": {
        "booking": "I've passed your booking request to our team. They will confirm the time with you shortly{contact}.",
        "cancel": "I've passed your cancellation request to our team. They will confirm it with you shortly{contact}.",
        "reschedule": ("I've passed your request to move your booking to our team. They will confirm a new time "
                       "with you shortly{contact}."),
        # A call-back is asked for by sending a contact, so it always has one.
        "callback": ("Thank you{name}. I've passed your message to our team; they will get back to you "
                     "shortly{contact}."),
        "contact_known": " on {contact}",
        "contact_missing": ". Please share your phone number so they can reach you",
    },
    "sw": {
        "booking": "Nimewapa wenzangu ombi lako la kuweka miadi. Watakuthibitishia muda hivi punde{contact}.",
        "cancel": "Nimewapa wenzangu ombi lako la kughairi miadi. Watakuthibitishia hivi punde{contact}.",
        "reschedule": ("Nimewapa wenzangu ombi lako la kuhamisha miadi. Watakuthibitishia muda mpya hivi "
                       "punde{contact}."),
        "callback": "Asante{name}. Nimewapa wenzangu ujumbe wako; watawasiliana nawe hivi punde{contact}.",
        "contact_known": " kupitia {contact}",
        "contact_missing": ". Tafadhali tuma namba yako ya simu ili wakupigie",
    },
}


def next_step_text(*, kind: str, language: str, contact: str, channel: str, name: str = "") -> str:
    """What happens next, in the customer's language (WhatsApp already knows the number)."""
    table = _NEXT_STEPS["sw" if language == "sw" else "en"]
    if contact:
        suffix = table["contact_known"].format(contact=contact)
    elif channel == "whatsapp":
        suffix = ""
    else:
        suffix = table["contact_missing"]
    return table[kind].format(contact=suffix, name=f", {name}" if name else "")
