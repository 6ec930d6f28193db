"""The business owner's admin: snippets (versioned), services, opening hours, special days and smoke tests.

Every write goes through knowledge.services; the classes here only collect input and show results.
"""
from __future__ import annotations

import datetime as dt
from functools import partial
from html import escape as html_escape

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.widgets import AdminDateWidget, FilteredSelectMultiple
from django.core.exceptions import ValidationError
from django.db import connection
from django.contrib.postgres.fields import ArrayField
from django.db.models import CharField, F, FilteredRelation, OuterRef, Q, Subquery
from django.db.models.expressions import RawSQL
from django.http import HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.forms.utils import flatatt
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from knowledge import admin_views, selectors, services
from knowledge.models import (
    Category,
    Channel,
    EmbeddingState,
    OpeningHours,
    Role,
    Service,
    SmokeTest,
    Snippet,
    SnippetVersion,
    SpecialDay,
    Status,
    all_channels,
)
from ratiba.admin_scoping import TenantOnlyAdmin

EXPIRING_SOON_DAYS = 14
ASSETS_CSS = {"all": ["knowledge/admin-knowledge.css"]}

if admin.site.site_header == "Django administration":
    admin.site.site_header = "Ratiba Knowledge"
    admin.site.site_title = "Ratiba Knowledge"
    admin.site.index_title = "Your business"


def _errors_to_form(form: forms.BaseForm, exc: ValidationError) -> None:
    """Attach a service's ValidationError to the matching form fields (others to the form as a whole)."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
        return
    for field, problems in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


class _ServiceRejected(Exception):
    """A service refused a save the form had accepted (a race, e.g. a related key deleted meanwhile)."""

    def __init__(self, error: ValidationError):
        super().__init__(str(error))
        self.error = error


class _ServiceErrorsMixin:
    """Lets a ModelAdmin show a service's ValidationError raised at save time on the re-rendered form."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except _ServiceRejected as rejected:
            # The first pass rolled back (changeform_view is atomic); the second re-validates with the errors.
            request._knowledge_service_error = rejected.error
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        form.service_error = getattr(request, "_knowledge_service_error", None)
        form.request_user = request.user
        return form

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs):
        # Our save_model already said precisely what happened; skip Django's generic "was changed" line.
        if getattr(request, "_knowledge_messaged", False) and level == messages.SUCCESS:
            return
        super().message_user(request, message, level, *args, **kwargs)


class ServiceErrorForm(forms.ModelForm):
    service_error: ValidationError | None = None
    request_user = None

    def clean(self):
        cleaned = super().clean()
        if self.service_error is not None:
            _errors_to_form(self, self.service_error)
        return cleaned


# ============================================================================= snippets

class CommaListField(forms.CharField):
    """A comma-separated list typed into one box ("parking, access")."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, (list, tuple)) else value

    def to_python(self, value):
        text = super().to_python(value) or ""
        return [item.strip() for item in text.split(",") if item.strip()]


class KeyPicker(FilteredSelectMultiple):
    """The admin's two-box picker, rendered in one pass: through per-option templates, 2,000 keys take a second."""

    def render(self, name, value, attrs=None, renderer=None):
        selected = {str(item) for item in (value or [])}
        options = "".join(f'<option value="{html_escape(str(key))}"{" selected" if str(key) in selected else ""}>'
                          f'{html_escape(str(label))}</option>' for key, label in self.choices)
        return format_html('<select name="{}" multiple{} class="selectfilter{}" data-field-name="{}" '
                           'data-is-stacked="{}">{}</select>', name, flatatt(self.build_attrs(self.attrs, attrs)),
                           "stacked" if self.is_stacked else "", self.verbose_name, int(self.is_stacked),
                           mark_safe(options))  # noqa: S308 - every key and label escaped above


