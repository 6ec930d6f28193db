"""URLs on a business's host (its own schema)."""
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from knowledge.retrieval.views import test_retrieval_view
from ratiba import views

urlpatterns = [
    path("", views.tenant_home, name="tenant-home"),
    path("healthz", views.health, name="health"),
    # Before admin.site.urls, whose catch-all would otherwise claim the path.
    path("admin/knowledge/test-retrieval/", test_retrieval_view, name="knowledge-test-retrieval"),
    path("", include("ratiba.urls_accounts")),  # password reset, before the admin's catch-all
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[],
                                                     permission_classes=[]), name="api-docs"),
    path("api/v1/", include("ratiba.api_urls")),
    # Last of the API routes: an unmatched /api/ URL is a JSON 404, never Django's HTML page.
    re_path(r"^api/", views.api_not_found, name="api-not-found"),
    path("telemetry/", include("telemetry.urls")),
    path("chat/", include("conversations.urls_pages")),
    path("", include("channels.urls")),
]

handler404 = "ratiba.views.page_not_found"
handler500 = "ratiba.views.server_error"
