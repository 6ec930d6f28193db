"""Authoring REST API (docs/DESIGN.md §7): snippets and their versions, services, opening hours.

Views are thin: nested input serializers check shapes, the services in knowledge.services validate
meaning and write. Their errors reach the client through the one handler, ratiba.api_errors.
"""
from __future__ import annotations

import datetime as dt

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge import selectors, services
from knowledge.audit import request_actor
from knowledge.models import Category, Channel, EmbeddingState, Role, Service, Snippet, Status, Weekday
from knowledge.seed import WEEKDAYS
from knowledge.serializers import (
    HoursOutput,
    ServiceOutput,
    ServicePage,
    SnippetVersionOutput,
    SnippetVersionPage,
)
ERROR_RESPONSES = {
    400: OpenApiResponse(description='Validation error: {"error": {"code": "invalid_request", "message", "fields"}}'),
    401: OpenApiResponse(description="Missing or invalid API key."),
}


def _paginate(*, request, view, queryset, output) -> Response:
    paginator = LimitOffsetPagination()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(output(page, many=True).data)


def _editor(request):
    """The Django user behind a request, or None for API keys (which are not people and cannot review)."""
    user = getattr(request, "user", None)
    return user if getattr(user, "is_authenticated", False) and hasattr(user, "has_perm") else None


# ----------------------------------------------------------------------------- snippets

def TRANSLATIONS_INPUT():  # noqa: N802 - a field factory, read like a field class
    return serializers.DictField(
        child=serializers.DictField(child=serializers.CharField(allow_blank=True, max_length=20_000)),
        required=False, help_text='Owner-approved versions: {"sw": {"title": "...", "body": "..."}}; '
                                  'an empty body removes one.')


class SnippetListApi(APIView):
    """GET: active versions (filtered, paginated). POST: a new key with its version 1."""

    class SnippetFilterInput(serializers.Serializer):
        category = serializers.ChoiceField(choices=Category.choices, required=False)
        role = serializers.ChoiceField(choices=Role.choices, required=False)
        status = serializers.ChoiceField(choices=Status.choices, required=False)
        channel = serializers.ChoiceField(choices=Channel.choices, required=False)
        tag = serializers.CharField(required=False, max_length=50)
        language = serializers.CharField(required=False, max_length=8)
        embedding_state = serializers.ChoiceField(choices=EmbeddingState.choices, required=False)
        q = serializers.CharField(required=False, max_length=200)
        expiring_within_days = serializers.IntegerField(required=False, min_value=0, max_value=3650)

    class SnippetCreateInput(serializers.Serializer):
        key = serializers.CharField(max_length=100)
        title = serializers.CharField(max_length=200)
        body = serializers.CharField(max_length=20_000)
        category = serializers.CharField()
        role = serializers.CharField(default=Role.RETRIEVED)
        language = serializers.CharField(default="en", max_length=8)
        channels = serializers.ListField(child=serializers.CharField(), required=False)
        tags = serializers.ListField(child=serializers.CharField(), required=False)
        status = serializers.CharField(default=Status.ACCEPTED)
        related_keys = serializers.ListField(child=serializers.CharField(), required=False)
        notes = serializers.CharField(required=False, allow_blank=True, default="")
        valid_from = serializers.DateField(required=False, allow_null=True)
        valid_until = serializers.DateField(required=False, allow_null=True)
        last_reviewed_at = serializers.DateField(required=False, allow_null=True)
        translations = TRANSLATIONS_INPUT()

    @extend_schema(operation_id="snippets_list", parameters=[SnippetFilterInput],
                   responses={200: SnippetVersionPage, **ERROR_RESPONSES})
    def get(self, request):
        filters = self.SnippetFilterInput(data=request.query_params)
        filters.is_valid(raise_exception=True)
        queryset = selectors.snippet_version_list(filters=filters.validated_data)
        return _paginate(request=request, view=self, queryset=queryset, output=SnippetVersionOutput)

    @extend_schema(operation_id="snippets_create", request=SnippetCreateInput,
                   responses={201: SnippetVersionOutput, 409: OpenApiResponse(description="The key exists."),
                              **ERROR_RESPONSES},
                   description="Creates the key and its version 1. A guardrail or behaviour snippet is saved "
                               "inactive (awaiting_review) until a reviewer releases it in the admin.")
    def post(self, request):
        data = self.SnippetCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        version = services.snippet_create(**data.validated_data, created_by=_editor(request),
                                          actor=request_actor(request))
        return Response(SnippetVersionOutput(version).data, status=status.HTTP_201_CREATED)


