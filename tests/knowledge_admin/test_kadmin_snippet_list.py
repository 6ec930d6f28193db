"""The snippet list: one row per key showing its live version, filters, search, and a fast page."""
from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from knowledge.models import EmbeddingState, SnippetVersion
from knowledge.services import snippet_deactivate, snippet_edit
from tests.support.builders import make_version as snippet

pytestmark = pytest.mark.usefixtures("tenant")
LIST_URL = "/admin/knowledge/snippet/"


def keys_on_page(response) -> list[str]:
    return re.findall(r'<span class="kn-key">([^<]+)</span>', response.content.decode())


@pytest.fixture
def library():
    today = timezone.localdate()
    snippet("parking", title="Parking", body="Free parking behind the building.", category="facility")
    snippet("arrive-early", title="Arrive early", body="Please arrive ten minutes before your massage.",
            category="prep", channels=["chat", "whatsapp"], status="canonical")
    snippet("christmas-hours", title="Christmas hours", body="We close at 14:00 on Christmas Eve.", category="hours",
            valid_until=today + dt.timedelta(days=5))
    snippet("summer-promo", title="Summer promotion", body="20% off facials.", category="service",
            valid_until=today + dt.timedelta(days=60), channels=["email"])
    snippet("tone", title="Tone of voice", body="Be warm and brief.", category="general", role="behaviour")
    snippet("old-wifi", title="Wi-Fi", body="The password is on the door.", category="facility")
    snippet_deactivate(key="old-wifi")
    SnippetVersion.objects.filter(key="parking").update(embedding_state=EmbeddingState.DONE)


def test_the_list_shows_one_row_per_key_with_its_live_version(owner_client, library):
    snippet_edit(key="parking", changes={"body": "Parking costs KES 100 an hour."})
    response = owner_client.get(LIST_URL)
    assert response.status_code == 200
    assert keys_on_page(response) == ["arrive-early", "christmas-hours", "old-wifi", "parking", "summer-promo", "tone"]
    html = response.content.decode()
    parking = SnippetVersion.objects.get(key="parking", version=2).snippet_id
    assert (f'<a class="kn-version" href="/admin/knowledge/snippet/{parking}/versions/" '
            'title="Version history and diffs">v2</a>') in html
    assert "Not in use" in html  # old-wifi has no live version
    assert "Test retrieval" in html and 'href="/admin/knowledge/test-retrieval/"' in html


@pytest.mark.parametrize(("query", "expected"), [
    ("category=prep", ["arrive-early"]),
    ("category=facility", ["parking"]),
    ("role=behaviour", ["tone"]),
    ("status=canonical", ["arrive-early"]),
    ("channel=email", ["christmas-hours", "parking", "summer-promo", "tone"]),
    ("channel=whatsapp", ["arrive-early", "christmas-hours", "parking", "tone"]),
    ("embedding=pending", ["arrive-early", "christmas-hours", "summer-promo", "tone"]),
    ("embedding=done", ["parking"]),
    ("validity=expiring", ["christmas-hours"]),
    ("live=no", ["old-wifi"]),
    ("q=parking", ["parking"]),
    ("q=MASSAGE", ["arrive-early"]),
    ("q=christmas+eve", ["christmas-hours"]),
    ("q=promo", ["summer-promo"]),
    ("q=nothing-like-this", []),
])
def test_filters_and_search_return_the_right_rows(owner_client, library, query, expected):
    response = owner_client.get(f"{LIST_URL}?{query}")
    assert response.status_code == 200
    assert keys_on_page(response) == expected


def test_search_looks_at_the_live_version_only(owner_client, library):
    snippet_edit(key="parking", changes={"body": "Parking is in the basement."})
    assert keys_on_page(owner_client.get(f"{LIST_URL}?q=behind")) == []
    assert keys_on_page(owner_client.get(f"{LIST_URL}?q=basement")) == ["parking"]


def test_expired_and_expiring_snippets_are_badged(owner_client, library):
    html = owner_client.get(LIST_URL).content.decode()
    assert re.search(r'<span class="kn-badge kn-warn" title="5 days left">until \d\d \w\w\w', html)


def test_a_version_awaiting_release_is_flagged_in_the_list(owner_client, owner, library):
    snippet_edit(key="tone", changes={"body": "Be warm, brief and kind."}, created_by=owner)
    response = owner_client.get(f"{LIST_URL}?live=awaiting")
    assert keys_on_page(response) == ["tone"]
    assert "v2 awaiting" in response.content.decode()
    assert "Awaiting release (1)" in response.content.decode()


def _list_queries(client) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = client.get(LIST_URL)
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries if not q["sql"].startswith("SET search_path")]


def test_the_list_query_count_does_not_grow_with_rows(owner_client, library):
    few = _list_queries(owner_client)
    for n in range(30):
        snippet(f"extra-{n:02d}", title=f"Extra {n}", body="More text.")
    many = _list_queries(owner_client)
    # domain, session, user, awaiting count, two counts, the rows: the same 7 for 6 rows or 36.
    assert len(few) == len(many) == 7
