"""REST authentication: `Authorization: Bearer <key>` checked against the request's tenant."""
from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from ratiba.models import ApiKey, KeyScope
from ratiba.services import api_key_authenticate


@dataclass
class ApiClient:
    """The caller behind an API key (DRF's request.user for key-authenticated requests)."""

    api_key: ApiKey
    is_authenticated: bool = True
    is_active: bool = True
    is_staff: bool = False

    @property
    def pk(self) -> str:
        return f"key:{self.api_key.prefix}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Bearer API keys, valid only on their own tenant's host."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0] != self.keyword:
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <api key>'.")
        tenant = getattr(connection, "tenant", None)
        if tenant is None or connection.schema_name == "public":
            raise exceptions.AuthenticationFailed("API keys are accepted on a business's own host only.")
        api_key = api_key_authenticate(raw=parts[1], tenant=tenant)
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key for this business.")
        return ApiClient(api_key=api_key), api_key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


CHAT_KEY_REFUSED = ("This is a chat key (publishable, for a website widget): it can only send chat turns. "
                    "Use a full key for this endpoint.")


def key_scope_allows(*, api_key: ApiKey, view) -> bool:
    """A full key opens every endpoint; a chat key only views that declare `chat_key_allowed`."""
    return api_key.scope == KeyScope.FULL or bool(getattr(view, "chat_key_allowed", False))


class HasTenantApiKey(permissions.BasePermission):
    """Allow callers with a valid key of this tenant whose scope covers the view (deny by default)."""

    message = CHAT_KEY_REFUSED

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ApiClient) and key_scope_allows(api_key=request.user.api_key, view=view)


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the Bearer API key in the OpenAPI schema."""

    target_class = "ratiba.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A per-business API key (issue_api_key)."}