class SnippetDetailApi(APIView):
    """GET: the key's active (else latest) version. PATCH: save the changes as a new version."""

    class SnippetPatchInput(serializers.Serializer):
        title = serializers.CharField(max_length=200, required=False)
        body = serializers.CharField(max_length=20_000, required=False)
        category = serializers.CharField(required=False)
        role = serializers.CharField(required=False)
        language = serializers.CharField(max_length=8, required=False)
        channels = serializers.ListField(child=serializers.CharField(), required=False)
        tags = serializers.ListField(child=serializers.CharField(), required=False)
        status = serializers.CharField(required=False)
        related_keys = serializers.ListField(child=serializers.CharField(), required=False)
        notes = serializers.CharField(required=False, allow_blank=True)
        valid_from = serializers.DateField(required=False, allow_null=True)
        valid_until = serializers.DateField(required=False, allow_null=True)
        last_reviewed_at = serializers.DateField(required=False, allow_null=True)
        translations = TRANSLATIONS_INPUT()

        def validate(self, attrs):
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
            return attrs

    @extend_schema(operation_id="snippets_retrieve", responses={200: SnippetVersionOutput, 404: OpenApiResponse()})
    def get(self, request, key: str):
        version = selectors.snippet_version_get(key=key)
        if version is None:
            raise exceptions.NotFound(f"No snippet with key {key!r}.")
        return Response(SnippetVersionOutput(version).data)

    @extend_schema(operation_id="snippets_update", request=SnippetPatchInput,
                   responses={200: SnippetVersionOutput, 404: OpenApiResponse(), **ERROR_RESPONSES},
                   description="Saves a NEW version (nothing is overwritten): the active version (else the "
                               "latest) plus these changes, activated unless the release gate applies (guardrail "
                               "and behaviour versions then wait for a reviewer). No change, no new version.")
    def patch(self, request, key: str):
        data = self.SnippetPatchInput(data=request.data)
        data.is_valid(raise_exception=True)
        # An unknown key is the service's SnippetNotFound (a 404).
        version = services.snippet_edit(key=key, changes=dict(data.validated_data), created_by=_editor(request),
                                        actor=request_actor(request))
        return Response(SnippetVersionOutput(version).data)


class SnippetVersionListApi(APIView):
    """Every version of a key, newest first."""

    @extend_schema(operation_id="snippets_versions_list", responses={200: SnippetVersionPage, 404: OpenApiResponse()})
    def get(self, request, key: str):
        if not Snippet.objects.filter(key=key).exists():
            raise exceptions.NotFound(f"No snippet with key {key!r}.")
        return _paginate(request=request, view=self, queryset=selectors.snippet_versions_of(key=key),
                         output=SnippetVersionOutput)


class SnippetVersionActivateApi(APIView):
    """Make version n the active one (atomically deactivating the previous)."""

    @extend_schema(operation_id="snippets_versions_activate", request=None,
                   responses={200: SnippetVersionOutput, 404: OpenApiResponse(),
                              403: OpenApiResponse(description='{"error": {"code": "review_required"}}: guardrail '
                                                               "and behaviour versions are released by a second "
                                                               "person in the admin, never by an API key.")})
    def post(self, request, key: str, number: int):
        version = selectors.snippet_version_get(key=key, version=number)
        if version is None:
            raise exceptions.NotFound(f"Snippet {key!r} has no version {number}.")
        version = services.snippet_version_activate(version=version, user=_editor(request),
                                                    actor=request_actor(request))
        return Response(SnippetVersionOutput(version).data)


# ----------------------------------------------------------------------------- services

class ServiceListApi(APIView):
    """GET: services in display order (paginated). POST: add one."""

    class ServiceCreateInput(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        duration_minutes = serializers.IntegerField(min_value=1, max_value=services.MAX_SERVICE_MINUTES, required=False,
                                                    allow_null=True, default=None,
                                                    help_text="Minutes; omit or null for a product.")
        price = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)
        currency = serializers.CharField(max_length=3, default="KES")
        is_active = serializers.BooleanField(default=True)

    @extend_schema(operation_id="services_list", responses={200: ServicePage, **ERROR_RESPONSES})
    def get(self, request):
        return _paginate(request=request, view=self, queryset=selectors.service_list(), output=ServiceOutput)

    @extend_schema(operation_id="services_create", request=ServiceCreateInput,
                   responses={201: ServiceOutput, 409: OpenApiResponse(), **ERROR_RESPONSES})
    def post(self, request):
        data = self.ServiceCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        service = services.service_create(**data.validated_data, actor=request_actor(request))
        return Response(ServiceOutput(service).data, status=status.HTTP_201_CREATED)


