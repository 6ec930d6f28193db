"""POST /api/v1/prompts/assemble/: auth, validation and the assembled prompt (real retrieval, real embeddings)."""
from __future__ import annotations

import json
import re

import pytest

from conversations.models import Turn
from conversations.prompting import load_prompt_template
from knowledge.services import snippet_version_create
from knowledge.tokens import token_estimate
from shaping_helpers import PARKING, seed_spa

URL = "/api/v1/prompts/assemble/"
GUARD = "Only quote prices and durations that appear in the services list, and never invent discounts."


@pytest.fixture
def spa(tenant):
    seed_spa()
    snippet_version_create(key="guardrail_prices", title="Quote only known prices", body=GUARD, category="policy",
                           role="guardrail", status="canonical", enforce_release_gate=False, queue_embedding=False)
    snippet_version_create(key="behaviour_whatsapp", title="WhatsApp format", role="behaviour", category="general",
                           body="Keep WhatsApp replies under sixty words with at most one emoji in them.",
                           channels=["whatsapp"], status="canonical", enforce_release_gate=False,
                           queue_embedding=False)
    return tenant


def post(client, headers, payload):
    return client.post(URL, data=json.dumps(payload), content_type="application/json", **headers)


def raw_data(content: str) -> dict:
    return json.loads(re.search(r"<raw_data_json>\n(.*?)\n</raw_data_json>", content, re.S).group(1))


def test_it_requires_an_api_key(tenant_client):
    response = tenant_client.post(URL, data=json.dumps({"channel": "chat", "message": "hi"}),
                                  content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_a_key_of_another_tenant_is_rejected(api_key, other_tenant, client_for):
    response = client_for(other_tenant).post(URL, data=json.dumps({"channel": "chat", "message": "hi"}),
                                             content_type="application/json",
                                             HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert response.status_code == 401


@pytest.mark.parametrize("payload, fields", [
    ({}, {"channel", "message"}),
    ({"channel": "sms", "message": "hi"}, {"channel"}),
    ({"channel": "chat", "message": "   "}, {"message"}),
    ({"channel": "chat", "message": "x" * 2001}, {"message"}),
    ({"channel": "chat", "message": "hi", "language": "fr"}, {"language"}),
    ({"channel": "chat", "message": "hi", "intent": "booking"}, {"intent"}),
    ({"channel": "chat", "message": "hi", "filters": {"colour": "red"}}, {"filters"}),
])
def test_invalid_input_is_a_400_with_field_errors(api_client, payload, fields):
    client, headers = api_client
    response = post(client, headers, payload)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and set(error["fields"]) == fields


def test_it_returns_the_prompt_retrieved_sections_and_token_estimate(spa, api_client):
    client, headers = api_client
    response = post(client, headers, {"channel": "whatsapp", "message": "Is there parking at the spa?"})
    assert response.status_code == 200
    body = response.json()
    template = load_prompt_template()
    assert body["prompt"]["version"] == template.version and body["prompt"]["cache_eligible"] is True
    assert body["prompt"]["system"] == template.system_message
    [message] = body["prompt"]["messages"]
    assert message["role"] == "user"
    content = message["content"]
    assert body["token_estimate"] == token_estimate(template.system_message) + token_estimate(content)
    assert body["intent"] == "other" and body["language"] == "en" and body["refusal_reason"] is None
    assert body["mode"] in ("inline", "hybrid")
    sections = body["retrieved_sections"]
    assert sections[0]["key"] == "parking" or "parking" in [s["key"] for s in sections]
    parking = next(s for s in sections if s["key"] == "parking")
    assert set(parking) == {"ref", "key", "version", "title", "category", "score", "match_type", "tokens"}
    assert (parking["version"], parking["title"], parking["category"], parking["tokens"]) == (
        1, "Parking", "facility", len(PARKING.body.split()) * 4 // 3)
    assert [s["ref"] for s in sections] == list(range(1, len(sections) + 1))
    knowledge = raw_data(content)["knowledge"]
    assert [entry["ref"] for entry in knowledge] == [s["ref"] for s in sections]
    assert any("Rhapta Road" in entry["body"] for entry in knowledge)
    # The channel's rules, in order, inside business_rules; the customer's words in their own section.
    assert body["core_sections"] == [{"key": "guardrail_prices", "version": 1, "role": "guardrail"},
                                     {"key": "behaviour_whatsapp", "version": 1, "role": "behaviour"}]
    assert GUARD in content.split("</business_rules>")[0]
    assert "Is there parking at the spa?" in content.split("<customer_message")[1]
    assert not Turn.objects.exists()  # nothing is stored


def test_the_chat_channel_gets_only_its_own_rules(spa, api_client):
    client, headers = api_client
    body = post(client, headers, {"channel": "chat", "message": "Is there parking?"}).json()
    assert [s["key"] for s in body["core_sections"]] == ["guardrail_prices"]
    assert "sixty words" not in body["prompt"]["messages"][0]["content"]


def test_a_price_question_carries_the_services_facts(spa, api_client):
    client, headers = api_client
    body = post(client, headers, {"channel": "chat", "message": "How much is a deep tissue massage?",
                                  "intent": "services"}).json()
    assert body["intent"] == "services" and body["refusal_reason"] is None
    services = raw_data(body["prompt"]["messages"][0]["content"])["services"]
    assert services["asked_about"] == ["Deep Tissue Massage"]
    assert services["items"][1] == {"name": "Deep Tissue Massage", "description": "Deep Tissue Massage.", "duration_minutes": 60, "price": "5500.00", "currency": "KES", "price_text": "KES 5,500"}


def test_swahili_is_detected_and_named_in_the_prompt(spa, api_client):
    client, headers = api_client
    body = post(client, headers, {"channel": "whatsapp", "message": "Je, kuna maegesho ya magari hapo?"}).json()
    assert body["language"] == "sw"
    assert 'language="Swahili (Kiswahili)"' in body["prompt"]["messages"][0]["content"]


def test_an_unanswerable_question_reports_a_refusal_and_carries_no_knowledge(spa, api_client):
    client, headers = api_client
    body = post(client, headers, {"channel": "chat", "message": "Can you recommend a good car insurance broker?",
                                  "intent": "other"}).json()
    assert body["refusal_reason"] == "no_relevant_context"
    assert body["retrieved_sections"] == []
    assert raw_data(body["prompt"]["messages"][0]["content"])["knowledge"] == []


def test_it_appears_in_the_openapi_schema(api_client):
    client, headers = api_client
    response = client.get("/api/schema/", **headers)
    assert response.status_code == 200
    assert "/api/v1/prompts/assemble/" in response.content.decode()


def test_an_hours_question_answered_by_the_facts_alone_is_not_a_refusal(spa, api_client):
    client, headers = api_client
    body = post(client, headers, {"channel": "chat", "message": "What time do you open on Sunday?",
                                  "intent": "hours"}).json()
    assert body["refusal_reason"] is None
    hours = raw_data(body["prompt"]["messages"][0]["content"])["hours"]
    assert hours["weekly"]["Sunday"] == "09:00-20:00" and hours["days_asked"][0]["weekday"] == "Sunday"
