"""Request routing by host, plus the guards every request passes before a view."""
from __future__ import annotations

from urllib.parse import unquote_plus

from django.conf import settings
from django.db import OperationalError, InterfaceError
from django.http import Http404, HttpResponseBadRequest, HttpResponseNotFound
from django_tenants.middleware.main import TenantMainMiddleware

from ratiba.api_errors import json_error
from ratiba.ratelimit import rate_limit_hit

UPLOAD_SUFFIX = "/documents/"


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def _has_nul(request) -> bool:
    # PostgreSQL text cannot hold NUL: a path or query value carrying one would fail deep in a lookup (a 500).
    return "\x00" in request.path or "\x00" in unquote_plus(request.META.get("QUERY_STRING", ""))


def _body_limit(request) -> int:
    # Document uploads are the one API route that takes large bodies.
    if request.path.rstrip("/").endswith(UPLOAD_SUFFIX.rstrip("/")):
        return settings.DOCUMENT_MAX_BYTES
    return settings.API_MAX_BODY_BYTES


class TenantMiddleware(TenantMainMiddleware):
    """Route by Host header; unknown hosts get a 404 and API bodies are size-checked first."""

    def process_request(self, request):
        if _has_nul(request):
            message = "NUL characters are not allowed in URLs."
            return json_error(400, message) if _is_api(request) else HttpResponseBadRequest(message)
        if _is_api(request):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error(400, "Content-Length must be a number.")
            if length > _body_limit(request):
                return json_error(413, f"Request body too large ({length} bytes; limit {_body_limit(request)}).")
        try:
            response = super().process_request(request)
        except Http404:
            if _is_api(request):
                return json_error(404, "No business is served at this host.")
            return HttpResponseNotFound("<h1>Not found</h1><p>No business is served at this host.</p>")
        except (OperationalError, InterfaceError):
            return self.database_unavailable(request)
        if response is None and _is_api(request):
            return self.limit_per_ip(request)
        return response

    @staticmethod
    def limit_per_ip(request):
        # Per client address, per tenant (the cache key carries the schema): a flood from one
        # address cannot starve a business's other clients; per-key limits sit in the API views.
        address = request.META.get("REMOTE_ADDR", "unknown")
        decision = rate_limit_hit(bucket=f"ip:{address}", limit=settings.API_RATE_LIMIT_PER_IP_PER_MINUTE)
        if decision.allowed:
            return None
        response = json_error(429, "Too many requests from this address; slow down.")
        response["Retry-After"] = str(decision.retry_after)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, (OperationalError, InterfaceError)):
            return self.database_unavailable(request)
        return None

    @staticmethod
    def database_unavailable(request):
        # Fail fast; Django's health checks reconnect on the next request.
        response = json_error(503, "The service is briefly unavailable; please retry.")
        response["Retry-After"] = "2"
        return response
