"""One error shape for the whole API: {"error": {"code", "message", "fields"?}}."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from ratiba.errors import DomainError

CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    503: "unavailable",
}


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    body = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    return {"error": body}


def json_error(status_code: int, message: str, code: str | None = None, fields: dict | None = None) -> JsonResponse:
    """An error response outside DRF (middleware, plain views)."""
    return JsonResponse(error_body(code or CODES.get(status_code, "error"), message, fields), status=status_code)


def _flatten(detail) -> dict:
    if isinstance(detail, dict):
        return {key: [str(item) for item in value] if isinstance(value, list) else _flatten(value)
                for key, value in detail.items()}
    return {"non_field_errors": [str(item) for item in detail]} if isinstance(detail, list) else {}


def _renamed(fields: dict, context) -> dict:
    # A view names fields as its clients see them (`mon`, `hours`); the service names them its own way.
    names = getattr(context.get("view"), "error_field_names", None) or {}
    return {names.get(name, name): value for name, value in fields.items()}


def domain_error_response(exc: DomainError, context=None) -> Response:
    """The API's answer to a domain error: its status, code, message and fields."""
    return Response(error_body(exc.code, exc.message, _renamed(exc.fields, context or {})), status=exc.status)


def exception_handler(exc, context):
    """Every API error in the one shape: DRF's own, domain errors, and a service's Django ValidationError."""
    if isinstance(exc, DomainError):
        set_rollback()
        return domain_error_response(exc, context)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(_renamed(detail, context))
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        message = "Some fields are invalid." if fields else "Invalid request."
        body = error_body("invalid_request", message, fields)
    else:
        detail = getattr(exc, "detail", None)
        message = str(detail) if detail is not None else response.status_text
        custom_code = getattr(exc, "default_code", None)
        if isinstance(exc, exceptions.ParseError):
            custom_code = "malformed_request"
        body = error_body(custom_code if custom_code and response.status_code in (400, 409) else code, message)
    headers = {k: v for k, v in response.items() if k in ("Retry-After", "WWW-Authenticate", "Allow")}
    return Response(body, status=response.status_code or status.HTTP_400_BAD_REQUEST, headers=headers)
