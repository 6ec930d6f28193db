"""Output shapes of the authoring API (inputs are nested in each view, HackSoft style), and the retrieval filters
field every API that retrieves takes."""
from __future__ import annotations

from rest_framework import serializers

from knowledge.models import Category, EmbeddingState, Role, Status
from knowledge.retrieval.filters import FILTER_NAMES, FilterError, Filters, filters_clean


class FiltersField(serializers.DictField):
    """Retrieval filters (chat turns, prompt assembly, retrieve), cleaned by filters_clean into Filters.

    Each bad filter is a field error: {"filters": {"category": ["..."]}}, or with `flat_errors` the retrieve
    API's original shape, {"filters": ["category: ..."]} (kept: clients read it).
    """

    def __init__(self, *, flat_errors: bool = False, **kwargs):
        kwargs.setdefault("help_text", f"Retrieval filters: {', '.join(FILTER_NAMES)}.")
        self.flat_errors = flat_errors
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> Filters:
        try:
            return filters_clean(super().to_internal_value(data))
        except FilterError as exc:
            if self.flat_errors:
                raise serializers.ValidationError([f"{name}: {text}" for name, text in exc.fields.items()]) from exc
            raise serializers.ValidationError({name: [text] for name, text in exc.fields.items()}) from exc


class TranslationOutput(serializers.Serializer):
    title = serializers.CharField(allow_blank=True)
    body = serializers.CharField()


class TranslationsField(serializers.DictField):
    """Owner-approved versions in other languages: {"sw": {"title": "...", "body": "..."}}."""

    child = TranslationOutput()


class SnippetVersionOutput(serializers.Serializer):
    key = serializers.CharField()
    version = serializers.IntegerField()
    title = serializers.CharField()
    body = serializers.CharField()
    category = serializers.ChoiceField(choices=Category.choices)
    role = serializers.ChoiceField(choices=Role.choices)
    language = serializers.CharField()
    channels = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=Status.choices)
    related_keys = serializers.ListField(child=serializers.CharField())
    notes = serializers.CharField()
    valid_from = serializers.DateField(allow_null=True)
    valid_until = serializers.DateField(allow_null=True)
    last_reviewed_at = serializers.DateField(allow_null=True)
    translations = TranslationsField(help_text='Owner-approved versions: {"sw": {"title", "body"}}.')
    token_count = serializers.IntegerField()
    is_active = serializers.BooleanField()
    awaiting_review = serializers.SerializerMethodField(
        help_text="A guardrail/behaviour version that is not live yet: a reviewer must release it in the admin.")
    embedding_state = serializers.ChoiceField(choices=EmbeddingState.choices,
                                              help_text="pending: not embedded yet (still found by keyword search).")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    activated_at = serializers.DateTimeField(allow_null=True)

    def get_awaiting_review(self, version) -> bool:
        from knowledge.services import GATED_ROLES

        return version.role in GATED_ROLES and not version.is_active and version.activated_at is None


class SnippetVersionPage(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = SnippetVersionOutput(many=True)


class ServiceOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    duration_minutes = serializers.IntegerField(allow_null=True, help_text="null for a product")
    price = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    is_active = serializers.BooleanField()
    position = serializers.IntegerField()


class ServicePage(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ServiceOutput(many=True)


class SpecialDayOutput(serializers.Serializer):
    date = serializers.DateField()
    hours = serializers.ListField(child=serializers.CharField(), help_text='Ranges "HH:MM-HH:MM"; [] = closed.')
    note = serializers.CharField()


class WeeklyHoursOutput(serializers.Serializer):
    mon = serializers.ListField(child=serializers.CharField())
    tue = serializers.ListField(child=serializers.CharField())
    wed = serializers.ListField(child=serializers.CharField())
    thu = serializers.ListField(child=serializers.CharField())
    fri = serializers.ListField(child=serializers.CharField())
    sat = serializers.ListField(child=serializers.CharField())
    sun = serializers.ListField(child=serializers.CharField())


class HoursOutput(serializers.Serializer):
    weekly = WeeklyHoursOutput()
    special = SpecialDayOutput(many=True)
