"""In headless Chromium against a real server: an owner edits a snippet, sees v2 live, opens the diff and
rolls back; a reviewer releases a guardrail change after seeing its diff."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from knowledge.models import SnippetVersion
from knowledge.services import opening_hours_set, smoke_test_upsert, snippet_edit, snippet_version_create
from tests.support.builders import REVIEWER_PERMS, make_user
from tests.support.live import CHROMIUM, CHROMIUM_ARGS, serve

OWNER, OWNER_PASSWORD = "kadmin-browser-owner", "pw-kadmin-browser-1"
REVIEWER, REVIEWER_PASSWORD = "kadmin-browser-reviewer", "pw-kadmin-browser-reviewer-1"
AUTHOR = "kadmin-browser-author"
SHOTS = Path("/tmp/shots")
TIMEOUT_MS = 20_000

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Debian's chromium (make setup installs it)")]


@pytest.fixture
def server():
    with serve() as port:
        yield f"http://tenant.test.localhost:{port}"


@pytest.fixture
def spa(committed):
    """Committed snippets and users in test_tenant; users removed after (the fixture empties knowledge tables)."""
    User = get_user_model()
    usernames = (OWNER, REVIEWER, AUTHOR)
    User.objects.filter(username__in=usernames).delete()
    try:
        yield _committed_spa()
    finally:
        User.objects.filter(username__in=usernames).delete()


def _committed_spa():
    User = get_user_model()
    owner = User.objects.create_superuser(username=OWNER, password=OWNER_PASSWORD, email="")
    make_user(REVIEWER, perms=REVIEWER_PERMS, password=REVIEWER_PASSWORD)
    author = make_user(AUTHOR, perms=REVIEWER_PERMS)
    common = {"enforce_release_gate": False, "created_by": owner}
    snippet_version_create(key="parking", title="Parking", category="facility", role="retrieved", tags=["parking"],
                           body="Free customer parking **behind the building**.\n\nStreet parking on Ngong Road.",
                           notes="First write-up", **common)
    snippet_version_create(key="arrive-early", title="Arrive early", category="prep", role="retrieved",
                           status="canonical", body="Please arrive 15 minutes before your appointment.", **common)
    snippet_version_create(key="no-medical-advice", title="No medical advice", category="policy", role="guardrail",
                           body="Never give medical advice; suggest seeing a doctor.", **common)
    snippet_edit(key="no-medical-advice", created_by=author,
                 changes={"body": "Never give medical or legal advice; suggest seeing a doctor or a lawyer.",
                          "notes": "Cover legal questions too"})
    opening_hours_set(weekday=0, ranges=["09:00-13:00", "14:00-18:00"])
    smoke_test_upsert(query="Is there parking?", expected_keys=["parking"])
    smoke_test_upsert(query="Do you sell gift vouchers?", expected_keys=["gift-vouchers"])
    return owner


def _login(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def _shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"kadmin-{name}.png"), full_page=True)


def test_owner_edits_sees_v2_live_opens_the_diff_and_rolls_back(spa, server):
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            _login(page, server, OWNER, OWNER_PASSWORD)
            page.goto(f"{server}/admin/knowledge/")
            _shot(page, "01-app-index")
            expect(page.get_by_role("link", name="Test retrieval")).to_have_attribute(
                "href", "/admin/knowledge/test-retrieval/")

            page.goto(f"{server}/admin/knowledge/snippet/")
            expect(page.locator("#result_list tbody tr")).to_have_count(3)
            _shot(page, "02-snippet-list")

            page.get_by_role("link", name="Parking").first.click()
            page.wait_for_selector("#id_body")
            page.fill("#id_body", "Paid customer parking **behind the building**: KES 100 an hour.\n\n"
                                  "Street parking on Ngong Road.")
            page.fill("#id_notes", "New tariff")
            expect(page.locator("#kn-preview")).to_contain_text("Paid customer parking behind the building: KES 100")
            expect(page.locator("#kn-preview strong")).to_have_text("behind the building")
            _shot(page, "03-edit-with-preview")
            page.click("input[name=_save]")

            page.wait_for_url("**/versions/")
            expect(page.locator(".messagelist .success")).to_contain_text("Saved v2 of “parking”: it is live now.")
            expect(page.locator("tr#v2")).to_have_class("kn-row-live")
            expect(page.locator("tr#v2 .kn-badge").first).to_have_text("live")
            _shot(page, "04-versions-v2-live")

            page.locator("tr#v2").get_by_role("link", name="diff v1").click()
            page.wait_for_url("**/versions/diff/?a=1&b=2")
            expect(page.locator("table.kn-diff td.kn-old del").first).to_have_text("Free")
            expect(page.locator("table.kn-diff td.kn-new ins").first).to_have_text("Paid")
            _shot(page, "05-diff")

            page.get_by_role("button", name="Roll back to v1").click()
            page.wait_for_url("**/versions/")
            expect(page.locator(".messagelist .success")).to_contain_text(
                "Rolled back “parking” to v1: that content is live again as v3.")
            expect(page.locator("tr#v3")).to_have_class("kn-row-live")
            _shot(page, "06-rolled-back")

            page.goto(f"{server}/admin/knowledge/openinghours/")
            expect(page.locator("#id_monday")).to_have_value("09:00-13:00, 14:00-18:00")
            _shot(page, "07-weekly-hours")

            page.goto(f"{server}/admin/knowledge/smoketest/")
            page.get_by_role("link", name="Run all smoke tests").click()
            expect(page.locator(".kn-gate")).to_contain_text("1 of 2 passed.")
            _shot(page, "11-smoke-tests")
        finally:
            browser.close()
    assert list(SnippetVersion.objects.filter(key="parking").order_by("version")
                .values_list("version", "is_active", "created_by__username")) == [
        (1, False, OWNER), (2, False, OWNER), (3, True, OWNER)]
    assert (SnippetVersion.objects.get(key="parking", version=3).body
            == SnippetVersion.objects.get(key="parking", version=1).body)


def test_a_reviewer_sees_the_guardrail_diff_then_releases_it(spa, server):
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            _login(page, server, REVIEWER, REVIEWER_PASSWORD)
            page.goto(f"{server}/admin/knowledge/snippet/")
            page.get_by_role("link", name="Awaiting release (1)").click()
            _shot(page, "08-review-queue")
            page.get_by_role("link", name="Review & release").click()
            expect(page.locator(".kn-gate-ok")).to_be_visible()
            expect(page.locator("table.kn-diff td.kn-new ins").first).to_have_text(" or legal")
            _shot(page, "09-release-gate")
            page.click("#release-button")
            page.wait_for_url("**/versions/")
            expect(page.locator(".messagelist .success")).to_contain_text(
                "Released v2 of “no-medical-advice”: it is live now.")
            _shot(page, "10-released")
        finally:
            browser.close()
    released = SnippetVersion.objects.get(key="no-medical-advice", is_active=True)
    assert (released.version, released.activated_by.username) == (2, REVIEWER)


def test_owner_adds_a_swahili_version_and_a_product_without_a_duration(spa, server):
    from playwright.sync_api import expect, sync_playwright

    from knowledge.models import Service

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            _login(page, server, OWNER, OWNER_PASSWORD)
            page.goto(f"{server}/admin/knowledge/snippet/")
            page.get_by_role("link", name="Parking").first.click()
            page.locator("fieldset summary", has_text="Swahili version").click()  # a collapsed fieldset
            page.fill("#id_title_sw", "Maegesho")
            page.fill("#id_body_sw", "Maegesho ya bure nyuma ya jengo. Maegesho ya barabarani Ngong Road.")
            page.fill("#id_notes", "Swahili version")
            _shot(page, "20-swahili-version")
            page.click("input[name=_save]")
            page.wait_for_url("**/versions/")
            expect(page.locator("tr#v2")).to_have_class("kn-row-live")

            page.goto(f"{server}/admin/knowledge/service/add/")
            page.fill("#id_name", "Feeding bowl")
            page.fill("#id_price", "800")
            page.click("input[name=_save]")
            page.wait_for_url("**/admin/knowledge/service/")
            row = page.locator("#result_list tbody tr", has_text="Feeding bowl")
            expect(row).to_contain_text("— (product)")
            expect(row).to_contain_text("KES 800.00")
            _shot(page, "21-service-list-with-product")
        finally:
            browser.close()
    live = SnippetVersion.objects.get(key="parking", is_active=True)
    assert (live.version, live.translations) == (2, {"sw": {
        "title": "Maegesho", "body": "Maegesho ya bure nyuma ya jengo. Maegesho ya barabarani Ngong Road."}})
    assert Service.objects.get(name="Feeding bowl").duration_minutes is None
