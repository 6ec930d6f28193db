"""URLs on the platform host (public schema)."""
from django.contrib import admin
from django.urls import include, path

from ratiba import views
from telemetry import views as telemetry_views

urlpatterns = [
    path("", views.landing, name="landing"),
    path("healthz", views.health, name="health"),
    path("", include("ratiba.urls_accounts")),  # password reset, before the admin's catch-all
    path("admin/", admin.site.urls),
    path("platform/", telemetry_views.platform_overview, name="platform-overview"),
    path("webhooks/", include("channels.whatsapp.urls")),
]

handler404 = "ratiba.views.page_not_found"
handler500 = "ratiba.views.server_error"
