"""The owner's "test retrieval" page: type a question, see what every stage found and why."""
from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import connection
from django.http import Http404
from django.template.response import TemplateResponse

from knowledge.models import Category, Channel
from knowledge.retrieval.config import effective_mode, retrieval_settings_get
from knowledge.retrieval.filters import FilterError
from knowledge.retrieval.pipeline import MAX_QUERY_CHARS, retrieve
from knowledge.retrieval.trivial import is_trivial

INTENTS = [("other", "other (all categories)"), ("services", "services"), ("hours", "hours"),
           ("booking", "booking"), ("cancel", "cancel"), ("reschedule", "reschedule")]


class TestRetrievalForm(forms.Form):
    query = forms.CharField(max_length=MAX_QUERY_CHARS, label="Customer question",
                            widget=forms.TextInput(attrs={"size": 80, "autofocus": True,
                                                          "placeholder": "e.g. Is there parking?"}))
    intent = forms.ChoiceField(choices=INTENTS, initial="other")
    channel = forms.ChoiceField(choices=Channel.choices, initial=Channel.CHAT)
    mode = forms.ChoiceField(choices=[("", "the tenant's current mode"), ("hybrid", "hybrid"), ("inline", "inline")],
                             required=False)
    category = forms.MultipleChoiceField(choices=Category.choices, required=False,
                                         widget=forms.CheckboxSelectMultiple)
    tags = forms.CharField(required=False, help_text="Comma-separated; any of them.")
    keys = forms.CharField(required=False, help_text="Comma-separated snippet keys.")
    collection = forms.CharField(required=False, help_text="Comma-separated collection names.")
    updated_since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def filters(self) -> dict:
        data = self.cleaned_data

        def split(value: str) -> list[str]:
            return [item.strip() for item in (value or "").split(",") if item.strip()]

        filters = {"category": data.get("category") or [], "tags": split(data.get("tags")),
                   "keys": split(data.get("keys")), "collection": split(data.get("collection")),
                   "updated_since": data.get("updated_since")}
        return {name: value for name, value in filters.items() if value}


def _test_retrieval(request):
    if connection.schema_name == "public":
        raise Http404("Test retrieval runs on a business's own host.")
    settings_row = retrieval_settings_get()
    form = TestRetrievalForm(request.GET or None)
    result = None
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            result = retrieve(intent=data["intent"], query=data["query"], channel=data["channel"],
                              filters=form.filters(), mode=data.get("mode") or None, record=False)
        except FilterError as exc:
            for name, message in exc.fields.items():
                form.add_error(name if name in form.fields else None, message)
    context = {
        **admin.site.each_context(request),
        "title": "Test retrieval",
        "form": form,
        "result": result,
        "trivial": bool(form.is_bound and form.is_valid() and is_trivial(form.cleaned_data["query"])),
        "settings_row": settings_row,
        "tenant_mode": effective_mode(settings_row),
        "debug": result.debug if result else {},
    }
    return TemplateResponse(request, "admin/knowledge/test_retrieval.html", context)


# Wrapped by the admin site: staff login required, the admin's own login redirect and CSRF handling.
test_retrieval_view = admin.site.admin_view(_test_retrieval)
