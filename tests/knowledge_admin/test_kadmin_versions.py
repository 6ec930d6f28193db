"""Version history, the side-by-side diff, one-click rollback and the release gate in the admin."""
from __future__ import annotations

import pytest

from knowledge.admin_views import inline_diff, side_by_side_diff
from knowledge.models import SnippetVersion
from knowledge.services import snippet_edit
from tests.support.builders import EDITOR_PERMS, make_user, make_version as snippet

pytestmark = pytest.mark.usefixtures("tenant")


def url(version, suffix: str = "") -> str:
    return f"/admin/knowledge/snippet/{version.snippet_id}/versions/{suffix}"


def state(key: str) -> list[tuple[int, bool]]:
    return list(SnippetVersion.objects.filter(key=key).order_by("version").values_list("version", "is_active"))


@pytest.fixture
def parking(owner):
    first = snippet("parking", body="Free parking behind the building.", created_by=owner)
    snippet_edit(key="parking", changes={"body": "Paid parking behind the building.", "notes": "Tariff"},
                 created_by=owner)
    return first


# ----------------------------------------------------------------------------- pure diff

def test_inline_diff_marks_changed_words_and_escapes_them():
    old, new = inline_diff("Free parking <b>here</b>.", "Paid parking <b>here</b>.")
    assert old == "<del>Free</del> parking &lt;b&gt;here&lt;/b&gt;."
    assert new == "<ins>Paid</ins> parking &lt;b&gt;here&lt;/b&gt;."


def test_side_by_side_diff_pairs_lines_and_folds_unchanged_runs():
    old = "\n".join(f"line {n}" for n in range(1, 11)) + "\nold ending"
    new = "\n".join(f"line {n}" for n in range(1, 11)) + "\nnew ending\nextra"
    rows = side_by_side_diff(old, new, context=2)
    assert [row.kind for row in rows] == ["skip", "equal", "equal", "change", "insert"]
    assert rows[0].skipped == 8
    assert (rows[3].left.number, rows[3].left.html, rows[3].right.html) == (11, "<del>old</del> ending",
                                                                           "<ins>new</ins> ending")
    assert (rows[4].left, rows[4].right.number, rows[4].right.html) == (None, 12, "<ins>extra</ins>")


def test_identical_texts_give_only_equal_rows():
    assert [row.kind for row in side_by_side_diff("a\nb", "a\nb")] == ["equal", "equal"]


# ----------------------------------------------------------------------------- pages

def test_the_history_lists_every_version_with_author_and_live_marker(owner_client, parking):
    response = owner_client.get(url(parking))
    assert response.status_code == 200
    html = response.content.decode()
    assert [row["version"].version for row in response.context["rows"]] == [2, 1]
    assert [row["state"] for row in response.context["rows"]] == ["live", "past"]
    assert '<tr class="kn-row-live" id="v2">' in html
    assert "by owner" in html and "Tariff" in html
    assert f'action="/admin/knowledge/snippet/{parking.snippet_id}/versions/1/rollback/"' in html
    assert "Roll back to v1" in html


