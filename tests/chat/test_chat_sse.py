"""POST /api/v1/chat/turns/stream/ read with a real HTTP client from a real server thread."""
from __future__ import annotations

import time

import httpx
import pytest

from chat_http import read_events
from conversations.models import Turn
from ratiba.models import ApiKey
from ratiba.services import api_key_issue
from tests.support.live import serve
from tests.support.spa import seed_all

HOST = "tenant.test.localhost"


@pytest.fixture
def live(committed):
    """A committed spa and a key, served on a free port: (base_url, headers)."""
    seed_all()
    issued = api_key_issue(tenant=committed, label="sse tests")
    with serve() as port:
        yield f"http://127.0.0.1:{port}", {"Host": HOST, "Authorization": f"Bearer {issued.raw}"}
    ApiKey.objects.filter(pk=issued.api_key.pk).delete()


def test_stream_sends_deltas_then_one_final_event_with_citations_and_meta(live):
    base, headers = live
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", f"{base}/api/v1/chat/turns/stream/", headers={**headers, "Accept": "text/event-stream"},
                           json={"message": "Is there parking at the spa?"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            events = read_events(response.iter_lines())
    names = [event.event for event in events]
    assert names[-1] == "final" and names.count("final") == 1
    assert set(names[:-1]) == {"delta"} and len(names) >= 3
    final = events[-1].data
    assert "".join(event.data["text"] for event in events[:-1]) == final["answer"]
    assert set(final) == {"session_id", "turn_id", "intent", "answer", "citations", "refusal_reason", "meta",
                          "replaces_streamed_text"}
    assert final["citations"][0]["key"] == "parking"
    assert final["refusal_reason"] is None and final["replaces_streamed_text"] is False
    assert final["meta"]["provider"] == "extractive"
    assert Turn.objects.get(public_id=final["turn_id"]).answer == final["answer"]


def test_stream_refusal_arrives_as_deltas_and_a_final_event_with_the_reason(live):
    base, headers = live
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", f"{base}/api/v1/chat/turns/stream/", headers=headers,
                           json={"message": "Who won the football world cup in 1998?"}) as response:
            events = read_events(response.iter_lines())
    final = events[-1].data
    assert events[-1].event == "final"
    assert final["refusal_reason"] == "no_relevant_context"
    assert final["citations"] == [] and final["meta"]["provider"] == "none"
    assert "".join(e.data["text"] for e in events[:-1]) == final["answer"]


def test_stream_errors_before_the_first_event_are_json(live):
    base, headers = live
    with httpx.Client(timeout=30) as client:
        response = client.post(f"{base}/api/v1/chat/turns/stream/", headers={**headers, "Accept": "text/event-stream"},
                               json={"message": ""})
        unknown = client.post(f"{base}/api/v1/chat/turns/stream/", headers=headers,
                              json={"message": "hello there", "session_id": "s_nope"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["fields"] == {"message": ["This field may not be blank."]}
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "session_not_found"


def test_a_client_that_disconnects_mid_stream_leaves_a_stored_aborted_turn(live, monkeypatch):
    from conversations import services
    from conversations.shaping import AnswerDelta, shape_answer

    def slow_stream(**kwargs):
        # A slow LLM: many small deltas, so the server is still writing when the client leaves.
        final = shape_answer(**kwargs)
        for index in range(200):
            time.sleep(0.02)
            yield AnswerDelta(text=f"word{index} ")
        yield final

    monkeypatch.setattr(services, "_shape_stream", lambda plan: slow_stream(**services._shaping_kwargs(plan)))
    base, headers = live
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", f"{base}/api/v1/chat/turns/stream/", headers=headers,
                           json={"message": "Is there parking at the spa?"}) as response:
            lines = response.iter_lines()
            assert next(lines) == "event: delta"
    # The server notices on a later write, closes the turn and stores what was sent.
    deadline = time.time() + 10
    turn = None
    while time.time() < deadline:
        turn = Turn.objects.filter(message="Is there parking at the spa?").first()
        if turn is not None:
            break
        time.sleep(0.1)
    assert turn is not None
    assert turn.meta["stream_aborted"] is True
    assert turn.answer.startswith("word0 ") and len(turn.answer.split()) < 200
    with httpx.Client(timeout=30) as client:  # and the server is still serving
        again = client.post(f"{base}/api/v1/chat/turns/", headers=headers, json={"message": "Hi"})
    assert again.status_code == 200 and again.json()["intent"] == "greeting"
