"""Owner pages under /chat/ (tenant hosts)."""
from django.urls import path

from conversations import views

urlpatterns = [
    path("", views.chat_page, name="chat"),
    path("stream/", views.chat_stream, name="chat-stream"),
    path("widget/", views.widget_page, name="chat-widget"),
    path("citations/<str:key>/<int:version>/", views.citation_open, name="chat-citation"),
]
