"""Every /api/v1/ route, grouped by app."""
from django.urls import include, path

urlpatterns = [
    path("", include("ratiba.api")),
    path("collections/", include("knowledge.collections.urls")),
    path("", include("knowledge.urls")),
    path("", include("knowledge.retrieval.urls")),
    path("", include("telemetry.api")),
    path("", include("conversations.urls")),
    path("", include("conversations.urls_prompts")),
    path("", include("channels.urls_api")),
]
