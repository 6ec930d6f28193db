"""Extra admin pages for snippets: version history, side-by-side diff, rollback, the release gate, previews,
and the weekly opening-hours editor. Thin: every write goes through knowledge.services."""
from __future__ import annotations

import difflib
import re
from urllib.parse import urlencode
from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.views.decorators.http import require_POST

from knowledge import selectors, services
from knowledge.markdown import render_markdown, render_markdown_many
from knowledge.models import SNIPPET_HEAVY_FIELDS, Snippet, SnippetVersion, Weekday

TEST_RETRIEVAL_URL = "/admin/knowledge/test-retrieval/"
DIFF_CONTEXT_LINES = 3
PREVIEW_MAX_CHARS = 20_000


# ----------------------------------------------------------------------------- diff (pure, HTML-escaped)

@dataclass(frozen=True)
class DiffCell:
    number: int | None
    html: SafeString


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff; `kind` is equal, change, delete, insert or skip (collapsed lines)."""

    kind: str
    left: DiffCell | None = None
    right: DiffCell | None = None
    skipped: int = 0


@dataclass(frozen=True)
class FieldChange:
    """A metadata field as shown in the diff's summary table (values already escaped and marked up)."""

    label: str
    old: SafeString
    new: SafeString
    changed: bool


_TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
# Lines that share less than this are shown as a whole removed and a whole added line: a word diff of
# unrelated lines is noise, and on long lines the matcher is quadratic.
WORD_DIFF_MIN_SIMILARITY = 0.4


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def _merge_whitespace(opcodes: list[tuple], a: list[str]) -> list[tuple]:
    """Fold a lone unchanged space between two changes into them, so "<del>First write-up</del>" reads as one."""
    merged: list[list] = []
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        between = 0 < index < len(opcodes) - 1
        if tag == "equal" and between and "".join(a[i1:i2]).isspace() and merged and merged[-1][0] != "equal":
            merged[-1] = ["replace", merged[-1][1], i2, merged[-1][3], j2]
            continue
        if tag != "equal" and merged and merged[-1][0] != "equal":
            merged[-1] = ["replace", merged[-1][1], i2, merged[-1][3], j2]
            continue
        merged.append([tag, i1, i2, j1, j2])
    return [tuple(op) for op in merged]


