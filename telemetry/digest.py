"""The gap digest: unanswered questions grouped by meaning, resolved when new knowledge answers them,
and the daily digest mailed to a tenant's staff."""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMultiAlternatives
from django.db import connection, transaction
from django.db.models import Count, Q
from django.db.models.functions import Lower
from django.template.loader import render_to_string
from django.utils import timezone

from ratiba.services import host_safe_domain
from telemetry import knowledge_reads
from telemetry.health import ALERT, WARN
from telemetry.models import Digest, Event, EventName, GapGroup, GapQuestion, GapStatus, RetrievalDay, RetrievalLog
from telemetry.selectors import retrieval_health, snippets_missing_language_version, tenant_zone

logger = logging.getLogger(__name__)

MAX_EXAMPLES = 8
LABEL_SAMPLE = 200  # members considered when choosing a group's most central phrasing
BATCH = 500
# Used only when the retrieval pipeline cannot be imported: nearest snippet this similar counts as an answer.
FALLBACK_RESOLVE_SIMILARITY = 0.5
# A new snippet resolves a group only if it is this close to the group's meaning: in a small knowledge
# base every snippet is among the "three nearest", so rank alone says nothing.
RESOLVE_MIN_SIMILARITY = 0.4


@dataclass(frozen=True)
class GapCandidate:
    """An unanswered question taken from a knowledge_gap_candidate event."""

    event_id: int
    text: str
    language: str
    refused: bool
    asked_at: dt.datetime


def _is_gap_filter() -> Q:
    # Refused, or answered with nothing retrieved: both are questions the knowledge base could not answer.
    return (Q(payload__refused=True) | Q(payload__snippets_available=0) | Q(payload__answered=False)
            | Q(payload__has_key="refusal_reason") & ~Q(payload__refusal_reason=None) & ~Q(payload__refusal_reason=""))


def gap_candidate_from(event: Event) -> GapCandidate | None:
    payload = event.payload or {}
    text = str(payload.get("question") or payload.get("message") or payload.get("query") or "").strip()
    if not text:
        return None
    return GapCandidate(event_id=event.pk, text=text[:500], language=str(payload.get("language") or "")[:8],
                        refused=bool(payload.get("refused") or payload.get("refusal_reason")),
                        asked_at=event.created_at)


@dataclass
class GroupingResult:
    created: list[int] = field(default_factory=list)
    touched: list[int] = field(default_factory=list)
    questions: int = 0
    reopened: list[int] = field(default_factory=list)


def _unit(vector) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


