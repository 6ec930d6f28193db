"""One exception handler maps every domain error (and a service's ValidationError) to the API's error shape."""
from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from conversations.services import CollectionNotFound, SessionNotFound, TurnError
from knowledge.collections.errors import CollectionConflict, DocumentTooLarge, InvalidDocument, UnsupportedFormat
from knowledge.services import ReviewRequired, ServiceExists, SnippetExists, SnippetNotFound
from ratiba.errors import DomainError


class Refused(DomainError):
    status = 409
    code = "refused"


class RaisingView(APIView):
    """Raises whatever the test hands it, as a service called by a view would."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    error_field_names = {"monday": "mon"}
    error: Exception | None = None

    def post(self, request):
        raise self.error


def _answer(error: Exception):
    view = RaisingView.as_view(error=error)
    response = view(APIRequestFactory().post("/anything/", {}, format="json"))
    response.render()
    return response.status_code, json.loads(response.content)


@pytest.mark.parametrize("error, status, body", [
    (Refused("No, because.", fields={"monday": ["Taken."]}), 409,
     {"code": "refused", "message": "No, because.", "fields": {"mon": ["Taken."]}}),
    (DomainError("Plain."), 400, {"code": "invalid_request", "message": "Plain."}),
    (ReviewRequired("A second person must release it."), 403,
     {"code": "review_required", "message": "A second person must release it."}),
    (SnippetNotFound("No snippet with key 'x'."), 404, {"code": "not_found", "message": "No snippet with key 'x'."}),
    (SnippetExists("Key taken."), 409, {"code": "snippet_exists", "message": "Key taken."}),
    (ServiceExists("Name taken."), 409, {"code": "service_exists", "message": "Name taken."}),
    (CollectionConflict("Taken.", fields={"name": ["Already exists."]}), 409,
     {"code": "conflict", "message": "Taken.", "fields": {"name": ["Already exists."]}}),
    (InvalidDocument("'a.md' is empty."), 400, {"code": "invalid_document", "message": "'a.md' is empty."}),
    (UnsupportedFormat("Not a document."), 415, {"code": "unsupported_media_type", "message": "Not a document."}),
    (DocumentTooLarge("Too big."), 413, {"code": "payload_too_large", "message": "Too big."}),
    (TurnError("Some fields are invalid.", fields={"message": ["Required."]}), 400,
     {"code": "invalid_request", "message": "Some fields are invalid.", "fields": {"message": ["Required."]}}),
    (SessionNotFound("s_x"), 404, {"code": "session_not_found", "message": "No chat session 's_x' here; omit "
                                   "session_id to start a new one.", "fields": {"session_id": ["Unknown session."]}}),
    (CollectionNotFound("nope"), 404, {"code": "collection_not_found", "message": "No collection named 'nope'.",
                                       "fields": {"collection": ["Unknown collection."]}}),
])
def test_a_view_raising_a_domain_error_gets_its_mapped_response(error, status, body):
    assert _answer(error) == (status, {"error": body})


def test_a_services_validation_error_is_a_400_with_the_views_field_names():
    error = ValidationError({"monday": ["Closing time must be after opening time."], "note": ["Too long."]})
    assert _answer(error) == (400, {"error": {
        "code": "invalid_request", "message": "Some fields are invalid.",
        "fields": {"mon": ["Closing time must be after opening time."], "note": ["Too long."]}}})
    assert _answer(ValidationError("Nothing to save.")) == (
        400, {"error": {"code": "invalid_request", "message": "Some fields are invalid.",
                        "fields": {"non_field_errors": ["Nothing to save."]}}})


def test_other_exceptions_are_left_to_django():
    with pytest.raises(RuntimeError):
        _answer(RuntimeError("a bug"))
