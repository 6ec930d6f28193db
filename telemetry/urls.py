"""Telemetry pages on a business's host."""
from django.urls import path

from telemetry import views

app_name = "telemetry"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("login/", views.TelemetryLoginView.as_view(), name="login"),
    path("gaps/", views.gaps, name="gaps"),
    path("gaps/refresh/", views.gaps_refresh, name="gaps-refresh"),
    path("gaps/<int:pk>/dismiss/", views.gap_dismiss, name="gap-dismiss"),
    path("gaps/<int:pk>/reopen/", views.gap_reopen, name="gap-reopen"),
    path("digests/", views.digest_list, name="digests"),
    path("digests/<str:day>/", views.digest_detail, name="digest"),
]