def test_the_diff_page_shows_the_escaped_word_diff_side_by_side(owner_client, parking):
    snippet_edit(key="parking", changes={"body": "Paid parking <script>alert(1)</script> behind."})
    response = owner_client.get(url(parking, "diff/?a=2&b=3"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert ('<td class="kn-new">Paid parking <ins>&lt;script&gt;alert(1)&lt;/script&gt; </ins>behind.</td>'
            in html)
    rows = response.context["rows"]
    assert [row.kind for row in rows] == ["change"]
    assert rows[0].left.html == "Paid parking behind<del> the building</del>."
    assert rows[0].right.html == "Paid parking <ins>&lt;script&gt;alert(1)&lt;/script&gt; </ins>behind."


def test_the_diff_defaults_to_previous_against_live_and_shows_changed_fields(owner_client, parking):
    response = owner_client.get(url(parking, "diff/"))
    assert (response.context["a"].version, response.context["b"].version) == (1, 2)
    rows = response.context["rows"]
    assert (rows[0].left.html, rows[0].right.html) == ("<del>Free</del> parking behind the building.",
                                                       "<ins>Paid</ins> parking behind the building.")
    changed = {f.label: (f.old, f.new) for f in response.context["fields"] if f.changed}
    assert changed == {"Change note": ("&mdash;", "<ins>Tariff</ins>")}


def test_rollback_makes_the_old_content_live_as_a_new_version(owner_client, owner, parking):
    response = owner_client.post(url(parking, "1/rollback/"), follow=True)
    assert response.redirect_chain == [(url(parking), 302)]
    assert state("parking") == [(1, False), (2, False), (3, True)]
    third = SnippetVersion.objects.get(key="parking", version=3)
    assert (third.body, third.created_by, third.notes) == ("Free parking behind the building.", owner,
                                                           "Rollback to v1.")
    assert "Rolled back “parking” to v1: that content is live again as v3." in response.content.decode()


def test_rollback_needs_a_post(owner_client, parking):
    assert owner_client.get(url(parking, "1/rollback/")).status_code == 405
    assert state("parking") == [(1, False), (2, True)]


def test_rollback_is_refused_to_a_user_who_may_only_view(login, parking):
    viewer = make_user("viewer", perms=("knowledge.view_snippet",))
    assert login(viewer).post(url(parking, "1/rollback/")).status_code == 403
    assert state("parking") == [(1, False), (2, True)]


# ----------------------------------------------------------------------------- release gate

@pytest.fixture
def guardrail(editor):
    first = snippet("no-medical-advice", title="No medical advice", body="Never give medical advice.",
                    category="policy", role="guardrail", created_by=editor)
    held = snippet_edit(key="no-medical-advice", changes={"body": "Never give medical or legal advice."},
                        created_by=editor)
    assert (held.version, held.is_active) == (2, False)
    return first


def test_the_author_cannot_release_their_own_guardrail_change(login, editor, guardrail):
    client = login(editor)
    page = client.get(url(guardrail, "2/release/"))
    html = page.content.decode()
    assert page.context["allowed"] is False
    assert "You cannot release this version." in html and 'id="release-button"' not in html
    response = client.post(url(guardrail, "2/release/"), {"seen_live": "1"}, follow=True)
    assert state("no-medical-advice") == [(1, True), (2, False)]
    assert "Not released: You need the" in response.content.decode()


def test_an_owner_who_is_also_the_author_is_blocked_too(owner_client, owner):
    version = snippet("tone", body="Be warm.", role="behaviour", category="general", created_by=owner)
    snippet_edit(key="tone", changes={"body": "Be warm and brief."}, created_by=owner)
    response = owner_client.post(url(version, "2/release/"), {"seen_live": "1"}, follow=True)
    assert state("tone") == [(1, True), (2, False)]
    assert ("Not released: A second person must release this version: its author cannot approve their own change."
            in response.content.decode())


def test_a_user_without_the_review_permission_is_blocked(login, guardrail):
    colleague = make_user("colleague", perms=EDITOR_PERMS)
    response = login(colleague).post(url(guardrail, "2/release/"), {"seen_live": "1"}, follow=True)
    assert state("no-medical-advice") == [(1, True), (2, False)]
    assert ("Not released: You need the &#x27;Can review and release guardrail/behaviour versions&#x27; permission."
            in response.content.decode())


def test_a_second_reviewer_sees_the_diff_against_live_then_releases(login, reviewer, guardrail):
    client = login(reviewer)
    page = client.get(url(guardrail, "2/release/"))
    assert page.context["allowed"] is True
    rows = page.context["rows"]
    assert (rows[0].left.html, rows[0].right.html) == ("Never give medical advice.",
                                                       "Never give medical<ins> or legal</ins> advice.")
    html = page.content.decode()
    assert 'id="release-button"' in html and 'name="seen_live" value="1"' in html
    response = client.post(url(guardrail, "2/release/"), {"seen_live": "1"}, follow=True)
    assert state("no-medical-advice") == [(1, False), (2, True)]
    assert SnippetVersion.objects.get(key="no-medical-advice", version=2).activated_by == reviewer
    assert "Released v2 of “no-medical-advice”: it is live now." in response.content.decode()


def test_the_release_page_of_a_guardrail_change_shows_the_smoke_results_first(login, reviewer, guardrail):
    from knowledge.services import smoke_test_upsert

    snippet("parking", body="Free parking behind the building.")
    smoke_test_upsert(query="Is there parking?", expected_keys=["parking"])
    smoke_test_upsert(query="Do you sell helicopters?", expected_keys=["parking"])
    page = login(reviewer).get(url(guardrail, "2/release/"))
    assert [(r.query, r.passed, r.refusal_reason) for r in page.context["smoke"]] == [
        ("Is there parking?", True, None), ("Do you sell helicopters?", False, "no_relevant_context")]
    html = page.content.decode()
    assert "1 of 2 smoke tests fail right now." in html
    assert "Do you sell helicopters?" in html and "refuses (no_relevant_context)" in html
    assert html.index('id="release-smoke"') < html.index('id="release-button"')


def test_the_release_page_of_a_retrieved_snippet_runs_no_smoke_tests(owner_client, parking):
    page = owner_client.get(url(parking, "2/release/"))
    assert page.status_code == 200 and page.context["smoke"] is None
    assert 'id="release-smoke"' not in page.content.decode()


def test_a_release_confirmed_against_a_changed_live_version_is_not_applied(login, reviewer, editor, guardrail):
    snippet("no-medical-advice", title="No medical advice", body="Urgent fix.", category="policy",
            role="guardrail", created_by=editor)  # v3, made live by an operator meanwhile
    response = login(reviewer).post(url(guardrail, "2/release/"), {"seen_live": "1"}, follow=True)
    assert state("no-medical-advice") == [(1, False), (2, False), (3, True)]
    assert "The live version changed while you were reviewing." in response.content.decode()


def test_rolling_back_a_guardrail_also_waits_for_a_reviewer(login, editor, reviewer, guardrail):
    snippet_edit(key="no-medical-advice", changes={"body": "Released text."}, created_by=editor)
    assert state("no-medical-advice") == [(1, True), (2, False), (3, False)]
    response = login(editor).post(url(guardrail, "1/rollback/"), follow=True)
    assert state("no-medical-advice") == [(1, True), (2, False), (3, False), (4, False)]
    assert "Saved v4 of “no-medical-advice”, but it is not live yet." in response.content.decode()


def test_the_review_queue_lists_held_versions_with_who_may_release(login, reviewer, editor, guardrail):
    response = login(reviewer).get("/admin/knowledge/snippet/review/")
    items = response.context["items"]
    assert [(item["version"].key, item["version"].version, item["allowed"]) for item in items] == [
        ("no-medical-advice", 2, True)]
    items = login(editor).get("/admin/knowledge/snippet/review/").context["items"]
    assert [(item["version"].version, item["allowed"]) for item in items] == [(2, False)]
