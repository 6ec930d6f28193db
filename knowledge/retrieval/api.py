"""POST /api/v1/retrieve/: ranked results with scores, the mode a chat turn would use, any refusal reason."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge.models import Channel
from knowledge.retrieval.filters import FILTER_NAMES
from knowledge.retrieval.pipeline import MAX_QUERY_CHARS, retrieve
from knowledge.serializers import FiltersField

INTENTS = ("booking", "cancel", "reschedule", "services", "hours", "other", "greeting", "thanks")


class RetrieveApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = serializers.CharField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
        # A plain string checked against INTENTS: the same enum is published by the chat API, and two
        # schema components for one enum make drf-spectacular warn about a naming collision.
        intent = serializers.CharField(default="other", help_text=f"One of: {', '.join(INTENTS)}.")
        channel = serializers.ChoiceField(choices=Channel.values, default=Channel.CHAT)
        k = serializers.IntegerField(min_value=1, max_value=50, required=False)
        filters = FiltersField(required=False, flat_errors=True, help_text=f"Any of: {', '.join(FILTER_NAMES)}.")

        def validate_intent(self, value):
            if value not in INTENTS:
                raise serializers.ValidationError(f"Unknown intent; use one of: {', '.join(INTENTS)}.")
            return value

    class ResultSerializer(serializers.Serializer):
        key = serializers.CharField()
        version = serializers.IntegerField()
        title = serializers.CharField()
        category = serializers.CharField()
        score = serializers.FloatField()
        match_type = serializers.CharField()

    class OutputSerializer(serializers.Serializer):
        mode = serializers.CharField()
        results = serializers.ListField(child=serializers.DictField())
        fallback_used = serializers.BooleanField()
        refusal_reason = serializers.CharField(allow_null=True)

    @extend_schema(request=InputSerializer, responses=OutputSerializer, summary="Retrieve ranked knowledge")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = retrieve(intent=values["intent"], query=values["query"], channel=values["channel"],
                          filters=values.get("filters"), k=values.get("k"))
        results = self.ResultSerializer(result.snippets, many=True).data
        return Response({"mode": result.mode, "results": results, "fallback_used": result.fallback_used,
                         "refusal_reason": result.refusal_reason})
