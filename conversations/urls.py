"""Chat API routes (mounted under /api/v1/)."""
from django.urls import path

from conversations import api

urlpatterns = [
    path("chat/turns/", api.widget_cors(api.ChatTurnApi.as_view()), name="chat-turns"),
    path("chat/turns/stream/", api.widget_cors(api.ChatTurnStreamApi.as_view()), name="chat-turns-stream"),
    path("sessions/<str:session_id>/collections/", api.widget_cors(api.SessionCollectionsApi.as_view()),
         name="session-collections"),
]
