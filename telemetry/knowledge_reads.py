"""The few things telemetry reads from knowledge, in one place (so the dependency stays small and visible)."""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActiveSection:
    key: str
    version: int
    title: str
    token_count: int
    activated_at: dt.datetime | None


@dataclass(frozen=True)
class ClosestSnippet:
    key: str
    version: int
    title: str
    similarity: float

    def as_dict(self) -> dict:
        return {"key": self.key, "version": self.version, "title": self.title, "similarity": self.similarity}


@dataclass(frozen=True)
class ModeInfo:
    configured: str  # auto | inline | hybrid
    current: str  # inline | hybrid
    graduated_at: dt.datetime | None


@dataclass(frozen=True)
class ReviewItem:
    key: str
    version: int
    title: str
    reason: str  # "expiring" | "expired" | "unreviewed"
    date: dt.date | None


def active_retrieved_sections() -> list[ActiveSection]:
    """Active, usable retrieved-role snippet versions (the ones retrieval can return)."""
    from knowledge.models import Role, SnippetVersion, Status

    rows = (SnippetVersion.objects.filter(is_active=True, role=Role.RETRIEVED)
            .exclude(status__in=[Status.DRAFT, Status.DEPRECATED])
            .order_by("key").values_list("key", "version", "title", "token_count", "activated_at"))
    return [ActiveSection(*row) for row in rows]


def retrieval_mode() -> ModeInfo:
    """The tenant's configured and current retrieval mode (defaults when no settings row exists yet)."""
    from knowledge.models import RetrievalSettings

    row = RetrievalSettings.objects.order_by("pk").values("mode", "current_mode", "graduated_at").first()
    if row is None:
        return ModeInfo(configured="auto", current="inline", graduated_at=None)
    return ModeInfo(configured=row["mode"], current=row["current_mode"], graduated_at=row["graduated_at"])


def closest_snippets(*, vector: list[float], limit: int = 3) -> list[ClosestSnippet]:
    """Active retrieved snippets nearest to a vector by cosine similarity."""
    from django.db.models import FloatField, Value
    from knowledge.models import Role, SnippetVersion
    from pgvector.django import CosineDistance

    # "+ 0" keeps the planner off the HNSW index: an approximate scan filtered afterwards (active, retrieved)
    # can return fewer rows than asked, and which plan is chosen depends on the table's statistics.
    distance = CosineDistance("embedding", vector) + Value(0.0, output_field=FloatField())
    rows = (SnippetVersion.objects.filter(is_active=True, role=Role.RETRIEVED, embedding__isnull=False)
            .annotate(distance=distance).order_by("distance")
            .values_list("key", "version", "title", "distance")[:limit])
    return [ClosestSnippet(key=key, version=version, title=title, similarity=round(1 - float(distance), 3))
            for key, version, title, distance in rows]


def snippets_needing_review(*, today: dt.date, expiring_within_days: int = 14,
                            unreviewed_days: int = 90) -> list[ReviewItem]:
    """Active snippets that expire soon (or already have) or have not been reviewed for `unreviewed_days`."""
    from knowledge.models import SnippetVersion

    active = SnippetVersion.objects.filter(is_active=True)
    items: list[ReviewItem] = []
    horizon = today + dt.timedelta(days=expiring_within_days)
    for key, version, title, until in (active.filter(valid_until__isnull=False, valid_until__lte=horizon)
                                       .order_by("valid_until", "key")
                                       .values_list("key", "version", "title", "valid_until")):
        items.append(ReviewItem(key, version, title, "expired" if until < today else "expiring", until))
    cutoff = today - dt.timedelta(days=unreviewed_days)
    cutoff_dt = timezone.make_aware(dt.datetime.combine(cutoff, dt.time.min), dt.timezone.utc)
    # Never reviewed counts from when the version went live (or was written).
    stale = active.filter(Q(last_reviewed_at__lt=cutoff)
                          | Q(last_reviewed_at__isnull=True, activated_at__lt=cutoff_dt)
                          | Q(last_reviewed_at__isnull=True, activated_at__isnull=True, created_at__lt=cutoff_dt))
    for key, version, title, reviewed in stale.order_by("key").values_list("key", "version", "title",
                                                                           "last_reviewed_at"):
        items.append(ReviewItem(key, version, title, "unreviewed", reviewed))
    return items


@dataclass(frozen=True)
class Reanswer:
    """What retrieval says about a question today."""

    answered: bool
    snippets: list[dict]  # [{key, version, title}]


def reanswer(*, question: str) -> Reanswer | None:
    """Re-run retrieval for an old question; None when retrieval is unavailable (never raises).

    A background run: no overflow event, no change of the tenant's retrieval mode (no customer asked).
    """
    try:
        from knowledge.retrieval import retrieve
    except ImportError:
        return None
    try:
        result = retrieve(intent="other", query=question, channel="chat", record=False)
    except Exception:  # noqa: BLE001 - a digest must still be built when retrieval fails
        logger.exception("re-running retrieval for a gap question failed")
        return None
    snippets = [{"key": s.key, "version": s.version, "title": s.title} for s in result.snippets
                if getattr(s, "source", "snippet") == "snippet" and s.match_type != "related"]
    answered = not result.refusal_reason and not result.empty and bool(snippets)
    return Reanswer(answered=answered, snippets=snippets)


def activated_since(*, keys: list[str], since: dt.datetime) -> set[str]:
    """Which of `keys` had a version activated (written or changed) after `since`."""
    from knowledge.models import SnippetVersion

    return set(SnippetVersion.objects.filter(key__in=keys, is_active=True)
               .filter(Q(activated_at__gt=since) | Q(activated_at__isnull=True, created_at__gt=since))
               .values_list("key", flat=True))


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-normalised embeddings from the deployment's provider (raises EmbeddingError)."""
    from knowledge.embeddings import embed_texts

    return embed_texts(texts)


@dataclass(frozen=True)
class UntranslatedSection:
    key: str
    version: int
    title: str


def without_language_version(*, keys: list[str], language: str) -> list[UntranslatedSection]:
    """Active retrieved snippets among `keys` that have no owner-approved version in `language`."""
    from knowledge.models import Role, SnippetVersion

    rows = (SnippetVersion.objects.filter(is_active=True, role=Role.RETRIEVED, key__in=keys)
            .values_list("key", "version", "title", "translations"))
    return [UntranslatedSection(key=key, version=version, title=title) for key, version, title, translations in rows
            if not str(((translations or {}).get(language) or {}).get("body") or "").strip()]
