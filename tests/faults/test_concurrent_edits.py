"""Two owners edit the same snippet at the same moment, on two real database connections: both edits are kept
as versions, exactly one version is active, and no edit is lost (through the service, the REST API and the
admin form)."""
from __future__ import annotations

import threading

from django.db import connections
from django_tenants.utils import schema_context

from knowledge.models import SnippetVersion
from knowledge.services import snippet_edit
from tests.support.builders import make_user, make_version, post_json

ROUNDS = 4


def _race(targets) -> list:
    """Run each callable in its own thread (own connection), released together by a barrier."""
    barrier = threading.Barrier(len(targets))
    results: list = [None] * len(targets)

    def run(index, target):
        try:
            barrier.wait(timeout=20)
            results[index] = target()
        except Exception as exc:  # noqa: BLE001 — reported to the test thread
            results[index] = exc
        finally:
            connections.close_all()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def _history(key: str = "parking") -> list[tuple[int, str, bool]]:
    return list(SnippetVersion.objects.filter(key=key).order_by("version").values_list("version", "body", "is_active"))


def _assert_one_active_latest(history):
    active = [version for version, _body, is_active in history if is_active]
    assert active == [history[-1][0]], history


def test_simultaneous_service_edits_are_both_kept_with_one_active(committed):
    schema = committed.schema_name
    make_version("parking", body="Free parking.")
    for round_number in range(ROUNDS):
        bodies = [f"Round {round_number}: edit by Amina.", f"Round {round_number}: edit by Brian."]

        def edit(body):
            def go():
                with schema_context(schema):
                    return snippet_edit(key="parking", changes={"body": body}).version
            return go

        results = _race([edit(body) for body in bodies])
        assert all(isinstance(r, int) for r in results), results
        history = _history()
        assert sorted(results) == [1 + 2 * round_number + 1, 1 + 2 * round_number + 2]
        assert {body for _v, body, _a in history[-2:]} == set(bodies)
        _assert_one_active_latest(history)
    assert len(_history()) == 1 + 2 * ROUNDS


def test_simultaneous_api_patches_both_succeed_as_separate_versions(committed, client_for):
    from ratiba.models import ApiKey
    from ratiba.services import api_key_issue

    make_version("parking", body="Free parking.")
    keys = [api_key_issue(tenant=committed, label=f"owner {n}") for n in (1, 2)]
    try:
        def patch(issued, body):
            def go():
                client = client_for(committed)
                response = post_json(client, "/api/v1/snippets/parking/", {"body": body},
                                     {"HTTP_AUTHORIZATION": f"Bearer {issued.raw}"}, method="patch")
                return response.status_code, response.json().get("version")
            return go

        results = _race([patch(keys[0], "Parking is free for 2 hours."), patch(keys[1], "Parking costs KES 200.")])
    finally:
        ApiKey.objects.filter(pk__in=[k.api_key.pk for k in keys]).delete()
    assert sorted(results) == [(200, 2), (200, 3)]
    history = _history()
    assert {body for _v, body, _a in history} == {"Free parking.", "Parking is free for 2 hours.",
                                                   "Parking costs KES 200."}
    _assert_one_active_latest(history)


def test_two_owners_saving_one_admin_form_never_lose_an_edit_silently(committed, client_for):
    from django.contrib.auth import get_user_model

    first = make_version("parking", body="Free parking.")
    owners = [make_user("race-amina", superuser=True), make_user("race-brian", superuser=True)]
    try:
        _two_owners_save(committed, client_for, first, owners)
    finally:
        # Users are not among the tables the `committed` fixture empties.
        get_user_model().objects.filter(pk__in=[owner.pk for owner in owners]).delete()


def _two_owners_save(committed, client_for, first, owners):
    from knowledge.models import Snippet

    snippet_id = Snippet.objects.get(key="parking").pk
    url = f"/admin/knowledge/snippet/{snippet_id}/change/"
    form = {"title": "Parking", "category": "facility", "role": "retrieved", "status": "accepted",
            "channels": ["chat", "whatsapp", "email"], "language": "en", "tags": "", "notes": "",
            "publish": "on", "base_version": first.version}
    clients = []
    for owner in owners:
        client = client_for(committed)
        client.force_login(owner)
        assert client.get(url).status_code == 200  # both opened the form on v1
        clients.append(client)

    def save(client, body):
        def go():
            response = client.post(url, {**form, "body": body})
            return response.status_code, response.content.decode()
        return go

    bodies = ["Free parking for 2 hours (Amina).", "Parking costs KES 200 (Brian)."]
    results = _race([save(clients[0], bodies[0]), save(clients[1], bodies[1])])
    history = _history()
    saved_bodies = {body for _v, body, _a in history}
    for (status, page), body in zip(results, bodies):
        if status == 302:
            assert body in saved_bodies  # a save that reported success is a version
        else:
            # The later form was told about the other owner's version instead of overwriting it.
            assert status == 200 and "This snippet changed while you were editing" in page, page[:500]
            assert body not in saved_bodies
    assert 302 in [status for status, _ in results]
    assert len(history) == 1 + sum(status == 302 for status, _ in results)
    _assert_one_active_latest(history)
