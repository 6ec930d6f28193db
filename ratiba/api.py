"""Platform API: who am I (a cheap way for a client to check its key)."""
from django.db import connection
from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView


class WhoAmIApi(APIView):
    @extend_schema(responses=inline_serializer("WhoAmI", {"tenant": serializers.CharField(),
                                                           "key_label": serializers.CharField()}))
    def get(self, request):
        return Response({"tenant": connection.schema_name, "key_label": request.auth.label})


urlpatterns = [path("whoami/", WhoAmIApi.as_view(), name="whoami")]
