"""Webhook routes on the platform host (public schema)."""
from django.urls import path

from channels.whatsapp import views

urlpatterns = [path("whatsapp/", views.webhook, name="whatsapp-webhook")]
