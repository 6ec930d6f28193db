"""Errors of the collections domain, each carrying the HTTP status and code the API answers with."""
from __future__ import annotations


class CollectionsError(Exception):
    """A request about collections or documents that cannot be carried out; the message is for people."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str, *, fields: dict | None = None):
        super().__init__(message)
        self.message = message
        self.fields = fields


class CollectionConflict(CollectionsError):
    status = 409
    code = "conflict"


class InvalidDocument(CollectionsError):
    """The file is empty, corrupt, password-protected or has no extractable text."""

    code = "invalid_document"


class UnsupportedFormat(CollectionsError):
    status = 415
    code = "unsupported_media_type"


class DocumentTooLarge(CollectionsError):
    status = 413
    code = "payload_too_large"
