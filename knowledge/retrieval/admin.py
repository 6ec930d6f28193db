"""Admin for the tenant's retrieval settings: bounded parameters, the mode pin and graduation state."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html

from knowledge.models import RetrievalSettings
from knowledge.retrieval.config import (BOUNDS, EDITABLE_FIELDS, bounds_errors, retrieval_settings_get,
                                        retrieval_settings_update)
from knowledge.retrieval.graduation import graduation_reevaluate, graduation_state, kb_fits_inline
from ratiba.admin_scoping import TenantOnlyAdmin

TEST_RETRIEVAL_URL = "/admin/knowledge/test-retrieval/"


class RetrievalSettingsForm(forms.ModelForm):
    class Meta:
        model = RetrievalSettings
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, (low, high) in BOUNDS.items():
            if name in self.fields:
                field = self.fields[name]
                field.help_text = f"Between {low:g} and {high:g}."
                field.widget.attrs.update({"min": low, "max": high})

    def clean(self):
        cleaned = super().clean()
        for name, message in bounds_errors(cleaned).items():
            if name in self.fields:
                self.add_error(name, message)
        return cleaned


@admin.register(RetrievalSettings)
class RetrievalSettingsAdmin(TenantOnlyAdmin):
    form = RetrievalSettingsForm
    readonly_fields = ("current_mode", "graduated_at", "graduation", "updated_at")
    fieldsets = (
        ("Mode", {"fields": ("mode", "current_mode", "graduated_at", "graduation"),
                  "description": "Automatic: inline while the knowledge base fits the caps, hybrid once "
                                 "knowledge_overflow keeps firing. Pin a mode to override."}),
        ("Fusion", {"fields": ("vector_weight", "keyword_weight", "heading_weight", "title_weight", "canonical_boost",
                               "deprecated_penalty", "similarity_threshold")}),
        ("Candidates and budgets", {"fields": ("top_k", "overretrieve_factor", "fts_candidate_cap",
                                               "budget_chat_tokens", "budget_whatsapp_tokens",
                                               "budget_email_tokens")}),
        (None, {"fields": ("updated_at",)}),
    )

    @admin.display(description="Graduation")
    def graduation(self, obj: RetrievalSettings) -> str:
        state = graduation_state(obj)
        return format_html(
            "{} of {} overflow events needed in the last {} days. "
            '<a href="{}">Re-evaluate now</a> · <a href="{}">Test retrieval</a>',
            state.overflows_in_window, state.needed, state.window_days,
            reverse("admin:knowledge_retrievalsettings_reevaluate"), TEST_RETRIEVAL_URL)

    def has_add_permission(self, request, *args):
        return False  # one row per tenant, created on first use

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        if not self._in_scope():
            return super().changelist_view(request, extra_context)
        row = retrieval_settings_get()
        return HttpResponseRedirect(reverse("admin:knowledge_retrievalsettings_change", args=[row.pk]))

    def get_urls(self):
        extra = [path("re-evaluate/", self.admin_site.admin_view(self.reevaluate_view),
                      name="knowledge_retrievalsettings_reevaluate")]
        return extra + super().get_urls()

    def reevaluate_view(self, request):
        if not self.has_change_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        row = retrieval_settings_get()
        before = row.current_mode
        after = graduation_reevaluate(row, kb_fits=kb_fits_inline())
        if after == before:
            messages.info(request, f"Retrieval mode stays {after}.")
        else:
            messages.success(request, f"Retrieval mode changed from {before} to {after}.")
        return HttpResponseRedirect(reverse("admin:knowledge_retrievalsettings_change", args=[row.pk]))

    def save_model(self, request, obj, form, change):
        changes = {name: form.cleaned_data[name] for name in form.changed_data if name in EDITABLE_FIELDS}
        retrieval_settings_update(changes=changes, user=request.user)
        obj.refresh_from_db()
