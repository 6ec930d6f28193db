"""In headless Chromium against a real server: an owner asks the test-retrieval page a question and reads
what each stage found, with the whole-snippet and title similarities side by side."""
from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model

from retrieval_kb import SPA, make_kb
from tests.support.live import CHROMIUM, CHROMIUM_ARGS, serve

OWNER, OWNER_PASSWORD = "retrieval-browser-owner", "pw-retrieval-browser-1"
SHOTS = Path("/tmp/shots")
TIMEOUT_MS = 20_000

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Debian's chromium (make setup installs it)")]


@pytest.fixture
def server():
    with serve() as port:
        yield f"http://tenant.test.localhost:{port}"


@pytest.fixture
def owner(committed):
    """A committed, embedded spa KB and an owner; the owner is removed after (`committed` empties the KB)."""
    User = get_user_model()
    User.objects.filter(username=OWNER).delete()
    create = make_kb()
    for item in SPA:
        create(**item)
    create(key="own_wine", title="Can I bring my own wine?",
           body="Guests in the garden suite may bring one bottle per party. A corkage fee of KES 500 applies.")
    User.objects.create_superuser(username=OWNER, password=OWNER_PASSWORD, email="")
    try:
        yield OWNER
    finally:
        User.objects.filter(username=OWNER).delete()


def test_the_owner_sees_every_stage_with_both_similarities(owner, server):
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.goto(f"{server}/admin/")
            page.fill("#id_username", OWNER)
            page.fill("#id_password", OWNER_PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_selector("#site-name")
            query = {"query": "Is it okay to bring my own wine?", "intent": "other", "channel": "chat",
                     "mode": "hybrid"}
            page.goto(f"{server}/admin/knowledge/test-retrieval/?{urlencode(query)}")
            vector = page.locator("#stage-vector")
            expect(vector.locator("th")).to_contain_text(["#", "Snippet", "Whole snippet", "Title"])
            first = vector.locator("tbody tr").first
            expect(first).to_contain_text("own_wine v1")
            cells = first.locator("td.tr-num")
            whole, title = (float(cells.nth(index).inner_text()) for index in (0, 1))
            assert title > whole > 0
            expect(page.locator("#stage-fusion tbody tr").first).to_contain_text("own_wine v1")
            page.screenshot(path=str(SHOTS / "retrieval-test-page.png"), full_page=True)
        finally:
            browser.close()
