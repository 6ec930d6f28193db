"""Telemetry pages: retrieval health, the gap digest and kept digests (tenant host); the platform overview (public)."""
from __future__ import annotations

import datetime as dt
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.views import LoginView, redirect_to_login
from django.db import connection
from django.http import Http404, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from telemetry import digest as digest_services
from telemetry import selectors
from telemetry.models import Digest, GapGroup, GapStatus

LOGIN_URL = "/telemetry/login/"


def _on_public() -> bool:
    return connection.schema_name == "public"


def tenant_user_required(view):
    """A signed-in active user of this tenant (users live in the tenant's own schema); pages 404 on the public host."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if _on_public():
            raise Http404("Telemetry pages live on a business's own host.")
        user = request.user
        if not (user.is_authenticated and user.is_active):
            return redirect_to_login(request.get_full_path(), LOGIN_URL)
        return view(request, *args, **kwargs)

    return wrapper


def _can_manage_gaps(user) -> bool:
    return user.is_staff or user.has_perm("telemetry.change_gapgroup")


class TelemetryLoginView(LoginView):
    """Sign-in for the tenant's users who are not admin staff (the admin login only admits staff)."""

    template_name = "telemetry/login.html"
    redirect_authenticated_user = True

    def get_default_redirect_url(self):
        return reverse("telemetry:dashboard")


def _days(request) -> int:
    try:
        days = int(request.GET.get("days", 7))
    except ValueError:
        return 7
    return days if days in selectors.ALLOWED_DAYS else 7


@tenant_user_required
def dashboard(request):
    """Retrieval health over 7 or 30 days against the SOP's monitoring targets."""
    days = _days(request)
    health = selectors.retrieval_health(days=days)
    return render(request, "telemetry/dashboard.html", {
        "health": health, "days": days, "allowed_days": selectors.ALLOWED_DAYS,
        "chart_data": health.chart_data(), "tenant": connection.tenant,
    })


SNIPPET_ADD_URL = "/admin/knowledge/snippet/add/"


def snippet_prefill_url(group: GapGroup) -> str:
    """The admin's new-snippet form, pre-filled with the group's question and how customers phrased it.

    The phrasings go on a "Keywords:" line, the SOP's way of making a section findable by the
    words customers actually use.
    """
    phrasings = "; ".join(dict.fromkeys(example.strip().rstrip("?") for example in group.examples[:6]))
    body = f"(Write the answer here.)\n\nKeywords: {phrasings}"
    query = {"key": slugify(group.label)[:60].strip("-") or f"gap-{group.pk}", "title": group.label[:200],
             "body": body}
    return f"{SNIPPET_ADD_URL}?{urlencode(query)}"


@tenant_user_required
def gaps(request):
    """The gap digest: unanswered questions grouped by meaning, most asked first."""
    status = request.GET.get("status", GapStatus.OPEN)
    if status not in GapStatus.values:
        status = GapStatus.OPEN
    language = request.GET.get("language") or None
    groups = selectors.gap_groups(status=status, language=language)
    for group in groups:
        group.write_url = snippet_prefill_url(group)
    languages = selectors.gap_language_breakdown(status=status)
    chart = {"groups": [{"label": g.label[:60], "count": g.count} for g in groups[:15]],
             "languages": [{"name": row.name, "count": row.count} for row in languages]}
    return render(request, "telemetry/gaps.html", {
        "groups": groups, "status": status, "statuses": GapStatus.values, "language": language,
        "languages": languages, "counts": selectors.gap_status_counts(), "chart_data": chart,
        "can_manage": _can_manage_gaps(request.user), "tenant": connection.tenant,
        "swahili_missing": selectors.snippets_missing_language_version(language="sw"),
    })


def _gap_action(request, pk: int, status: str):
    if not _can_manage_gaps(request.user):
        return HttpResponseForbidden("You may view the gap digest but not change it.")
    group = get_object_or_404(GapGroup, pk=pk)
    digest_services.gap_group_set_status(group=group, status=status)
    verb = "Dismissed" if status == GapStatus.DISMISSED else "Reopened"
    messages.success(request, f"{verb} “{group.label}”.")
    return redirect(f"{reverse('telemetry:gaps')}?status={request.POST.get('back', GapStatus.OPEN)}")


@require_POST
@tenant_user_required
def gap_dismiss(request, pk: int):
    return _gap_action(request, pk, GapStatus.DISMISSED)


@require_POST
@tenant_user_required
def gap_reopen(request, pk: int):
    return _gap_action(request, pk, GapStatus.OPEN)


@require_POST
@tenant_user_required
def gaps_refresh(request):
    """Group new unanswered questions and resolve answered groups now, instead of waiting for the daily run."""
    if not _can_manage_gaps(request.user):
        return HttpResponseForbidden("You may view the gap digest but not change it.")
    result = digest_services.gap_digest_refresh()
    messages.success(request, f"{result.grouping.questions} new question(s) grouped, "
                              f"{len(result.grouping.created)} new group(s), {len(result.resolved)} resolved.")
    return redirect(reverse("telemetry:gaps"))


@tenant_user_required
def digest_list(request):
    """Daily digests kept for the browser."""
    return render(request, "telemetry/digest_list.html", {"digests": Digest.objects.all()[:90],
                                                           "tenant": connection.tenant})


@tenant_user_required
def digest_detail(request, day: str):
    try:
        parsed = dt.date.fromisoformat(day)
    except ValueError as exc:
        raise Http404("No digest for that day.") from exc
    digest = get_object_or_404(Digest, day=parsed)
    return render(request, "telemetry/digest_detail.html", {"digest": digest, "c": digest.content,
                                                             "tenant": connection.tenant})


def platform_overview(request):
    """Public host: every tenant's latest health snapshot, for platform staff."""
    if not _on_public():
        raise Http404("The platform overview lives on the platform host.")
    if not (request.user.is_authenticated and request.user.is_active and request.user.is_staff):
        return redirect_to_login(request.get_full_path(), "/admin/login/")
    from telemetry.platform import platform_overview as overview

    return render(request, "telemetry/platform_overview.html", {"rows": overview()})
