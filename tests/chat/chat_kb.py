"""Test data for the chat tests: a small spa with services, hours, special days and snippets."""
from __future__ import annotations

from datetime import date, time
from decimal import Decimal

from knowledge.models import OpeningHours, Service, SnippetVersion, Snippet, SpecialDay, SpecialHours

SNIPPETS = [
    ("parking", "facility", "Parking", "Free parking for guests is available in the basement of Mirage Tower; "
     "tell the guard you are visiting the spa. Street parking on Waiyaki Way is not recommended."),
    ("cancellation_policy", "policy", "Cancellation policy", "You can cancel or move a booking free of charge up "
     "to 12 hours before your appointment. Later cancellations are charged 50% of the treatment price."),
    ("arrive_early", "prep", "Arrive early", "Please arrive 15 minutes before your appointment to fill in the "
     "consultation form and change. Late arrivals may get a shorter treatment."),
    ("payment_methods", "policy", "Ways to pay", "We accept M-Pesa (Till 5123987), Visa and Mastercard, and "
     "cash in Kenyan shillings. We do not accept cheques."),
    ("public_holiday_hours", "hours", "Public holiday hours", "On Kenyan public holidays we usually open from "
     "10:00 to 16:00. We are closed on Christmas Day and New Year's Day."),
    ("signature_facial_details", "service", "Signature facial", "The Signature Aura Facial includes a "
     "consultation, double cleanse, exfoliation, extractions and a mask. It suits sensitive skin."),
]

SERVICES = [
    ("Swedish Relaxation Massage", 60, "4500.00"),
    ("Deep Tissue Massage", 60, "5500.00"),
    ("Hot Stone Massage", 90, "7500.00"),
    ("Signature Aura Facial", 75, "6000.00"),
    ("Spa Pedicure", 60, "2800.00"),
    ("Bridal Glow Package", 240, "16500.00"),
]

WEEKLY = {0: ("09:00", "20:00"), 1: ("09:00", "20:00"), 2: ("09:00", "20:00"), 3: ("09:00", "20:00"),
          4: ("09:00", "21:00"), 5: ("09:00", "19:00"), 6: ("10:00", "17:00")}

SPECIAL = [
    (date(2026, 6, 1), [("10:00", "16:00")], "Madaraka Day (public holiday hours)"),
    (date(2026, 8, 17), [], "Closed all day for annual staff training"),
    (date(2026, 12, 24), [("09:00", "15:00")], "Christmas Eve, early close"),
    (date(2026, 12, 25), [], "Christmas Day, closed"),
]


def _t(text: str) -> time:
    return time.fromisoformat(text)


def seed_facts() -> None:
    for position, (name, minutes, price) in enumerate(SERVICES):
        Service.objects.create(name=name, duration_minutes=minutes, price=Decimal(price), currency="KES",
                               position=position, description=f"{name} description.")
    for weekday, (opens, closes) in WEEKLY.items():
        OpeningHours.objects.create(weekday=weekday, opens=_t(opens), closes=_t(closes))
    for day, ranges, note in SPECIAL:
        special = SpecialDay.objects.create(date=day, note=note)
        for opens, closes in ranges:
            SpecialHours.objects.create(day=special, opens=_t(opens), closes=_t(closes))


def seed_snippets(*, embed: bool = True, items=SNIPPETS) -> list[SnippetVersion]:
    from knowledge.embeddings import embed_texts

    versions = []
    for key, category, title, body in items:
        snippet = Snippet.objects.create(key=key)
        versions.append(SnippetVersion.objects.create(
            snippet=snippet, key=key, version=1, title=title, body=body, category=category,
            status="canonical", is_active=True, token_count=len(body.split()) * 4 // 3,
            last_reviewed_at=date(2026, 5, 1)))
    if embed:
        vectors = embed_texts([f"{v.title}\n{v.body}" for v in versions])
        for version, vector in zip(versions, vectors):
            version.embedding = vector
            version.embedding_state = "done"
            version.save(update_fields=["embedding", "embedding_state"])
    return versions


def seed_all() -> None:
    seed_facts()
    seed_snippets()
