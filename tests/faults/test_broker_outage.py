"""The broker is down (CELERY_BROKER_URL points at a closed port): saving a snippet through the service and the
authoring API still succeeds, the version stays pending, keyword search finds it meanwhile, and the pending
sweep embeds it once the broker is back."""
from __future__ import annotations

import logging
import time

import pytest

from knowledge.models import EmbeddingState, RetrievalSettings, SnippetVersion
from knowledge.retrieval import fetch_snippets
from knowledge.tasks import embed_pending_sweep
from tests.support.builders import make_version, post_json
from tests.support.live import closed_port

PARKING_BODY = "Free parking for guests is available in the basement of Mirage Tower; tell the guard at the gate."
QUESTION = "Is there free parking for guests?"


def _reset_pools(app) -> None:
    # The app caches its connection and producer pools: drop the references so the next send builds them for
    # the current broker URL. Never close them: kombu keeps producer pools in a process-wide registry keyed by
    # connection, and even an eager `.delay` acquires a producer from it (a closed pool breaks later tests).
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down():
    """The project's Celery app sends to a Redis URL nothing listens on; restored (inline again) after."""
    from ratiba.celery import app

    saved = (app.conf.broker_url, app.conf.task_always_eager)
    app.conf.broker_url = f"redis://127.0.0.1:{closed_port()}/0"
    app.conf.task_always_eager = False
    _reset_pools(app)
    try:
        yield app
    finally:
        app.conf.broker_url, app.conf.task_always_eager = saved
        _reset_pools(app)


@pytest.fixture
def hybrid_kb(committed, fake_embedder):
    """Hybrid retrieval (vector + keyword) over a few embedded snippets, committed for real."""
    RetrievalSettings.objects.create(mode="hybrid", current_mode="hybrid")
    for key, title, body in [
        ("opening_hours", "Opening hours", "We open from 9 in the morning until 8 in the evening, Monday to Friday."),
        ("payment_methods", "Ways to pay", "We accept M-Pesa, Visa, Mastercard and cash in Kenyan shillings."),
        ("arrive_early", "Arrive early", "Please arrive 15 minutes before your appointment to fill in the form."),
    ]:
        make_version(key, title=title, body=body, category="general")
    embed_pending_sweep()
    assert not SnippetVersion.objects.exclude(embedding_state=EmbeddingState.DONE).exists()
    return committed


def _parking_hits():
    retrieval = fetch_snippets("other", query=QUESTION, channel="chat")
    return retrieval, [(s.key, s.match_type) for s in retrieval.snippets if s.key == "parking"]


def test_a_snippet_saved_while_the_broker_is_down_is_kept_found_by_keyword_and_embedded_later(
        hybrid_kb, broker_down, caplog):
    caplog.set_level(logging.WARNING, logger="knowledge.services")
    started = time.monotonic()
    version = make_version("parking", title="Parking", body=PARKING_BODY, queue_embedding=True)
    saved_in = time.monotonic() - started
    version.refresh_from_db()
    assert (version.is_active, version.embedding_state, version.embedding) == (True, EmbeddingState.PENDING, None)
    assert saved_in < 10, saved_in  # a connect timeout, not a hang
    assert f"embedding not queued for snippet version {version.pk} (left pending)" in caplog.text

    retrieval, hits = _parking_hits()
    assert hits == [("parking", "keyword")]
    assert retrieval.refusal_reason is None

    # The broker comes back; the beat sweep embeds what was left pending.
    broker_down.conf.task_always_eager = True
    assert embed_pending_sweep().get(hybrid_kb.schema_name) == 1
    version.refresh_from_db()
    assert (version.embedding_state, version.embedding_model) == (EmbeddingState.DONE, "fake-hash-384")
    assert len(version.embedding) == 384
    _, hits = _parking_hits()
    assert hits == [("parking", "hybrid")]
    assert hybrid_kb.schema_name not in embed_pending_sweep()  # nothing left: the sweep is idempotent


def test_the_authoring_api_saves_and_edits_while_the_broker_is_down(hybrid_kb, broker_down, client_for):
    from ratiba.models import ApiKey
    from ratiba.services import api_key_issue

    issued = api_key_issue(tenant=hybrid_kb, label="broker outage test")
    client, headers = client_for(hybrid_kb), {"HTTP_AUTHORIZATION": f"Bearer {issued.raw}"}
    try:
        created = post_json(client, "/api/v1/snippets/", {"key": "parking", "title": "Parking",
                                                          "body": PARKING_BODY, "category": "facility"}, headers)
        edited = post_json(client, "/api/v1/snippets/parking/", {"body": PARKING_BODY + " Parking is free."},
                           headers, method="patch")
        pending = client.get("/api/v1/snippets/?embedding_state=pending", **headers)
    finally:
        ApiKey.objects.filter(pk=issued.api_key.pk).delete()
    assert (created.status_code, edited.status_code) == (201, 200)
    assert [(created.json()["version"], created.json()["embedding_state"]),
            (edited.json()["version"], edited.json()["embedding_state"])] == [(1, "pending"), (2, "pending")]
    assert [(row["key"], row["version"]) for row in pending.json()["results"]] == [("parking", 2)]
    _, hits = _parking_hits()
    assert hits == [("parking", "keyword")]

    broker_down.conf.task_always_eager = True
    assert embed_pending_sweep().get(hybrid_kb.schema_name) == 2  # both versions: history stays searchable later
    assert set(SnippetVersion.objects.filter(key="parking").values_list("embedding_state", flat=True)) == {"done"}
