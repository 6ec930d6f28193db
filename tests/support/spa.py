"""The small spa many suites answer from (services, hours, six snippets), built through the product's services."""
from __future__ import annotations

from datetime import date

from knowledge.models import SnippetVersion
from knowledge.services import (opening_hours_set_week, service_upsert, snippet_version_create,
                                snippet_versions_embed, special_day_set)

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


def seed_facts() -> None:
    """The spa's services, weekly hours and special days."""
    for position, (name, minutes, price) in enumerate(SERVICES):
        service_upsert(name=name, duration_minutes=minutes, price=price, currency="KES", position=position,
                       description=f"{name} description.")
    opening_hours_set_week(week={weekday: [f"{opens}-{closes}"] for weekday, (opens, closes) in WEEKLY.items()})
    for day, ranges, note in SPECIAL:
        special_day_set(date=day, ranges=[f"{opens}-{closes}" for opens, closes in ranges], note=note)


def seed_snippets(*, embed: bool = True, items=SNIPPETS) -> list[SnippetVersion]:
    """The spa's live snippets, embedded with whichever embedder the test runs with unless embed=False."""
    versions = [snippet_version_create(key=key, title=title, body=body, category=category, role="retrieved",
                                       status="canonical", last_reviewed_at=date(2026, 5, 1),
                                       enforce_release_gate=False, queue_embedding=False)
                for key, category, title, body in items]
    if embed:
        snippet_versions_embed(version_ids=[version.pk for version in versions])
        for version in versions:
            version.refresh_from_db()
    return versions


def seed_all() -> None:
    seed_facts()
    seed_snippets()
