"""GET /api/v1/telemetry/retrieval-health/?days=N: the dashboard's figures as JSON."""
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from telemetry.selectors import MAX_DAYS, retrieval_health


class RetrievalHealthApi(APIView):
    class InputSerializer(serializers.Serializer):
        days = serializers.IntegerField(min_value=1, max_value=MAX_DAYS, default=7)

    @extend_schema(
        parameters=[OpenApiParameter("days", OpenApiTypes.INT, description=f"Window in days (1-{MAX_DAYS}), default 7.")],
        responses={200: OpenApiTypes.OBJECT},
        description="Retrieval health of this business against the SOP's monitoring targets, with daily series.",
    )
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        return Response(retrieval_health(days=params.validated_data["days"]).as_dict())


urlpatterns = [path("telemetry/retrieval-health/", RetrievalHealthApi.as_view(), name="telemetry-retrieval-health")]
