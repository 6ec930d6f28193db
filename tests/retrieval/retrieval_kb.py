"""Fixtures and helpers for retrieval tests (snippets through the real services, real embeddings).

Imported by each test module rather than kept in a conftest.py: other suites import names from
`conftest`, which must not resolve to this directory's module."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

SPA = [
    dict(key="parking", category="facility", title="Parking", status="canonical", related=["location"],
         body="Free parking is available for guests in the basement for up to 3 hours. Enter from Rhapta Road "
              "and bring your ticket to reception."),
    dict(key="location", category="facility", title="Where to find us", related=["parking"],
         body="We are on the ground floor of Kivuli Court, 14 Rhapta Road, Westlands, Nairobi."),
    dict(key="cancellation", category="policy", title="Cancellation policy", status="canonical",
         body="You can cancel or move a booking free of charge up to 12 hours before your appointment. Later "
              "cancellations are charged 50% and no-shows in full."),
    dict(key="massage_styles", category="service", title="Choosing a massage",
         body="Swedish massage uses light pressure for stress; deep tissue uses firm pressure for knots."),
    dict(key="gift_vouchers", category="general", title="Gift vouchers",
         body="Gift vouchers can be bought at reception for an amount or a treatment and are valid 6 months."),
    dict(key="holiday_hours", category="hours", title="Public holiday hours",
         body="On public holidays we open from 10:00 to 16:00. We are closed on Christmas Day."),
]


def make_kb():
    from knowledge.services import snippet_version_create, snippet_versions_embed

    def create(*, key: str, title: str, body: str, category: str = "general", role: str = "retrieved",
               status: str = "accepted", channels: list[str] | None = None, tags: list[str] | None = None,
               related: list[str] | None = None, valid_from=None, valid_until=None, embed: bool = True,
               language: str = "en"):
        version = snippet_version_create(
            key=key, title=title, body=body, category=category, role=role, status=status, channels=channels,
            tags=tags or [], related_keys=related or [], valid_from=valid_from, valid_until=valid_until,
            language=language, activate=True, enforce_release_gate=False, queue_embedding=False,
            check_related=False)
        if embed:
            snippet_versions_embed(version_ids=[version.pk])
            version.refresh_from_db(fields=["embedding_state"])
        return version

    create.spa = lambda: [create(**item) for item in SPA]
    return create


def embedder_down(*_args, **_kwargs):
    """Stands in for an embedding call while the model is unavailable."""
    from knowledge.embeddings import EmbeddingError

    raise EmbeddingError("model unavailable", retryable=True)


@pytest.fixture
def kb(tenant, real_embedder):
    """A builder: kb(key=..., title=..., ...) makes an active version, embedded by the real model unless embed=False."""
    return make_kb()


@pytest.fixture
def mode(tenant):
    """Set the tenant's retrieval mode: mode("hybrid") / mode("inline") / mode("auto")."""
    from knowledge.retrieval.config import retrieval_settings_get

    def set_mode(value: str, **params):
        row = retrieval_settings_get()
        row.mode = value
        row.current_mode = "inline" if value == "auto" else value
        for name, param in params.items():
            setattr(row, name, param)
        row.save()
        return row

    return set_mode


@dataclass
class Cand:
    """The candidate fields the refusal decision reads (a retrieval candidate without the database)."""

    title: str
    body: str
    similarity: float | None = 0.6
    title_similarity: float = 0.5
    keyword_rank: float = 0.1
    idf_coverage: float = 0.5
    heading_terms: int = 1
    query_terms: int = 2
    source: str = "snippet"
    key: str = ""

    @property
    def coverage(self) -> float:
        return self.idf_coverage
