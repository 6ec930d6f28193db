"""Errors of the collections domain, each carrying the HTTP status and code the API answers with."""
from __future__ import annotations

from ratiba.errors import DomainError


class CollectionsError(DomainError):
    """A request about collections or documents that cannot be carried out; the message is for people."""


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
