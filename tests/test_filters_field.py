"""The APIs that retrieve take one filters field: the same cleaning, each API's error body unchanged."""
from __future__ import annotations

import json

import pytest

from conversations.prompt_api import PromptAssembleInput
from conversations.serializers import TurnInput
from knowledge.retrieval.api import RetrieveApi
from knowledge.retrieval.filters import Filters
from knowledge.serializers import FiltersField

BAD = {"category": ["spaceships"], "colour": "blue"}
CATEGORY = "Unknown category 'spaceships'; use one of: policy, facility, prep, service, hours, general."
COLOUR = "Unknown filter; use one of: category, tags, channel, collection, keys, updated_since."


@pytest.mark.parametrize("serializer", [TurnInput, PromptAssembleInput, RetrieveApi.InputSerializer])
def test_every_api_that_retrieves_uses_the_one_filters_field(serializer):
    assert type(serializer().fields["filters"]) is FiltersField


def test_the_field_hands_on_cleaned_filters():
    data = TurnInput(data={"message": "Hi", "filters": {"category": "policy", "tags": ["Parking "]}})
    assert data.is_valid(), data.errors
    assert data.validated_data["filters"] == Filters(categories=("policy",), tags=("Parking",))


@pytest.mark.parametrize("url, payload, fields", [
    ("/api/v1/chat/turns/", {"message": "Hi"}, {"filters": {"colour": [COLOUR], "category": [CATEGORY]}}),
    ("/api/v1/prompts/assemble/", {"channel": "chat", "message": "Hi"},
     {"filters": {"colour": [COLOUR], "category": [CATEGORY]}}),
    ("/api/v1/retrieve/", {"query": "Hi"}, {"filters": [f"colour: {COLOUR}", f"category: {CATEGORY}"]}),
])
def test_bad_filters_get_each_apis_error_body(api_client, url, payload, fields):
    client, headers = api_client
    response = client.post(url, data=json.dumps({**payload, "filters": BAD}), content_type="application/json",
                           **headers)
    assert (response.status_code, response.json()) == (400, {"error": {
        "code": "invalid_request", "message": "Some fields are invalid.", "fields": fields}})


@pytest.mark.parametrize("url, payload, null_ok", [
    ("/api/v1/chat/turns/", {"message": "Hi"}, True),
    ("/api/v1/prompts/assemble/", {"channel": "chat", "message": "Hi"}, True),
    ("/api/v1/retrieve/", {"query": "Hi"}, False),
])
def test_a_filters_value_that_is_not_an_object_is_a_field_error(api_client, url, payload, null_ok):
    client, headers = api_client

    def fields(value):
        response = client.post(url, data=json.dumps({**payload, "filters": value}), content_type="application/json",
                               **headers)
        return response.status_code, response.json().get("error", {}).get("fields")

    assert fields("policy") == (400, {"filters": ['Expected a dictionary of items but got type "str".']})
    assert fields(None) == ((200, None) if null_ok else (400, {"filters": ["This field may not be null."]}))