def gap_questions_group(*, threshold: float | None = None) -> GroupingResult:
    """Assign every new unanswered question to the nearest gap group by cosine similarity, or start a new one.

    Greedy online clustering in the order questions were asked: a question joins the most
    similar group when the similarity reaches `threshold` (settings.TELEMETRY_GAP_SIMILARITY),
    and the group's centroid moves toward it. A question that joins a resolved group reopens it:
    it was asked again after the fix and still went unanswered.
    """
    threshold = settings.TELEMETRY_GAP_SIMILARITY if threshold is None else threshold
    result = GroupingResult()
    pending = (Event.objects.filter(name=EventName.KNOWLEDGE_GAP_CANDIDATE, gap_question__isnull=True)
               .filter(_is_gap_filter()).order_by("created_at", "pk"))
    groups = list(GapGroup.objects.order_by("pk"))
    centroids = [_unit(group.centroid) for group in groups]
    touched: dict[int, GapGroup] = {}
    last_id = 0
    while True:
        events = list(pending.filter(pk__gt=last_id).order_by("pk")[:BATCH])
        if not events:
            break
        last_id = events[-1].pk
        candidates = [c for c in (gap_candidate_from(event) for event in events) if c is not None]
        if not candidates:
            continue
        vectors = [_unit(v) for v in knowledge_reads.embed([c.text for c in candidates])]
        with transaction.atomic():
            for candidate, vector in zip(candidates, vectors):
                best, best_sim = None, -1.0
                if centroids:
                    sims = np.stack(centroids) @ vector
                    index = int(np.argmax(sims))
                    best, best_sim = index, float(sims[index])
                if best is not None and best_sim >= threshold:
                    group = groups[best]
                    n = group.count
                    centroids[best] = _unit(centroids[best] * n + vector)
                    group.centroid = centroids[best].tolist()
                    if group.status == GapStatus.RESOLVED:
                        group.status = GapStatus.OPEN
                        group.status_changed_at = timezone.now()
                        result.reopened.append(group.pk)
                else:
                    group = GapGroup.objects.create(label=candidate.text[:300], centroid=vector.tolist(),
                                                    first_seen=candidate.asked_at, last_seen=candidate.asked_at)
                    groups.append(group)
                    centroids.append(vector)
                    best_sim = 1.0
                    result.created.append(group.pk)
                group.count += 1
                group.refused_count += int(candidate.refused)
                languages = dict(group.languages or {})
                language = candidate.language or "unknown"
                languages[language] = languages.get(language, 0) + 1
                group.languages = languages
                group.first_seen = min(group.first_seen, candidate.asked_at)
                group.last_seen = max(group.last_seen, candidate.asked_at)
                examples = [e for e in (group.examples or []) if e.lower() != candidate.text.lower()]
                group.examples = [candidate.text, *examples][:MAX_EXAMPLES]
                GapQuestion.objects.create(event_id=candidate.event_id, group=group, text=candidate.text,
                                           language=candidate.language, refused=candidate.refused,
                                           similarity=round(best_sim, 4), embedding=vector.tolist(),
                                           asked_at=candidate.asked_at)
                touched[group.pk] = group
                result.questions += 1
            for group in touched.values():
                group.save()
    for group in touched.values():
        _refresh_label_and_closest(group)
    result.touched = list(touched)
    return result


def _refresh_label_and_closest(group: GapGroup) -> None:
    """Label a group with its most central phrasing and record the snippets that come closest."""
    members = list(group.questions.filter(embedding__isnull=False).order_by("-asked_at")
                   .values_list("text", "embedding")[:LABEL_SAMPLE])
    centroid = _unit(group.centroid)
    if members:
        sims = np.stack([_unit(vector) for _, vector in members]) @ centroid
        group.label = members[int(np.argmax(sims))][0][:300]
    group.closest = [snippet.as_dict() for snippet in knowledge_reads.closest_snippets(vector=centroid.tolist())]
    group.save(update_fields=["label", "closest"])


def gap_groups_resolve(*, now: dt.datetime | None = None) -> list[GapGroup]:
    """Move open groups that knowledge written since they were last asked now answers to "resolved".

    Retrieval is re-run for each group's label. The group resolves when the answer is not a
    refusal and one of the snippets it returns both went live after the group was last asked and
    is among the snippets nearest the group's meaning (so an unrelated new snippet that inline
    mode happens to return does not resolve it).
    """
    now = now or timezone.now()
    resolved = []
    for group in GapGroup.objects.filter(status=GapStatus.OPEN).order_by("pk"):
        centroid = _unit(group.centroid).tolist()
        nearest = knowledge_reads.closest_snippets(vector=centroid, limit=3)
        answer = knowledge_reads.reanswer(question=group.label)
        if answer is None:
            snippets = [s.as_dict() for s in nearest if s.similarity >= FALLBACK_RESOLVE_SIMILARITY]
            answered = bool(snippets)
        else:
            snippets, answered = answer.snippets, answer.answered
        if not answered:
            continue
        near_keys = {s.key for s in nearest if s.similarity >= RESOLVE_MIN_SIMILARITY}
        candidates = [s for s in snippets if s["key"] in near_keys]
        fresh = knowledge_reads.activated_since(keys=[s["key"] for s in candidates], since=group.last_seen)
        if not fresh:
            continue
        group.status = GapStatus.RESOLVED
        group.status_changed_at = now
        group.resolved_by = [{"key": s["key"], "version": s["version"], "title": s["title"]}
                             for s in candidates if s["key"] in fresh]
        group.closest = [s.as_dict() for s in nearest]
        group.save(update_fields=["status", "status_changed_at", "resolved_by", "closest"])
        resolved.append(group)
    return resolved