def inline_diff(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Word-level diff of two lines: escaped HTML with <del> on the old side and <ins> on the new side."""
    a, b = _tokens(old), _tokens(new)
    # Spaces cannot anchor a match (they still extend one): far fewer candidate matches on long lines.
    matcher = difflib.SequenceMatcher(str.isspace, a, b, autojunk=False)
    if a and b and matcher.quick_ratio() < WORD_DIFF_MIN_SIMILARITY:
        return format_html("<del>{}</del>", old), format_html("<ins>{}</ins>", new)
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in _merge_whitespace(matcher.get_opcodes(), a):
        old_part, new_part = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if tag == "equal":
            left.append(old_part)
            right.append(new_part)
            continue
        if old_part:
            left.append(f"<del>{old_part}</del>")
        if new_part:
            right.append(f"<ins>{new_part}</ins>")
    return mark_safe("".join(left)), mark_safe("".join(right))  # noqa: S308 - every part escaped above


def _collapse(rows: list[DiffRow], *, context: int, leading: bool, trailing: bool) -> list[DiffRow]:
    """Keep `context` unchanged lines next to changes; fold the rest into one skip row."""
    keep_head = 0 if leading else context
    keep_tail = 0 if trailing else context
    if len(rows) <= keep_head + keep_tail + 1:
        return rows
    hidden = len(rows) - keep_head - keep_tail
    tail = rows[len(rows) - keep_tail:] if keep_tail else []
    return rows[:keep_head] + [DiffRow(kind="skip", skipped=hidden)] + tail


def side_by_side_diff(old: str, new: str, *, context: int = DIFF_CONTEXT_LINES) -> list[DiffRow]:
    """Line-level side-by-side diff with word-level highlights inside changed lines; unchanged runs folded."""
    a, b = (old or "").splitlines(), (new or "").splitlines()
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    if all(tag == "equal" for tag, *_ in opcodes):
        return [DiffRow(kind="equal", left=DiffCell(i + 1, escape(line)), right=DiffCell(i + 1, escape(line)))
                for i, line in enumerate(a)]
    rows: list[DiffRow] = []
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            block = [DiffRow(kind="equal", left=DiffCell(i + 1, escape(a[i])), right=DiffCell(j + 1, escape(b[j])))
                     for i, j in zip(range(i1, i2), range(j1, j2))]
            rows += _collapse(block, context=context, leading=index == 0, trailing=index == len(opcodes) - 1)
            continue
        old_lines, new_lines = list(range(i1, i2)), list(range(j1, j2))
        for k in range(max(len(old_lines), len(new_lines))):
            i = old_lines[k] if k < len(old_lines) else None
            j = new_lines[k] if k < len(new_lines) else None
            if i is not None and j is not None:
                left_html, right_html = inline_diff(a[i], b[j])
                rows.append(DiffRow(kind="change", left=DiffCell(i + 1, left_html), right=DiffCell(j + 1, right_html)))
            elif i is not None:
                rows.append(DiffRow(kind="delete", left=DiffCell(i + 1, format_html("<del>{}</del>", a[i]))))
            else:
                rows.append(DiffRow(kind="insert", right=DiffCell(j + 1, format_html("<ins>{}</ins>", b[j]))))
    return rows


FIELD_LABELS = {
    "title": "Title", "category": "Category", "role": "Role", "status": "Status", "language": "Language",
    "channels": "Channels", "tags": "Tags", "related_keys": "Related snippets", "notes": "Change note",
    "valid_from": "Valid from", "valid_until": "Valid until", "last_reviewed_at": "Last reviewed",
}
LIST_FIELDS = {"channels", "tags", "related_keys"}


def _list_change(old: list[str], new: list[str]) -> tuple[SafeString, SafeString]:
    left = [format_html("<del>{}</del>", item) if item not in new else escape(item) for item in old]
    right = [format_html("<ins>{}</ins>", item) if item not in old else escape(item) for item in new]
    dash = mark_safe("&mdash;")
    return (mark_safe(", ".join(left)) if left else dash), (mark_safe(", ".join(right)) if right else dash)


def _display(version: SnippetVersion, field: str) -> SafeString:
    value = getattr(version, field)
    if isinstance(value, list):
        value = ", ".join(value)
    return escape(value) if value not in (None, "") else mark_safe("&mdash;")


def field_changes(old: SnippetVersion | None, new: SnippetVersion) -> list[FieldChange]:
    """Every metadata field of two versions (all but the body), changed ones marked up word by word."""
    dash = mark_safe("&mdash;")
    if old is None:
        return [FieldChange(label=label, old=dash, new=_display(new, field), changed=True)
                for field, label in FIELD_LABELS.items()]
    result = []
    for diff in selectors.snippet_version_diff(old=old, new=new):
        if diff.field not in FIELD_LABELS:
            continue
        if not diff.changed:
            left = right = _display(new, diff.field)
        elif diff.field in LIST_FIELDS:
            left, right = _list_change(list(getattr(old, diff.field) or []), list(getattr(new, diff.field) or []))
        else:
            left, right = inline_diff(diff.old, diff.new)
        result.append(FieldChange(label=FIELD_LABELS[diff.field], old=left or dash, new=right or dash,
                                  changed=diff.changed))
    return result


def _fields_context(fields: list[FieldChange]) -> dict:
    changed = sum(1 for f in fields if f.changed)
    return {"fields": fields, "changed_count": changed, "unchanged_count": len(fields) - changed}


# ----------------------------------------------------------------------------- reads for the pages

def live_version(snippet: Snippet) -> SnippetVersion | None:
    return SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS).filter(snippet=snippet, is_active=True).first()


def version_label(version: SnippetVersion) -> str:
    return f"v{version.version}" + (" · live" if version.is_active else "")


def version_state(version: SnippetVersion, live: SnippetVersion | None) -> str:
    """live, awaiting (newer than live: release it) or past (older or the key is off: roll back to it)."""
    if version.is_active:
        return "live"
    if live is not None and version.version > live.version:
        return "awaiting"
    return "past"


# ----------------------------------------------------------------------------- helpers

def _context(request: HttpRequest, model_admin: ModelAdmin, **extra) -> dict:
    return {**model_admin.admin_site.each_context(request), "opts": model_admin.model._meta,
            "app_label": model_admin.model._meta.app_label, **extra}


def _snippet_or_404(request: HttpRequest, model_admin: ModelAdmin, object_id: int, *, change: bool = False) -> Snippet:
    snippet = get_object_or_404(Snippet, pk=object_id)
    allowed = (model_admin.has_change_permission(request, snippet) if change
               else model_admin.has_view_permission(request, snippet))
    if not allowed:
        raise PermissionDenied
    return snippet


def versions_url(snippet: Snippet) -> str:
    return reverse("admin:knowledge_snippet_versions", args=[snippet.pk])


def release_url(snippet: Snippet, number: int) -> str:
    return reverse("admin:knowledge_snippet_release", args=[snippet.pk, number])


def diff_url(snippet: Snippet, a: int, b: int) -> str:
    return reverse("admin:knowledge_snippet_diff", args=[snippet.pk]) + f"?a={a}&b={b}"


def _versions(snippet: Snippet) -> list[SnippetVersion]:
    return list(SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS).select_related("created_by", "activated_by")
                .filter(snippet=snippet).order_by("-version"))


def _gate_message(snippet: Snippet, version: SnippetVersion, reason: str) -> SafeString:
    return format_html('Saved v{} of “{}”, but it is not live yet. {} <a href="{}">Open the release page</a>',
                       version.version, snippet.key, reason, release_url(snippet, version.version))


# ----------------------------------------------------------------------------- pages

def snippet_versions_view(request: HttpRequest, object_id: int, *, model_admin: ModelAdmin) -> HttpResponse:
    """Every version of a key with author, time, state and actions; pick two to compare."""
    snippet = _snippet_or_404(request, model_admin, object_id)
    versions = _versions(snippet)
    live = next((v for v in versions if v.is_active), None)
    bodies = render_markdown_many([v.body for v in versions])
    rows = [{"version": v, "state": version_state(v, live), "body_html": body_html,
             "excerpt": Truncator(" ".join(v.body.split())).chars(120),
             "diff_live_url": diff_url(snippet, live.version, v.version) if live and v.pk != live.pk else "",
             "diff_prev_url": diff_url(snippet, v.version - 1, v.version) if v.version > 1 else ""}
            for v, body_html in zip(versions, bodies)]
    head = versions[0] if versions else None
    context = _context(request, model_admin, title=f"Versions of “{(live or head).title if head else snippet.key}”",
                       snippet=snippet, rows=rows, live=live, head=head,
                       can_change=model_admin.has_change_permission(request, snippet),
                       default_a=(versions[1].version if len(versions) > 1 else None),
                       default_b=(head.version if head else None),
                       test_retrieval_url=TEST_RETRIEVAL_URL)
    return TemplateResponse(request, "admin/knowledge/snippet/versions.html", context)


def _pick(versions: dict[int, SnippetVersion], raw: str | None) -> SnippetVersion | None:
    try:
        return versions.get(int(raw or ""))
    except ValueError:
        return None


def snippet_diff_view(request: HttpRequest, object_id: int, *, model_admin: ModelAdmin) -> HttpResponse:
    """Side-by-side diff of any two versions (?a=old&b=new), fields and body, plus both rendered bodies."""
    snippet = _snippet_or_404(request, model_admin, object_id)
    versions = {v.version: v for v in _versions(snippet)}
    if not versions:
        messages.warning(request, "This snippet has no versions yet.")
        return HttpResponseRedirect(reverse("admin:knowledge_snippet_changelist"))
    live = next((v for v in versions.values() if v.is_active), None)
    newest = max(versions)
    b = _pick(versions, request.GET.get("b")) or live or versions[newest]
    a = _pick(versions, request.GET.get("a")) or versions.get(b.version - 1) or b
    context = _context(request, model_admin, title=f"Compare v{a.version} and v{b.version} of “{snippet.key}”",
                       snippet=snippet, a=a, b=b, live=live, all_versions=sorted(versions.values(),
                                                                                 key=lambda v: -v.version),
                       rows=side_by_side_diff(a.body, b.body), **_fields_context(field_changes(a, b)),
                       a_label=version_label(a), b_label=version_label(b),
                       actionable=[{"version": v, "state": version_state(v, live)}
                                   for v in ([a] if a.pk == b.pk else [a, b])],
                       a_html=render_markdown(a.body), b_html=render_markdown(b.body), same=a.pk == b.pk,
                       can_change=model_admin.has_change_permission(request, snippet))
    return TemplateResponse(request, "admin/knowledge/snippet/diff.html", context)


@require_POST
def snippet_rollback_view(request: HttpRequest, object_id: int, number: int, *,
                          model_admin: ModelAdmin) -> HttpResponse:
    """Roll back to version `number` (a new version with its content; live unless the release gate holds it)."""
    snippet = _snippet_or_404(request, model_admin, object_id, change=True)
    try:
        version = services.snippet_rollback(key=snippet.key, to_version=number, user=request.user)
    except services.SnippetNotFound as exc:
        messages.error(request, exc.message)
        return HttpResponseRedirect(versions_url(snippet))
    if version.is_active:
        messages.success(request, format_html("Rolled back “{}” to v{}: that content is live again as v{}.",
                                              snippet.key, number, version.version))
    else:
        _allowed, reason = services.snippet_version_can_activate(version=version, user=request.user)
        messages.warning(request, _gate_message(snippet, version, reason))
    return HttpResponseRedirect(versions_url(snippet))


def snippet_release_view(request: HttpRequest, object_id: int, number: int, *,
                         model_admin: ModelAdmin) -> HttpResponse:
    """Make version `number` live: first the diff against the live version and the release gate, then confirm."""
    snippet = _snippet_or_404(request, model_admin, object_id)
    version = get_object_or_404(SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS)
                                .select_related("created_by"), snippet=snippet, version=number)
    live = live_version(snippet)
    can_change = model_admin.has_change_permission(request, snippet)
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied
        seen = request.POST.get("seen_live", "")
        if seen != str(live.version if live else 0):
            # The reviewer approved a diff against a live version that has since changed.
            messages.warning(request, "The live version changed while you were reviewing. Check the new diff "
                                      "below before releasing.")
            return HttpResponseRedirect(release_url(snippet, number))
        try:
            released = services.snippet_version_activate(version=version, user=request.user)
        except services.ReviewRequired as exc:
            messages.error(request, f"Not released: {exc.message}")
            return HttpResponseRedirect(release_url(snippet, number))
        messages.success(request, format_html("Released v{} of “{}”: it is live now.", released.version, snippet.key))
        return HttpResponseRedirect(versions_url(snippet))
    allowed, reason = services.snippet_version_can_activate(version=version, user=request.user)
    if not can_change:
        allowed, reason = False, "You can view snippets but not change them."
    gated = version.role in services.GATED_ROLES or (live is not None and live.role in services.GATED_ROLES)
    # A guardrail or behaviour change reaches every answer: the reviewer sees the release check's results first.
    smoke = selectors.smoke_tests_run() if gated and not version.is_active else None
    context = _context(request, model_admin, title=f"Release v{version.version} of “{snippet.key}”",
                       smoke=smoke, smoke_failed=[r for r in smoke if not r.passed] if smoke else [],
                       smoke_url=reverse("admin:knowledge_smoketest_run"),
                       snippet=snippet, version=version, live=live, allowed=allowed, reason=reason,
                       gated=gated, already_live=version.is_active,
                       rows=side_by_side_diff(live.body if live else "", version.body),
                       **_fields_context(field_changes(live, version)),
                       live_html=render_markdown(live.body) if live else "", new_html=render_markdown(version.body),
                       seen_live=live.version if live else 0,
                       live_label=version_label(live) if live else "Nothing live", new_label=version_label(version))
    return TemplateResponse(request, "admin/knowledge/snippet/release.html", context)


def snippet_review_queue_view(request: HttpRequest, *, model_admin: ModelAdmin) -> HttpResponse:
    """Versions waiting to go live, oldest first, with whether this user may release each."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    items = []
    for version in selectors.awaiting_release():
        allowed, reason = services.snippet_version_can_activate(version=version, user=request.user)
        items.append({"version": version, "allowed": allowed, "reason": reason,
                      "gated": version.role in services.GATED_ROLES,
                      "release_url": release_url(version.snippet, version.version)})
    context = _context(request, model_admin, title="Versions awaiting release", items=items)
    return TemplateResponse(request, "admin/knowledge/snippet/review_queue.html", context)


@require_POST
def snippet_preview_view(request: HttpRequest, *, model_admin: ModelAdmin) -> HttpResponse:
    """Render Markdown exactly as the history page will show it (for the live preview while editing)."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    body = request.POST.get("body", "")[:PREVIEW_MAX_CHARS]
    return JsonResponse({"html": str(render_markdown(body, cached=False))})


# ----------------------------------------------------------------------------- smoke tests

def smoke_tests_run_view(request: HttpRequest, *, model_admin: ModelAdmin) -> HttpResponse:
    """Run every stored smoke test through retrieval (the release check) and show what each one found."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    results = selectors.smoke_tests_run()
    rows = [{"result": result,
             "test_url": f"{TEST_RETRIEVAL_URL}?{urlencode({'query': result.query, 'intent': 'other', 'channel': 'chat'})}",
             "top": [{"key": key, "expected": key in result.expected_keys} for key in result.top_keys]}
            for result in results]
    passed = sum(result.passed for result in results)
    context = _context(request, model_admin, title="Smoke test results", rows=rows, passed=passed,
                       failed=len(results) - passed, top_k=selectors.SMOKE_TEST_TOP_K,
                       mode=results[0].mode if results else "")
    return TemplateResponse(request, "admin/knowledge/smoketest/run.html", context)


# ----------------------------------------------------------------------------- weekly opening hours

RANGE_SEPARATORS = re.compile(r"[,;\n]+")
DASHES = str.maketrans({"–": "-", "—": "-", "−": "-"})


def ranges_from_text(text: str) -> list[str]:
    """Split what an owner typed ("09:00-13:00, 14:00-18:00", "closed", "") into range strings."""
    text = (text or "").translate(DASHES).strip()
    if text.lower() in {"", "closed", "-"}:
        return []
    return [part.strip() for part in RANGE_SEPARATORS.split(text) if part.strip()]


def ranges_to_text(ranges) -> str:
    return ", ".join(f"{row.opens:%H:%M}-{row.closes:%H:%M}" for row in ranges)


class WeeklyHoursForm(forms.Form):
    """One text field per weekday: comma-separated HH:MM-HH:MM ranges, empty for closed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for day in Weekday:
            self.fields[day.label.lower()] = forms.CharField(
                label=day.label, required=False,
                widget=forms.TextInput(attrs={"placeholder": "Closed", "class": "kn-hours-input",
                                              "autocomplete": "off", "spellcheck": "false"}))

    def week(self) -> dict[int, list[str]]:
        return {day.value: ranges_from_text(self.cleaned_data.get(day.label.lower(), "")) for day in Weekday}


def weekly_hours_view(request: HttpRequest, *, model_admin: ModelAdmin) -> HttpResponse:
    """Edit the whole week on one page; validation (format, order, overlaps) comes from the service."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    can_change = (model_admin.has_change_permission(request) and model_admin.has_add_permission(request)
                  and model_admin.has_delete_permission(request))
    initial = {Weekday(day).label.lower(): ranges_to_text(rows)
               for day, rows in selectors.opening_hours_week().items()}
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied
        form = WeeklyHoursForm(request.POST, initial=initial)
        if form.is_valid():
            try:
                services.opening_hours_set_week(week=form.week(), user=request.user)
            except ValidationError as exc:
                for field, problems in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
            else:
                saved = {Weekday(day).label.lower(): ranges_to_text(rows)
                         for day, rows in selectors.opening_hours_week().items()}
                changed = [form.fields[name].label for name in form.fields if saved[name] != initial[name]]
                messages.success(request, "Opening hours saved" + (f" ({', '.join(changed)})." if changed
                                                                   else "; nothing changed."))
                return HttpResponseRedirect(reverse("admin:knowledge_openinghours_changelist"))
    else:
        form = WeeklyHoursForm(initial=initial)
    upcoming = list(selectors.special_day_list(since=_today())[:8])
    context = _context(request, model_admin, title="Weekly opening hours", form=form, can_change=can_change,
                       upcoming=[{"day": day, "hours": ranges_to_text(day.ranges.all())} for day in upcoming],
                       special_days_url=reverse("admin:knowledge_specialday_changelist"))
    return TemplateResponse(request, "admin/knowledge/openinghours/weekly.html", context)


def _today():
    from django.utils import timezone

    return timezone.localdate()
