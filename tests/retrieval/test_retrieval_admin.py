"""Owner tools: the retrieval settings admin (bounds, singleton, graduation) and the test-retrieval page."""
from __future__ import annotations

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)
from django.contrib.auth import get_user_model

from knowledge.retrieval.config import retrieval_settings_get

pytestmark = pytest.mark.django_db
PAGE = "/admin/knowledge/test-retrieval/"


@pytest.fixture
def owner_client(tenant, tenant_client):
    user = get_user_model().objects.create_superuser("owner", "owner@example.com", "pw-owner-123")
    tenant_client.force_login(user)
    return tenant_client


def _form_data(row, **changes):
    data = {name: getattr(row, name) for name in (
        "mode", "vector_weight", "keyword_weight", "heading_weight", "title_weight", "canonical_boost",
        "deprecated_penalty",
        "similarity_threshold", "top_k", "overretrieve_factor", "budget_chat_tokens", "budget_whatsapp_tokens",
        "budget_email_tokens", "fts_candidate_cap")}
    data.update(changes)
    return data


def test_the_settings_list_opens_the_single_row(owner_client):
    response = owner_client.get("/admin/knowledge/retrievalsettings/")
    row = retrieval_settings_get()
    assert response.status_code == 302
    assert response["Location"] == f"/admin/knowledge/retrievalsettings/{row.pk}/change/"
    page = owner_client.get(response["Location"])
    assert page.status_code == 200
    assert b"overflow events needed in the last 7 days" in page.content


def test_out_of_bounds_values_are_rejected(owner_client):
    row = retrieval_settings_get()
    url = f"/admin/knowledge/retrievalsettings/{row.pk}/change/"
    response = owner_client.post(url, _form_data(row, similarity_threshold=1.5, top_k=500, budget_chat_tokens=0,
                                                  title_weight=1.5))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"similarity_threshold", "top_k", "budget_chat_tokens", "title_weight"}
    assert retrieval_settings_get().similarity_threshold == 0.25


def test_pinning_a_mode_in_the_admin_applies_it(owner_client):
    row = retrieval_settings_get()
    url = f"/admin/knowledge/retrievalsettings/{row.pk}/change/"
    response = owner_client.post(url, _form_data(row, mode="hybrid", similarity_threshold=0.3))
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.mode, row.current_mode, row.similarity_threshold) == ("hybrid", "hybrid", 0.3)


def test_the_test_page_needs_a_staff_login(tenant_client):
    response = tenant_client.get(PAGE + "?query=parking")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_test_page_shows_every_stage(owner_client, kb, mode):
    kb.spa()
    mode("inline")
    response = owner_client.get(PAGE, {"query": "Is there parking?", "intent": "other", "channel": "chat",
                                       "mode": "hybrid"})
    assert response.status_code == 200
    html = response.content.decode()
    for stage in ("stage-query", "stage-vector", "stage-keyword", "stage-fusion", "stage-threshold",
                  "stage-packing", "stage-related", "stage-refusal", "stage-results"):
        assert f'id="{stage}"' in html
    assert "0.8×" in html and "location" in html and "related" in html
    assert "Candidates need a similarity of" in html
    result = response.context["result"]
    assert result.mode == "hybrid" and result.snippets[0].key == "parking"


def test_the_test_page_records_nothing(owner_client, kb, mode):
    from telemetry.models import Event

    kb.spa()
    mode("auto")
    for _ in range(4):
        owner_client.get(PAGE, {"query": "parking", "intent": "other", "channel": "chat", "mode": "inline"})
    assert Event.objects.count() == 0


def test_the_test_page_reports_bad_filters(owner_client, kb):
    response = owner_client.get(PAGE, {"query": "parking", "intent": "other", "channel": "chat",
                                       "updated_since": "not-a-date"})
    assert response.status_code == 200
    assert "updated_since" in response.context["form"].errors