def gap_group_set_status(*, group: GapGroup, status: str) -> GapGroup:
    """Dismiss or reopen a group by hand."""
    if status not in (GapStatus.OPEN, GapStatus.DISMISSED):
        raise ValueError(f"A group can be set to open or dismissed by hand, not {status!r}.")
    if group.status != status:
        group.status = status
        group.status_changed_at = timezone.now()
        group.save(update_fields=["status", "status_changed_at"])
    return group


@dataclass
class GapRefresh:
    grouping: GroupingResult
    resolved: list[GapGroup]


def gap_digest_refresh(*, now: dt.datetime | None = None) -> GapRefresh:
    """Group new unanswered questions, then resolve groups that new knowledge answers."""
    grouping = gap_questions_group()
    return GapRefresh(grouping=grouping, resolved=gap_groups_resolve(now=now))


# ----------------------------------------------------------------------------- daily digest
def _group_summary(group: GapGroup) -> dict:
    return {"id": group.pk, "label": group.label, "count": group.count, "refused": group.refused_count,
            "languages": group.languages, "examples": group.examples[:3],
            "first_seen": group.first_seen.isoformat(), "last_seen": group.last_seen.isoformat(),
            "closest": group.closest[:2]}


def _period_start(*, now: dt.datetime, today: dt.date) -> dt.datetime:
    # Since the previous day's digest (a re-run today covers the same period), at most a week back.
    previous = (Digest.objects.filter(day__lt=today, built_at__lt=now).order_by("-day")
                .values_list("built_at", flat=True).first())
    return max(previous, now - dt.timedelta(days=7)) if previous else now - dt.timedelta(days=1)


def digest_content_build(*, now: dt.datetime | None = None) -> dict:
    """What today's digest says: new gap groups, top refusals, health alerts, snippets to review."""
    now = now or timezone.now()
    refresh = gap_digest_refresh(now=now)
    today = now.astimezone(tenant_zone()).date()
    since = _period_start(now=now, today=today)
    new_groups = list(GapGroup.objects.filter(created_at__gte=since, status=GapStatus.OPEN).order_by("-count", "pk"))
    top_open = list(GapGroup.objects.filter(status=GapStatus.OPEN).order_by("-count", "-last_seen", "pk")[:10])

    refused = RetrievalLog.objects.filter(created_at__gte=since, created_at__lt=now, refused=True)
    reasons = [{"reason": reason or "unknown", "count": n} for reason, n in
               refused.values_list("refusal_reason").annotate(n=Count("id")).order_by("-n", "refusal_reason")]
    questions = [{"question": text, "count": n} for text, n in
                 refused.exclude(message_preview="").annotate(q=Lower("message_preview")).values_list("q")
                 .annotate(n=Count("id")).order_by("-n", "q")[:5]]
    turns = RetrievalLog.objects.filter(created_at__gte=since, created_at__lt=now).count()

    health = retrieval_health(days=7, now=now)
    alerts = [figure.as_dict() for figure in health.figures if figure.state in (WARN, ALERT)]
    review = [{"key": item.key, "version": item.version, "title": item.title, "reason": item.reason,
               "date": item.date.isoformat() if item.date else None}
              for item in knowledge_reads.snippets_needing_review(today=today)]
    return {
        "day": today.isoformat(),
        "schema": connection.schema_name,
        "period": {"from": since.isoformat(), "to": now.isoformat()},
        "turns": turns,
        "refusals": refused.count(),
        "new_groups": [_group_summary(g) for g in new_groups],
        "top_open_groups": [_group_summary(g) for g in top_open],
        "resolved_groups": [_group_summary(g) for g in refresh.resolved],
        "refusal_reasons": reasons,
        "top_refused_questions": questions,
        "health_state": health.state,
        "alerts": alerts,
        "review": review,
        # Snippets Swahili customers reached that the owner has not written a Swahili version of yet.
        "swahili_missing": [row.as_dict() for row in snippets_missing_language_version(language="sw", now=now)],
    }


