"""OpenAPI post-processing: every operation documents the errors the platform itself can return.

Views document their own outcomes; the guards every /api/ request passes (key authentication, the per-IP
rate limit, the body-size check, JSON parsing, path lookups, the database guard) can answer any operation,
so they are added here once, all with the one error shape {"error": {code, message, fields?}}. A client
generated from the schema (and the schemathesis run in tests/security/) then knows every status it can get.
"""
from __future__ import annotations

ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error: a machine-readable code, a message for people, and per-field messages.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "example": "invalid_request"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": True,
                           "description": "Field name -> list of messages (nested for nested fields)."},
            },
            "required": ["code", "message"],
        },
    },
    "required": ["error"],
}
DESCRIPTIONS = {
    400: "Invalid request: malformed JSON or invalid fields (`fields` says which).",
    401: "Missing, invalid or revoked API key, or a key of another business.",
    404: "Nothing with that identifier in this business.",
    413: "Request body too large.",
    415: "Unsupported request media type.",
    429: "Rate limited (per API key and per client address); see the `Retry-After` header.",
    503: "Briefly unavailable (database); retry after the `Retry-After` header.",
}


def _statuses_for(operation: dict, path: str) -> set[int]:
    statuses = {429, 503}
    if operation.get("security"):
        statuses.add(401)
    has_body = "requestBody" in operation
    parameters = operation.get("parameters", [])
    if has_body:
        statuses |= {400, 413, 415}
    if parameters:
        statuses.add(400)
    if any(parameter.get("in") == "path" for parameter in parameters) or "{" in path:
        statuses.add(404)
    return statuses


def document_error_responses(result, generator, request, public):
    """drf-spectacular hook: add the platform's error statuses and the Error schema to every operation."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(ERROR_COMPONENT, ERROR_SCHEMA)
    error_content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}}}
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for operation in item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for status in _statuses_for(operation, path):
                responses.setdefault(str(status), {"description": DESCRIPTIONS[status]})
            for status, response in responses.items():
                if status.isdigit() and int(status) >= 400 and not response.get("content"):
                    response["content"] = dict(error_content)
                    response["description"] = response.get("description") or DESCRIPTIONS.get(int(status), "")
    return result