class SnippetForm(ServiceErrorForm):
    """A version's content; saving it makes a new version through the services (nothing is overwritten)."""

    title = forms.CharField(max_length=200, widget=forms.TextInput(attrs={"class": "vLargeTextField kn-title-input"}),
                            help_text="What the snippet is about, as a customer would ask it (e.g. “Parking”).")
    body = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12, "class": "kn-body-input", "spellcheck": "true"}),
        help_text="The answer, in Markdown (**bold**, lists, links). One topic per snippet; write it as you would "
                  "say it to a customer. HTML is shown as text, never run.")
    category = forms.ChoiceField(choices=Category.choices,
                                 help_text="Hours and service snippets also answer the hours/services questions.")
    role = forms.ChoiceField(
        choices=Role.choices, initial=Role.RETRIEVED,
        help_text="Retrieved: used when a question is about it. Guardrail/behaviour: added to every prompt; "
                  "a second person with review permission must release each change.")
    status = forms.ChoiceField(choices=Status.choices, initial=Status.ACCEPTED,
                               help_text="Canonical is preferred over accepted; drafts are never used in answers; "
                                         "deprecated ones are ranked down.")
    channels = forms.MultipleChoiceField(choices=Channel.choices, initial=all_channels,
                                         widget=forms.CheckboxSelectMultiple,
                                         help_text="Where this snippet may be used.")
    language = forms.CharField(max_length=8, initial="en", widget=forms.TextInput(attrs={"size": 6}),
                               help_text="The language it is written in (en, sw); answers are still given in the "
                                         "customer's language.")
    tags = CommaListField(required=False, widget=forms.TextInput(attrs={"class": "vLargeTextField"}),
                          help_text="Comma-separated, e.g. “parking, access”.")
    related_keys = forms.MultipleChoiceField(
        required=False, label="Related snippets", widget=KeyPicker("related snippets", False),
        help_text="Shown alongside this one when it is retrieved (e.g. parking → directions).")
    valid_from = forms.DateField(required=False, widget=AdminDateWidget,
                                 help_text="Leave empty to use it straight away.")
    valid_until = forms.DateField(required=False, widget=AdminDateWidget,
                                  help_text="Last day it applies (holiday hours, a promotion); empty = no end.")
    last_reviewed_at = forms.DateField(required=False, label="Last reviewed", widget=AdminDateWidget,
                                       help_text="When someone last checked it is still true.")
    title_sw = forms.CharField(required=False, max_length=200, label="Swahili title",
                               widget=forms.TextInput(attrs={"class": "vLargeTextField"}),
                               help_text="Optional; the English title is used when empty.")
    body_sw = forms.CharField(required=False, label="Swahili version",
                              widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
                              help_text="Your approved Swahili text of this snippet. Customers who write in "
                                        "Swahili are answered with it, word for word, when the bot quotes this "
                                        "snippet without an AI model; an AI model reads the English and answers "
                                        "in Swahili itself. Kept with this version (edit it and a new version is "
                                        "saved, as for the English).")
    notes = forms.CharField(required=False, label="Change note", widget=forms.Textarea(attrs={"rows": 2}),
                            help_text="What changed and why; kept with this version in the history.")
    publish = forms.BooleanField(required=False, initial=True, label="Make this version live now",
                                 help_text="Untick to save it for later; the live version stays as it is. "
                                           "Guardrail/behaviour versions always wait for a second reviewer.")
    base_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    class Meta:
        model = Snippet
        fields = ["key"]
        help_texts = {"key": "A stable name used by the API, related snippets and smoke tests: lowercase letters, "
                             "digits, “-” or “_” (e.g. parking-info). It cannot be changed later."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.base: SnippetVersion | None = None
        own_key = self.instance.key if self.instance.pk else None
        keys = Snippet.objects.exclude(key=own_key).order_by("key").values_list("key", flat=True)
        if "related_keys" in self.fields:
            self.fields["related_keys"].choices = [(key, key) for key in keys]
        if self.instance.pk:
            self.base = selectors.snippet_version_get(key=self.instance.key)
            if self.base is not None:
                for field in services.CONTENT_FIELDS:
                    if field not in ("notes", "translations"):
                        self.initial.setdefault(field, getattr(self.base, field))
                swahili = (self.base.translations or {}).get("sw") or {}
                self.initial.setdefault("title_sw", swahili.get("title", ""))
                self.initial.setdefault("body_sw", swahili.get("body", ""))
                self.initial["base_version"] = self.base.version

    def content(self) -> dict:
        data = self.cleaned_data
        content = {field: data.get(field) for field in services.CONTENT_FIELDS if field != "translations"}
        content["translations"] = {"sw": {"title": data.get("title_sw") or "", "body": data.get("body_sw") or ""}}
        return content

    def clean(self):
        cleaned = super().clean()
        if "key" in self.fields and cleaned.get("key"):
            try:
                services.snippet_key_check(key=cleaned["key"])
            except ValidationError as exc:
                _errors_to_form(self, exc)
        try:
            services.snippet_content_clean(**self.content())
        except ValidationError as exc:
            # A field that failed its own checks is missing here; the service would only repeat that.
            fresh = {field: problems for field, problems in exc.message_dict.items() if field not in self.errors}
            if fresh:
                _errors_to_form(self, ValidationError(fresh))
        if self.errors:
            return cleaned
        if self.base is not None and cleaned.get("base_version") not in (None, self._current_version()):
            current = selectors.snippet_version_get(key=self.instance.key)
            author = current.created_by.get_username() if current.created_by else "someone"
            self.add_error(None, f"This snippet changed while you were editing: v{current.version} was saved by "
                                 f"{author}. Open the version history to see their change, then edit again.")
        return cleaned

    def _current_version(self) -> int | None:
        current = selectors.snippet_version_get(key=self.instance.key)
        return current.version if current else None

    def is_unchanged(self) -> bool:
        """True when nothing but the change note differs from the version being edited."""
        if self.base is None:
            return False
        base = {field: getattr(self.base, field) for field in services.CONTENT_FIELDS}
        return (services.snippet_content_clean(**{**self.content(), "notes": ""})
                == services.snippet_content_clean(**{**base, "notes": ""}))


def _choice_filter(parameter: str, title: str, choices, annotation: str):
    """A sidebar filter on a field of the live version."""

    class ChoiceFilter(admin.SimpleListFilter):
        def lookups(self, request, model_admin):
            return list(choices)

        def queryset(self, request, queryset):
            return queryset.filter(**{annotation: self.value()}) if self.value() else queryset

    ChoiceFilter.title = title
    ChoiceFilter.parameter_name = parameter
    ChoiceFilter.__name__ = f"{parameter.title()}Filter"
    return ChoiceFilter


CategoryFilter = _choice_filter("category", "category", Category.choices, "live_category")
RoleFilter = _choice_filter("role", "role", Role.choices, "live_role")
StatusFilter = _choice_filter("status", "status", Status.choices, "live_status")
EmbeddingFilter = _choice_filter("embedding", "embedding", [(EmbeddingState.PENDING, "Pending"),
                                                           (EmbeddingState.DONE, "Done"),
                                                           (EmbeddingState.FAILED, "Failed")], "live_embedding")


class ChannelFilter(admin.SimpleListFilter):
    title = "channel"
    parameter_name = "channel"

    def lookups(self, request, model_admin):
        return Channel.choices

    def queryset(self, request, queryset):
        return queryset.filter(live_channels__contains=[self.value()]) if self.value() else queryset


class ValidityFilter(admin.SimpleListFilter):
    title = "validity"
    parameter_name = "validity"

    def lookups(self, request, model_admin):
        return [("expiring", f"Expiring within {EXPIRING_SOON_DAYS} days"), ("expired", "Expired"),
                ("scheduled", "Not valid yet")]

    def queryset(self, request, queryset):
        today = timezone.localdate()
        if self.value() == "expiring":
            return queryset.filter(live_valid_until__gte=today,
                                   live_valid_until__lte=today + dt.timedelta(days=EXPIRING_SOON_DAYS))
        if self.value() == "expired":
            return queryset.filter(live_valid_until__lt=today)
        if self.value() == "scheduled":
            return queryset.filter(live_valid_from__gt=today)
        return queryset


class LiveFilter(admin.SimpleListFilter):
    title = "live state"
    parameter_name = "live"

    def lookups(self, request, model_admin):
        return [("yes", "Live"), ("awaiting", "Has a version awaiting release"), ("no", "Taken out of use")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(live_id__isnull=False)
        if self.value() == "no":
            return queryset.filter(live_id__isnull=True)
        if self.value() == "awaiting":
            return queryset.filter(live_id__isnull=False, latest_version__gt=F("live_version"))
        return queryset


BADGE_CLASSES = {
    Status.CANONICAL: "kn-ok", Status.ACCEPTED: "kn-info", Status.DRAFT: "kn-warn", Status.DEPRECATED: "kn-muted",
    Role.GUARDRAIL: "kn-alert", Role.BEHAVIOUR: "kn-purple", Role.RETRIEVED: "kn-plain",
    EmbeddingState.PENDING: "kn-warn", EmbeddingState.DONE: "kn-ok", EmbeddingState.FAILED: "kn-alert",
}


def _badge(value: str, label: str | None = None, *, title: str = "") -> str:
    return format_html('<span class="kn-badge {}" title="{}">{}</span>', BADGE_CLASSES.get(value, "kn-plain"),
                       title, label or value)


@admin.register(Snippet)
class SnippetAdmin(_ServiceErrorsMixin, TenantOnlyAdmin):
    form = SnippetForm
    list_display = ("snippet_col", "category_col", "role_col", "status_col", "channels_col", "version_col",
                    "embedding_col", "validity_col", "reviewed_col")
    list_display_links = ("snippet_col",)
    list_filter = (LiveFilter, CategoryFilter, RoleFilter, StatusFilter, ChannelFilter, EmbeddingFilter,
                   ValidityFilter)
    search_fields = ("key",)
    search_help_text = "Searches the key, title and text of the live version (every word must match)."
    ordering = ("key",)
    list_per_page = 50
    actions = ["deactivate_selected"]
    save_on_top = False

    class Media:
        css = ASSETS_CSS
        js = ["knowledge/admin-knowledge.js"]

    # ------------------------------------------------------------------ list
    def get_queryset(self, request):
        latest = SnippetVersion.objects.filter(snippet=OuterRef("pk")).order_by("-version").values("version")[:1]
        return (super().get_queryset(request)
                .annotate(live=FilteredRelation("versions", condition=Q(versions__is_active=True)))
                .annotate(live_id=F("live__id"), live_title=F("live__title"), live_category=F("live__category"),
                          live_role=F("live__role"), live_status=F("live__status"),
                          live_channels=F("live__channels"), live_version=F("live__version"),
                          live_embedding=F("live__embedding_state"), live_valid_from=F("live__valid_from"),
                          live_valid_until=F("live__valid_until"), live_reviewed=F("live__last_reviewed_at"),
                          latest_version=Subquery(latest)))

    def get_search_results(self, request, queryset, search_term):
        for term in search_term.split():
            queryset = queryset.filter(Q(key__icontains=term) | Q(live__title__icontains=term)
                                       | Q(live__body__icontains=term))
        return queryset, False

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def has_delete_permission(self, request, obj=None):
        # Snippets are never deleted here: their history is the audit trail. Take them out of use instead.
        return False

    @admin.display(description="Snippet", ordering="live_title")
    def snippet_col(self, obj):
        title = obj.live_title or "Not in use"
        return format_html('<span class="kn-title{}">{}</span><span class="kn-key">{}</span>',
                           "" if obj.live_title else " kn-muted-text", title, obj.key)

    @admin.display(description="Category", ordering="live_category")
    def category_col(self, obj):
        return obj.live_category or "–"

    @admin.display(description="Role", ordering="live_role")
    def role_col(self, obj):
        if obj.live_role == Role.RETRIEVED:
            return format_html('<span class="kn-muted-text">{}</span>', obj.live_role)
        return _badge(obj.live_role) if obj.live_role else "–"

    @admin.display(description="Status", ordering="live_status")
    def status_col(self, obj):
        return _badge(obj.live_status) if obj.live_status else "–"

    @admin.display(description="Channels")
    def channels_col(self, obj):
        if not obj.live_channels:
            return "–"
        if set(obj.live_channels) == set(all_channels()):
            return format_html('<span class="kn-muted-text">all</span>')
        return format_html_join(" ", '<span class="kn-chip">{}</span>', ((c,) for c in obj.live_channels))

    @admin.display(description="Version", ordering="live_version")
    def version_col(self, obj):
        history = admin_views.versions_url(obj)
        if obj.live_version is None:
            return format_html('<a class="kn-muted-text" href="{}" title="Version history">off · v{} latest</a>',
                               history, obj.latest_version or 0)
        live = format_html('<a class="kn-version" href="{}" title="Version history and diffs">v{}</a>', history,
                           obj.live_version)
        if obj.latest_version and obj.latest_version > obj.live_version:
            url = admin_views.release_url(obj, obj.latest_version)
            return format_html('{} <a class="kn-badge kn-warn" href="{}" title="A newer version is waiting to go '
                               'live">v{} awaiting</a>', live, url, obj.latest_version)
        return live

    @admin.display(description="Embedding", ordering="live_embedding")
    def embedding_col(self, obj):
        labels = {EmbeddingState.PENDING: "pending", EmbeddingState.DONE: "ready", EmbeddingState.FAILED: "failed"}
        titles = {EmbeddingState.PENDING: "Being indexed; keyword search already finds it.",
                  EmbeddingState.DONE: "Indexed for meaning-based search.",
                  EmbeddingState.FAILED: "Indexing failed; keyword search still finds it. Re-run `reembed`."}
        if not obj.live_embedding:
            return "–"
        return _badge(obj.live_embedding, labels.get(obj.live_embedding), title=titles.get(obj.live_embedding, ""))

    @admin.display(description="Valid", ordering="live_valid_until")
    def validity_col(self, obj):
        today = timezone.localdate()
        start, end = obj.live_valid_from, obj.live_valid_until
        if end and end < today:
            return format_html('<span class="kn-badge kn-alert">expired {}</span>', _short_date(end))
        if start and start > today:
            text = f"from {_short_date(start)}" + (f" to {_short_date(end)}" if end else "")
            return format_html('<span class="kn-badge kn-info">{}</span>', text)
        if end:
            days = (end - today).days
            css = "kn-warn" if days <= EXPIRING_SOON_DAYS else "kn-plain"
            hint = "last day today" if days == 0 else f"{days} day{'s' if days != 1 else ''} left"
            return format_html('<span class="kn-badge {}" title="{}">until {}</span>', css, hint, _short_date(end))
        return format_html('<span class="kn-muted-text">always</span>')

    @admin.display(description="Reviewed", ordering="live_reviewed")
    def reviewed_col(self, obj):
        if not obj.live_reviewed:
            return format_html('<span class="kn-muted-text">never</span>')
        return _short_date(obj.live_reviewed)

    @admin.action(description="Take out of use (history is kept)")
    def deactivate_selected(self, request, queryset):
        if not self.has_change_permission(request):
            messages.error(request, "You may not change snippets.")
            return
        taken = [snippet.key for snippet in queryset
                 if services.snippet_deactivate(key=snippet.key, user=request.user)]
        if taken:
            messages.success(request, f"Taken out of use: {', '.join(taken)}. Roll back or release a version from "
                                      "the history page to bring one back.")
        else:
            messages.info(request, "None of the selected snippets was in use.")

    # ------------------------------------------------------------------ form
    def get_fieldsets(self, request, obj=None):
        first = ("key", "title", "body") if obj is None else ("live_summary", "title", "body")
        return [
            (None, {"fields": first}),
            ("How it is used", {"fields": ("category", "role", "status", "channels", "language")}),
            ("Swahili version", {"fields": ("title_sw", "body_sw"), "classes": ("collapse",)}),
            ("Links and tags", {"fields": ("related_keys", "tags"), "classes": ("collapse",)}),
            ("Validity and review", {"fields": (("valid_from", "valid_until"), "last_reviewed_at")}),
            ("This change", {"fields": ("notes", "publish", "base_version")}),
        ]

    def get_readonly_fields(self, request, obj=None):
        return ("live_summary",) if obj is not None else ()

    @admin.display(description="Live version")
    def live_summary(self, obj):
        live = admin_views.live_version(obj)
        history = admin_views.versions_url(obj)
        if live is None:
            return format_html('<strong>{}</strong> · not in use · <a href="{}">history</a>', obj.key, history)
        who = live.created_by.get_username() if live.created_by else "import"
        return format_html('<code>{}</code> · v{} saved by {} on {} · <a href="{}">history and diffs</a>',
                           obj.key, live.version, who, timezone.localtime(live.created_at).strftime("%d %b %Y %H:%M"),
                           history)

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        # The gap digest links here with ?title=...&body=... to pre-fill a new snippet.
        for field in ("title", "body", "category"):
            if field in request.GET:
                initial[field] = request.GET[field]
        return initial

    def add_view(self, request, form_url="", extra_context=None):
        return super().add_view(request, form_url, {"show_save_and_add_another": False, **(extra_context or {})})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        if obj is not None and not self.has_change_permission(request, obj) and self.has_view_permission(request, obj):
            return HttpResponseRedirect(admin_views.versions_url(obj))
        extra = {"show_save_and_add_another": False, **(extra_context or {})}
        if obj is not None:
            live = admin_views.live_version(obj)
            newer = (SnippetVersion.objects.filter(snippet=obj, version__gt=live.version).order_by("-version").first()
                     if live else None)
            extra.update(live=live, newer=newer, versions_url=admin_views.versions_url(obj),
                         newer_release_url=admin_views.release_url(obj, newer.version) if newer else "",
                         test_retrieval_url=admin_views.TEST_RETRIEVAL_URL)
        return super().change_view(request, object_id, form_url, extra)

    def changelist_view(self, request, extra_context=None):
        extra = dict(extra_context or {})
        extra.update(title="Snippets", awaiting_count=selectors.awaiting_release_count(),
                     review_queue_url=reverse("admin:knowledge_snippet_review_queue"),
                     test_retrieval_url=admin_views.TEST_RETRIEVAL_URL)
        return super().changelist_view(request, extra)

    def save_model(self, request, obj, form, change):
        content = form.content()
        publish = form.cleaned_data.get("publish", False)
        request._knowledge_messaged = True
        try:
            if not change:
                version = services.snippet_create(key=form.cleaned_data["key"], **content, created_by=request.user,
                                                  activate=publish)
                obj.pk = version.snippet_id
                obj.key = version.key
            elif form.is_unchanged():
                messages.info(request, format_html("No changes to “{}”: no new version was saved.", obj.key))
                return
            else:
                version = services.snippet_edit(key=obj.key, changes=content, created_by=request.user,
                                                activate=publish)
        except services.SnippetExists:
            # Created by someone else since the form checked: the key's unique index refused this one.
            raise _ServiceRejected(ValidationError({"key": ["A snippet with this key already exists."]})) from None
        except ValidationError as exc:
            raise _ServiceRejected(exc) from exc
        self._report_saved(request, obj, version, publish)

    def save_related(self, request, form, formsets, change):
        # Nothing relational is saved on Snippet itself; versions were written by the service.
        pass

    def _report_saved(self, request, obj, version, publish):
        if version.is_active:
            messages.success(request, format_html("Saved v{} of “{}”: it is live now.", version.version, obj.key))
        elif publish:
            _allowed, reason = services.snippet_version_can_activate(version=version, user=request.user)
            messages.warning(request, admin_views._gate_message(obj, version, reason))
        else:
            messages.info(request, format_html("Saved v{} of “{}” without publishing; the live version is unchanged. "
                                               '<a href="{}">Release it</a> when it is ready.', version.version,
                                               obj.key, admin_views.release_url(obj, version.version)))

    def response_add(self, request, obj, post_url_continue=None):
        if "_continue" in request.POST or "_addanother" in request.POST:
            return super().response_add(request, obj, post_url_continue)
        return HttpResponseRedirect(admin_views.versions_url(obj))

    def response_change(self, request, obj):
        if "_continue" in request.POST or "_addanother" in request.POST:
            return super().response_change(request, obj)
        return HttpResponseRedirect(admin_views.versions_url(obj))

    # ------------------------------------------------------------------ extra pages
    def get_urls(self):
        def wrap(view):
            return self.admin_site.admin_view(partial(view, model_admin=self))

        return [
            path("review/", wrap(admin_views.snippet_review_queue_view), name="knowledge_snippet_review_queue"),
            path("preview/", wrap(admin_views.snippet_preview_view), name="knowledge_snippet_preview"),
            path("<int:object_id>/versions/", wrap(admin_views.snippet_versions_view),
                 name="knowledge_snippet_versions"),
            path("<int:object_id>/versions/diff/", wrap(admin_views.snippet_diff_view),
                 name="knowledge_snippet_diff"),
            path("<int:object_id>/versions/<int:number>/release/", wrap(admin_views.snippet_release_view),
                 name="knowledge_snippet_release"),
            path("<int:object_id>/versions/<int:number>/rollback/", wrap(admin_views.snippet_rollback_view),
                 name="knowledge_snippet_rollback"),
        ] + super().get_urls()


def _short_date(value: dt.date) -> str:
    today = timezone.localdate()
    return value.strftime("%d %b") if value.year == today.year else value.strftime("%d %b %Y")


# ============================================================================= services

class ServiceForm(ServiceErrorForm):
    class Meta:
        model = Service
        fields = ["name", "description", "duration_minutes", "price", "currency", "is_active"]
        help_texts = {
            "name": "As customers know it (e.g. “Swedish massage, 60 min”).",
            "duration_minutes": "How long it takes, in minutes. Leave empty for a product (sold, not booked).",
            "price": "The price customers pay, e.g. 3500 or 3500.50.",
            "currency": "ISO 4217 code such as KES, USD, EUR.",
            "is_active": "Untick to stop offering it without deleting it.",
        }
        labels = {"duration_minutes": "Duration (minutes)", "is_active": "Offered"}
        widgets = {"description": forms.Textarea(attrs={"rows": 3}),
                   "currency": forms.TextInput(attrs={"size": 4, "style": "text-transform:uppercase"})}

    def clean(self):
        cleaned = super().clean()
        values = {field: cleaned.get(field, getattr(self.instance, field)) for field in self._meta.fields}
        try:
            normalised = services.service_clean(**values)
        except ValidationError as exc:
            # Report every problem at once, but not twice for a field that failed its own checks.
            fresh = {field: problems for field, problems in exc.message_dict.items() if field not in self.errors}
            if fresh:
                _errors_to_form(self, ValidationError(fresh))
        else:
            if not self.errors:
                cleaned.update(normalised)
        return cleaned


class ServiceChangeListForm(ServiceForm):
    """The row form of the list's editable "active" column."""

    class Meta(ServiceForm.Meta):
        fields = ["is_active"]

    def clean(self):
        return forms.ModelForm.clean(self)


@admin.register(Service)
class ServiceAdmin(_ServiceErrorsMixin, TenantOnlyAdmin):
    form = ServiceForm
    list_display = ("name", "duration_col", "price_col", "is_active")
    list_display_links = ("name",)
    list_editable = ("is_active",)
    list_filter = ("is_active", "currency")
    search_fields = ("name", "description")
    fieldsets = [(None, {"fields": ("name", "description")}),
                 ("Price and duration", {"fields": ("duration_minutes", ("price", "currency"), "is_active")})]

    class Media:
        css = ASSETS_CSS

    def get_changelist_form(self, request, **kwargs):
        return ServiceChangeListForm

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        initial.setdefault("currency", getattr(connection.tenant, "currency", "") or "KES")
        return initial

    @admin.display(description="Duration", ordering="duration_minutes")
    def duration_col(self, obj):
        if obj.duration_minutes is None:
            return "— (product)"
        hours, minutes = divmod(obj.duration_minutes, 60)
        if not hours:
            return f"{minutes} min"
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"

    @admin.display(description="Price", ordering="price")
    def price_col(self, obj):
        return f"{obj.currency} {obj.price:,.2f}"

    def save_model(self, request, obj, form, change):
        try:
            if change:
                changes = {field: form.cleaned_data[field] for field in form.changed_data
                           if field in form.cleaned_data}
                saved = services.service_update(service=Service.objects.get(pk=obj.pk), changes=changes,
                                                user=request.user)
            else:
                fields = {field: form.cleaned_data[field] for field in ServiceForm.Meta.fields}
                saved = services.service_create(**fields, user=request.user)
        except services.ServiceExists:
            name = form.cleaned_data["name"]
            raise _ServiceRejected(ValidationError({"name": [f"A service called {name!r} already exists."]})) from None
        except ValidationError as exc:
            raise _ServiceRejected(exc) from exc
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.service_delete(service=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for service in queryset:
            services.service_delete(service=service, user=request.user)


# ============================================================================= opening hours

@admin.register(OpeningHours)
class OpeningHoursAdmin(TenantOnlyAdmin):
    """The whole week on one page (the list is the editor); single rows redirect there."""

    class Media:
        css = ASSETS_CSS

    def changelist_view(self, request, extra_context=None):
        return admin_views.weekly_hours_view(request, model_admin=self)

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:knowledge_openinghours_changelist"))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:knowledge_openinghours_changelist"))

    def delete_view(self, request, object_id, extra_context=None):
        # A row is never deleted on its own: the weekly page replaces a day's ranges through the service.
        return HttpResponseRedirect(reverse("admin:knowledge_openinghours_changelist"))


# ============================================================================= special days

class SpecialDayForm(ServiceErrorForm):
    hours = forms.CharField(required=False, label="Open", widget=forms.TextInput(
        attrs={"class": "kn-hours-input", "placeholder": "Closed all day", "autocomplete": "off"}),
        help_text="Ranges such as “10:00-14:00” or “09:00-12:00, 14:00-16:00”. Leave empty if you are closed "
                  "all day. These replace the weekly hours for this date.")

    class Meta:
        model = SpecialDay
        fields = ["date", "note"]
        help_texts = {"date": "The day this exception applies to.",
                      "note": "Why (e.g. “Christmas Eve”); customers may be told this."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial.setdefault("hours", admin_views.ranges_to_text(self.instance.ranges.all()))

    def clean(self):
        cleaned = super().clean()
        try:
            ranges = [services.time_range_parse(text=text, field="hours")
                      for text in admin_views.ranges_from_text(cleaned.get("hours", ""))]
            cleaned["ranges"] = services.time_ranges_check(ranges=ranges, field="hours")
        except ValidationError as exc:
            _errors_to_form(self, exc)
        return cleaned


class UpcomingFilter(admin.SimpleListFilter):
    title = "when"
    parameter_name = "when"

    def lookups(self, request, model_admin):
        return [("upcoming", "Today and later"), ("past", "Past")]

    def queryset(self, request, queryset):
        today = timezone.localdate()
        if self.value() == "upcoming":
            return queryset.filter(date__gte=today)
        if self.value() == "past":
            return queryset.filter(date__lt=today)
        return queryset


@admin.register(SpecialDay)
class SpecialDayAdmin(_ServiceErrorsMixin, TenantOnlyAdmin):
    form = SpecialDayForm
    list_display = ("date", "weekday_col", "note", "hours_col")
    list_filter = (UpcomingFilter,)
    search_fields = ("note",)
    date_hierarchy = "date"
    fields = ("date", "note", "hours")

    class Media:
        css = ASSETS_CSS

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("ranges")

    @admin.display(description="Day")
    def weekday_col(self, obj):
        return obj.date.strftime("%A")

    @admin.display(description="Open")
    def hours_col(self, obj):
        text = admin_views.ranges_to_text(obj.ranges.all())
        return text or format_html('<span class="kn-badge kn-alert">closed</span>')

    def save_model(self, request, obj, form, change):
        old_date = SpecialDay.objects.filter(pk=obj.pk).values_list("date", flat=True).first() if change else None
        try:
            saved = services.special_day_set(date=form.cleaned_data["date"], ranges=form.cleaned_data["ranges"],
                                             note=form.cleaned_data.get("note", ""), user=request.user)
        except ValidationError as exc:
            raise _ServiceRejected(exc) from exc
        if old_date and old_date != saved.date:
            services.special_day_delete(date=old_date, user=request.user)
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.special_day_delete(date=obj.date, user=request.user)

    def delete_queryset(self, request, queryset):
        for day in queryset:
            services.special_day_delete(date=day.date, user=request.user)


# ============================================================================= smoke tests

class SmokeTestForm(ServiceErrorForm):
    expected_keys = forms.MultipleChoiceField(
        label="Expected snippets", widget=KeyPicker("snippets", False),
        help_text="The check passes when the question retrieves at least one of these.")

    class Meta:
        model = SmokeTest
        fields = ["query", "expected_keys"]
        help_texts = {"query": "A question a customer might send, e.g. “Is there parking?”."}
        widgets = {"query": forms.TextInput(attrs={"class": "vLargeTextField"})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        keys = list(Snippet.objects.order_by("key").values_list("key", flat=True))
        # Keep keys a test already names even if that snippet no longer exists, so saving never drops them.
        keys += [key for key in (self.instance.expected_keys or []) if key not in keys]
        self.fields["expected_keys"].choices = [(key, key) for key in keys]


@admin.register(SmokeTest)
class SmokeTestAdmin(_ServiceErrorsMixin, TenantOnlyAdmin):
    form = SmokeTestForm
    list_display = ("query", "keys_col")
    search_fields = ("query", "expected_keys")

    class Media:
        css = ASSETS_CSS

    def get_queryset(self, request):
        # Keys no snippet has (typos, deleted snippets), computed in the list's one query.
        missing = RawSQL(f"array(select k from unnest({SmokeTest._meta.db_table}.expected_keys) as k where not exists "
                         f"(select 1 from {Snippet._meta.db_table} s where s.key = k))", [],
                         output_field=ArrayField(CharField()))
        return super().get_queryset(request).annotate(missing_keys=missing)

    def get_urls(self):
        run = self.admin_site.admin_view(partial(admin_views.smoke_tests_run_view, model_admin=self))
        return [path("run/", run, name="knowledge_smoketest_run")] + super().get_urls()

    @admin.display(description="Expected snippets")
    def keys_col(self, obj):
        missing = set(getattr(obj, "missing_keys", None) or [])
        return format_html_join(" ", '<span class="kn-chip{}" title="{}">{}</span>',
                                ((" kn-chip-missing" if key in missing else "",
                                  "No snippet has this key" if key in missing else "", key)
                                 for key in obj.expected_keys))

    def save_model(self, request, obj, form, change):
        values = {"query": form.cleaned_data["query"], "expected_keys": list(form.cleaned_data["expected_keys"])}
        try:
            if change:
                saved = services.smoke_test_update(test=SmokeTest.objects.get(pk=obj.pk), **values)
            else:
                saved = services.smoke_test_create(**values)
        except ValidationError as exc:
            raise _ServiceRejected(exc) from exc
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.smoke_test_delete(query=obj.query)

    def delete_queryset(self, request, queryset):
        for test in queryset:
            services.smoke_test_delete(query=test.query)