class ServiceDetailApi(APIView):
    """GET or PATCH one service."""

    class ServicePatchInput(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(required=False, allow_blank=True)
        duration_minutes = serializers.IntegerField(min_value=1, max_value=services.MAX_SERVICE_MINUTES, required=False,
                                                    allow_null=True, help_text="Minutes; null makes it a product.")
        price = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0, required=False)
        currency = serializers.CharField(max_length=3, required=False)
        is_active = serializers.BooleanField(required=False)

    @extend_schema(operation_id="services_retrieve", responses={200: ServiceOutput, 404: OpenApiResponse()})
    def get(self, request, service_id: int):
        service = Service.objects.filter(pk=service_id).first()
        if service is None:
            raise exceptions.NotFound(f"No service {service_id}.")
        return Response(ServiceOutput(service).data)

    @extend_schema(operation_id="services_update", request=ServicePatchInput,
                   responses={200: ServiceOutput, 404: OpenApiResponse(), **ERROR_RESPONSES})
    def patch(self, request, service_id: int):
        data = self.ServicePatchInput(data=request.data)
        data.is_valid(raise_exception=True)
        service = Service.objects.filter(pk=service_id).first()
        if service is None:
            raise exceptions.NotFound(f"No service {service_id}.")
        service = services.service_update(service=service, changes=dict(data.validated_data),
                                          actor=request_actor(request))
        return Response(ServiceOutput(service).data)


# ----------------------------------------------------------------------------- hours

def _range_text(row) -> str:
    return f"{row.opens:%H:%M}-{row.closes:%H:%M}"


def _hours_payload() -> dict:
    week = selectors.opening_hours_week()
    return {
        "weekly": {WEEKDAYS[day]: [_range_text(row) for row in rows] for day, rows in week.items()},
        "special": [{"date": day.date, "hours": [_range_text(r) for r in day.ranges.all()], "note": day.note}
                    for day in selectors.special_day_list()],
    }


class HoursApi(APIView):
    """GET: weekly ranges per day and dated exceptions."""

    @extend_schema(operation_id="hours_retrieve", responses={200: HoursOutput})
    def get(self, request):
        return Response(HoursOutput(_hours_payload()).data)


class WeeklyHoursApi(APIView):
    """PUT: replace the ranges of the days given (a day with [] is closed; days left out are unchanged)."""

    # The service names days in full ("monday"); the API uses mon..sun.
    error_field_names = {Weekday(day).label.lower(): name for day, name in enumerate(WEEKDAYS)}

    class WeeklyHoursInput(serializers.Serializer):
        mon = serializers.ListField(child=serializers.CharField(), required=False)
        tue = serializers.ListField(child=serializers.CharField(), required=False)
        wed = serializers.ListField(child=serializers.CharField(), required=False)
        thu = serializers.ListField(child=serializers.CharField(), required=False)
        fri = serializers.ListField(child=serializers.CharField(), required=False)
        sat = serializers.ListField(child=serializers.CharField(), required=False)
        sun = serializers.ListField(child=serializers.CharField(), required=False)

        def validate(self, attrs):
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown day: use mon..sun."] for name in unknown})
            if not attrs:
                raise serializers.ValidationError("Give at least one day, for example {\"mon\": [\"09:00-17:00\"]}.")
            return attrs

    @extend_schema(operation_id="hours_weekly_update", request=WeeklyHoursInput,
                   responses={200: HoursOutput, **ERROR_RESPONSES})
    def put(self, request):
        data = self.WeeklyHoursInput(data=request.data)
        data.is_valid(raise_exception=True)
        week = {WEEKDAYS.index(name): ranges for name, ranges in data.validated_data.items()}
        services.opening_hours_set_week(week=week, actor=request_actor(request))
        return Response(HoursOutput(_hours_payload()).data)


class SpecialDayApi(APIView):
    """PUT: set a dated exception (holiday hours; [] = closed). DELETE: remove it."""

    error_field_names = {"ranges": "hours"}

    class SpecialDayInput(serializers.Serializer):
        hours = serializers.ListField(child=serializers.CharField(), allow_empty=True)
        note = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")

    @extend_schema(operation_id="hours_special_set", request=SpecialDayInput,
                   parameters=[OpenApiParameter("date", str, OpenApiParameter.PATH, description="YYYY-MM-DD")],
                   responses={200: HoursOutput, **ERROR_RESPONSES})
    def put(self, request, date: str):
        data = self.SpecialDayInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.special_day_set(date=_path_date(date), ranges=data.validated_data["hours"],
                                 note=data.validated_data["note"], actor=request_actor(request))
        return Response(HoursOutput(_hours_payload()).data)

    @extend_schema(operation_id="hours_special_delete", request=None,
                   parameters=[OpenApiParameter("date", str, OpenApiParameter.PATH, description="YYYY-MM-DD")],
                   responses={204: None, 404: OpenApiResponse()})
    def delete(self, request, date: str):
        if not services.special_day_delete(date=_path_date(date), actor=request_actor(request)):
            raise exceptions.NotFound(f"No special day on {date}.")
        return Response(status=status.HTTP_204_NO_CONTENT)


def _path_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise exceptions.ValidationError({"date": [f"Enter a date as YYYY-MM-DD, not {text!r}."]}) from None

