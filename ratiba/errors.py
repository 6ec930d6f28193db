"""The base of every domain error: what the API answers is read off the error, in one handler (ratiba.api_errors)."""
from __future__ import annotations


class DomainError(Exception):
    """A request the domain refuses. `status`, `code`, `message` and `fields` are the API's answer
    ({"error": {code, message, fields?}}); services raise it, views never catch it."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str, *, code: str | None = None, fields: dict | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.fields = fields or {}