def digest_recipients() -> list[str]:
    """Email addresses of the tenant's active staff users (users live in the tenant's schema)."""
    User = get_user_model()
    return sorted(set(User.objects.filter(is_active=True, is_staff=True).exclude(email="")
                      .values_list("email", flat=True)))


def _tenant_name_and_link() -> tuple[str, str]:
    from ratiba.models import Domain, Tenant

    schema = connection.schema_name
    name = Tenant.objects.filter(schema_name=schema).values_list("name", flat=True).first() or schema
    domain = (Domain.objects.filter(tenant__schema_name=schema).order_by("-is_primary", "pk")
              .values_list("domain", flat=True).first())
    # aria_spa.localhost is also served as aria-spa.localhost: mail clients open links in browsers, which reject "_".
    base = settings.TELEMETRY_LINK_BASE.format(domain=host_safe_domain(domain)) if domain else ""
    return name, base


def daily_digest_run(*, now: dt.datetime | None = None, send: bool = True, force: bool = False) -> Digest:
    """Build today's digest for the current schema, keep it, and mail it to the staff once per day."""
    now = now or timezone.now()
    content = digest_content_build(now=now)
    day = dt.date.fromisoformat(content["day"])
    name, base = _tenant_name_and_link()
    context = {"c": content, "tenant_name": name, "base": base}
    subject = (f"{name}: {len(content['new_groups'])} new unanswered question group(s), "
               f"{len(content['alerts'])} health alert(s) — digest {day:%d %b %Y}")
    text_body = render_to_string("telemetry/email/digest.txt", context)
    digest, _ = Digest.objects.update_or_create(day=day, defaults={"built_at": now, "content": content,
                                                                   "subject": subject[:200], "text_body": text_body})
    if send and (force or digest.sent_at is None):
        recipients = digest_recipients()
        if recipients:
            message = EmailMultiAlternatives(subject=digest.subject, body=text_body, to=recipients)
            message.attach_alternative(render_to_string("telemetry/email/digest.html", context), "text/html")
            message.send()
            digest.recipients = recipients
            digest.sent_at = timezone.now()
            digest.save(update_fields=["recipients", "sent_at"])
    return digest


# ----------------------------------------------------------------------------- retention
@dataclass(frozen=True)
class PruneResult:
    logs: int
    sections: int
    events: int


def telemetry_prune(*, days: int | None = None, now: dt.datetime | None = None) -> PruneResult:
    """Delete retrieval logs and events older than the retention period (settings.TELEMETRY_RETENTION_DAYS).

    Events that gap groups were built from are kept with their group (the group would lose its history).
    """
    days = settings.TELEMETRY_RETENTION_DAYS if days is None else days
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    from telemetry.models import RetrievalLogSection

    # Plain SQL deletes by date: the ORM's cascade collector would load every row first.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"delete from {RetrievalLogSection._meta.db_table} where created_at < %s", [cutoff])
        sections = cursor.rowcount
        cursor.execute(f"delete from {RetrievalLog._meta.db_table} where created_at < %s", [cutoff])
        logs = cursor.rowcount
        cursor.execute(
            f"delete from {Event._meta.db_table} e where e.created_at < %s and not exists "
            f"(select 1 from {GapQuestion._meta.db_table} q where q.event_id = e.id)", [cutoff])
        events = cursor.rowcount
    # Kept day rollups go with the rows they summarise.
    RetrievalDay.objects.filter(day__lt=cutoff.date()).delete()
    return PruneResult(logs=logs, sections=sections, events=events)
