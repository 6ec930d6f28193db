"""Adding and editing snippets in the admin: every save is a new version made by the services."""
from __future__ import annotations

import pytest

from knowledge.models import Snippet, SnippetVersion
from knowledge.services import snippet_edit
from tests.support.builders import form_data, make_user, make_version as snippet

pytestmark = pytest.mark.usefixtures("tenant")
ADD_URL = "/admin/knowledge/snippet/add/"


def change_url(version) -> str:
    return f"/admin/knowledge/snippet/{version.snippet_id}/change/"


def versions_of(key: str) -> list[tuple[int, bool, str]]:
    return list(SnippetVersion.objects.filter(key=key).order_by("version").values_list("version", "is_active", "body"))


def test_adding_a_snippet_creates_version_one_live(owner_client, owner):
    data = {"key": "parking", "title": "Parking", "body": "Free parking behind the building.",
            "category": "facility", "role": "retrieved", "status": "accepted", "channels": ["chat", "email"],
            "language": "en", "tags": "parking, Access", "notes": "First write-up", "publish": "on"}
    response = owner_client.post(ADD_URL, data)
    snippet_row = Snippet.objects.get(key="parking")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/knowledge/snippet/{snippet_row.pk}/versions/"
    version = SnippetVersion.objects.get(key="parking")
    assert (version.version, version.is_active, version.created_by, version.activated_by) == (1, True, owner, owner)
    assert (version.channels, version.tags, version.notes) == (["chat", "email"], ["parking", "access"],
                                                              "First write-up")
    page = owner_client.get(response["Location"])
    assert "Saved v1 of “parking”: it is live now." in page.content.decode()


def test_editing_saves_version_two_and_keeps_version_one(owner_client, owner):
    first = snippet("parking", body="Free parking behind the building.")
    response = owner_client.post(change_url(first), form_data(first, body="Parking costs KES 100 an hour.",
                                                              notes="New tariff"))
    assert response.status_code == 302
    assert versions_of("parking") == [(1, False, "Free parking behind the building."),
                                      (2, True, "Parking costs KES 100 an hour.")]
    second = SnippetVersion.objects.get(key="parking", version=2)
    assert (second.created_by, second.notes) == (owner, "New tariff")
    assert "Saved v2 of “parking”: it is live now." in owner_client.get(response["Location"]).content.decode()


def test_the_form_starts_from_the_live_version_without_its_note(owner_client):
    version = snippet("parking", body="Free parking behind the building.", notes="old note")
    html = owner_client.get(change_url(version)).content.decode()
    assert "Free parking behind the building.</textarea>" in html
    assert "old note" not in html.split('name="notes"')[1].split("</textarea>")[0]
    assert 'name="base_version" value="1"' in html


def test_saving_without_changes_creates_no_version(owner_client):
    version = snippet("parking")
    response = owner_client.post(change_url(version), form_data(version, notes="just looking"), follow=True)
    assert versions_of("parking") == [(1, True, "Free parking behind the building.")]
    assert "No changes to “parking”: no new version was saved." in response.content.decode()


def test_unticking_publish_keeps_the_live_version(owner_client):
    version = snippet("parking")
    data = form_data(version, body="Draft: parking moves next month.")
    del data["publish"]
    response = owner_client.post(change_url(version), data, follow=True)
    assert versions_of("parking") == [(1, True, "Free parking behind the building."),
                                      (2, False, "Draft: parking moves next month.")]
    assert "without publishing; the live version is unchanged" in response.content.decode()


def test_service_validation_errors_are_shown_on_the_form(owner_client):
    version = snippet("promo", body="20% off.", category="service")
    response = owner_client.post(change_url(version), form_data(version, language="en_GB!", title="",
                                                                valid_from="2026-12-31", valid_until="2026-12-01"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {"title": ["This field is required."],
                      "language": ["Invalid language code 'en_gb!' (for example en, sw)."]}
    response = owner_client.post(change_url(version), form_data(version, valid_from="2026-12-31",
                                                                valid_until="2026-12-01"))
    assert response.context["adminform"].form.errors == {"valid_until": ["Must be on or after valid_from."]}
    assert versions_of("promo") == [(1, True, "20% off.")]


def test_an_invalid_key_is_rejected_with_the_services_message(owner_client):
    response = owner_client.post(ADD_URL, {"key": "Parking Info", "title": "Parking", "body": "Free.",
                                           "category": "facility", "role": "retrieved", "status": "accepted",
                                           "channels": ["chat"], "language": "en", "publish": "on"})
    assert response.status_code == 200
    assert "key" in response.context["adminform"].form.errors
    assert not Snippet.objects.exists()


def test_an_edit_based_on_a_stale_version_is_refused(owner_client, owner):
    version = snippet("parking")
    stale = form_data(version, body="My edit from an old tab.")
    snippet_edit(key="parking", changes={"body": "Someone else's newer text."}, created_by=owner)
    response = owner_client.post(change_url(version), stale)
    assert response.status_code == 200
    assert ("This snippet changed while you were editing: v2 was saved by owner."
            in response.context["adminform"].form.non_field_errors()[0])
    assert [v for v, _active, _body in versions_of("parking")] == [1, 2]


def test_editing_a_guardrail_saves_it_but_holds_it_for_a_second_reviewer(owner_client):
    version = snippet("no-medical-advice", title="No medical advice", body="Never give medical advice.",
                      category="policy", role="guardrail")
    response = owner_client.post(change_url(version),
                                 form_data(version, body="Never give medical or legal advice."), follow=True)
    assert versions_of("no-medical-advice") == [(1, True, "Never give medical advice."),
                                                (2, False, "Never give medical or legal advice.")]
    html = response.content.decode()
    assert "Saved v2 of “no-medical-advice”, but it is not live yet." in html
    assert "A second person must release this version" in html
    assert f"/admin/knowledge/snippet/{version.snippet_id}/versions/2/release/" in html


def test_related_keys_offer_other_snippets_only(owner_client):
    snippet("directions", title="Directions", body="Turn left at the mall.")
    version = snippet("parking")
    form = owner_client.get(change_url(version)).context["adminform"].form
    assert form.fields["related_keys"].choices == [("directions", "directions")]


def test_snippets_cannot_be_deleted_only_taken_out_of_use(owner_client):
    version = snippet("parking")
    assert owner_client.get(f"/admin/knowledge/snippet/{version.snippet_id}/delete/").status_code == 403
    response = owner_client.post("/admin/knowledge/snippet/", {"action": "deactivate_selected",
                                                               "_selected_action": [version.snippet_id]}, follow=True)
    assert "Taken out of use: parking." in response.content.decode()
    assert versions_of("parking") == [(1, False, "Free parking behind the building.")]


def test_a_view_only_user_is_sent_to_the_history(login):
    version = snippet("parking")
    viewer = make_user("viewer", perms=("knowledge.view_snippet",))
    response = login(viewer).get(change_url(version))
    assert response.status_code == 302
    assert response["Location"] == f"/admin/knowledge/snippet/{version.snippet_id}/versions/"


def test_the_related_snippets_picker_marks_current_choices(owner_client):
    snippet("directions", title="Directions", body="Turn left at the mall.")
    snippet("valet", title="Valet", body="Valet parking on weekends.")
    version = snippet("parking", related_keys=["valet"])
    html = owner_client.get(change_url(version)).content.decode()
    assert ('<select name="related_keys" multiple aria-describedby="id_related_keys_helptext" id="id_related_keys" '
            'class="selectfilter" '
            'data-field-name="related snippets" data-is-stacked="0"><option value="directions">directions</option>'
            '<option value="valet" selected>valet</option></select>') in html
