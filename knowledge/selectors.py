"""Knowledge reads for the admin and the authoring API (retrieval lives in knowledge.retrieval)."""
from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass

from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from knowledge.models import SNIPPET_HEAVY_FIELDS, EmbeddingState, OpeningHours, Service, SnippetVersion, SpecialDay


def stale_versions() -> QuerySet[SnippetVersion]:
    """Versions waiting for a vector: pending ones, and those embedded by another model than the current one
    (a failed one waits for its next edit or `reembed`)."""
    from knowledge.embeddings import embedding_model_name

    return SnippetVersion.objects.filter(
        Q(embedding_state=EmbeddingState.PENDING)
        | Q(embedding_state=EmbeddingState.DONE) & ~Q(embedding_model=embedding_model_name()))


def snippet_version_list(*, filters: dict | None = None, active_only: bool = True) -> QuerySet[SnippetVersion]:
    """Versions (active ones by default), filtered by category, role, status, channel, tag, language,
    embedding_state, `q` (title/key/body contains), `expiring_within_days`; never loads the vector."""
    filters = filters or {}
    queryset = SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS).order_by("key")
    if active_only:
        queryset = queryset.filter(is_active=True)
    for field in ("category", "role", "status", "language", "embedding_state"):
        if filters.get(field):
            queryset = queryset.filter(**{field: filters[field]})
    if filters.get("channel"):
        queryset = queryset.filter(channels__contains=[filters["channel"]])
    if filters.get("tag"):
        queryset = queryset.filter(tags__contains=[filters["tag"]])
    if filters.get("q"):
        term = filters["q"]
        queryset = queryset.filter(Q(key__icontains=term) | Q(title__icontains=term) | Q(body__icontains=term))
    if filters.get("expiring_within_days") is not None:
        today = timezone.localdate()
        queryset = queryset.filter(valid_until__gte=today,
                                   valid_until__lte=today + dt.timedelta(days=int(filters["expiring_within_days"])))
    return queryset


def snippet_version_get(*, key: str, version: int | None = None) -> SnippetVersion | None:
    """One version of `key` (`version` None = the active one, else the latest)."""
    queryset = SnippetVersion.objects.defer("search_vector").filter(key=key)
    if version is not None:
        return queryset.filter(version=version).first()
    return queryset.order_by("-is_active", "-version").first()


def snippet_versions_of(*, key: str) -> QuerySet[SnippetVersion]:
    """Every version of `key`, newest first (no vectors loaded)."""
    return SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS).filter(key=key).order_by("-version")


def snippet_pending_count() -> int:
    """How many versions still wait for their embedding."""
    return SnippetVersion.objects.filter(embedding_state=EmbeddingState.PENDING).count()


@dataclass(frozen=True)
class FieldDiff:
    """One field's values in two versions; `lines` is a unified diff for long text."""

    field: str
    old: str
    new: str
    changed: bool
    lines: tuple[str, ...] = ()


def snippet_version_diff(*, old: SnippetVersion, new: SnippetVersion) -> list[FieldDiff]:
    """Field-by-field comparison of two versions (for the admin's side-by-side diff)."""
    from knowledge.services import CONTENT_FIELDS

    result = []
    for field in CONTENT_FIELDS:
        a, b = getattr(old, field), getattr(new, field)
        if field == "translations":
            a, b = _translations_text(a), _translations_text(b)
        text_a = ", ".join(a) if isinstance(a, list) else ("" if a is None else str(a))
        text_b = ", ".join(b) if isinstance(b, list) else ("" if b is None else str(b))
        lines: tuple[str, ...] = ()
        if field == "body" and text_a != text_b:
            lines = tuple(difflib.unified_diff(text_a.splitlines(), text_b.splitlines(),
                                               f"v{old.version}", f"v{new.version}", lineterm=""))
        result.append(FieldDiff(field=field, old=text_a, new=text_b, changed=text_a != text_b, lines=lines))
    return result


def service_list(*, active_only: bool = False) -> QuerySet[Service]:
    """Services in display order."""
    queryset = Service.objects.all()
    return queryset.filter(is_active=True) if active_only else queryset


def opening_hours_week() -> dict[int, list[OpeningHours]]:
    """Weekly ranges per weekday 0-6 ([] = closed)."""
    week: dict[int, list[OpeningHours]] = {day: [] for day in range(7)}
    for row in OpeningHours.objects.order_by("weekday", "opens"):
        week[row.weekday].append(row)
    return week


def special_day_list(*, since: dt.date | None = None) -> QuerySet[SpecialDay]:
    """Dated exceptions (from `since` if given) with their ranges."""
    queryset = SpecialDay.objects.prefetch_related("ranges").order_by("date")
    return queryset.filter(date__gte=since) if since else queryset


@dataclass(frozen=True)
class SmokeTestResult:
    """One stored smoke test run through retrieval: passed when an expected key is in the top `k` and the bot
    would answer (a refusal fails the test even when the expected key was found)."""

    query: str
    expected_keys: tuple[str, ...]
    top_keys: tuple[str, ...]
    passed: bool
    rank: int | None  # 1-based rank of the first expected key found
    mode: str
    refusal_reason: str | None

    @property
    def refused(self) -> bool:
        return bool(self.refusal_reason)


SMOKE_TEST_TOP_K = 5


def smoke_tests_run(*, channel: str = "chat", k: int = SMOKE_TEST_TOP_K) -> list[SmokeTestResult]:
    """Run every stored smoke test through retrieval ("other" intent) in the current schema.

    A background run: it records no overflow event and never changes the tenant's retrieval mode.
    """
    from knowledge.models import SmokeTest
    from knowledge.retrieval import retrieve

    results = []
    for test in SmokeTest.objects.order_by("id"):
        retrieval = retrieve(intent="other", query=test.query, channel=channel, record=False)
        top = tuple(snippet.key for snippet in retrieval.snippets[:k])
        rank = next((index for index, key in enumerate(top, start=1) if key in test.expected_keys), None)
        results.append(SmokeTestResult(query=test.query, expected_keys=tuple(test.expected_keys), top_keys=top,
                                       passed=rank is not None and not retrieval.refusal_reason, rank=rank,
                                       mode=retrieval.mode, refusal_reason=retrieval.refusal_reason))
    return results


def _live_number():
    # No ORDER BY: the model's default ordering would sort inside every correlated lookup (10x slower);
    # the partial unique index makes this one index probe per row.
    return Subquery(SnippetVersion.objects.filter(snippet=OuterRef("snippet"), is_active=True)
                    .order_by().values("version")[:1])


def awaiting_release() -> list[SnippetVersion]:
    """Inactive versions newer than their key's live version (saved unpublished, or held by the release gate)."""
    return list(SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS).select_related("created_by", "snippet")
                .annotate(live_number=_live_number())
                .filter(is_active=False, version__gt=_live_number())
                .order_by("created_at"))


def awaiting_release_count() -> int:
    return SnippetVersion.objects.filter(is_active=False, version__gt=_live_number()).order_by().count()


def _translations_text(value: dict | None) -> str:
    return "\n".join(f"[{language}] {item.get('title', '')}\n{item.get('body', '')}"
                     for language, item in sorted((value or {}).items()))
