"""In headless Chromium: an owner issues a chat key in the admin (shown once), finds it on the widget page, and
revokes it; the key list shows scopes and last-used times, and never another business's keys."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from tests.support.live import CHROMIUM, CHROMIUM_ARGS, serve

OWNER, PASSWORD = "keys-browser-owner", "pw-keys-browser-1"
SHOTS = Path("/tmp/shots")

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Debian's chromium")]


@pytest.fixture
def owner(committed, tenants):
    from ratiba.models import ApiKey
    from ratiba.services import api_key_issue

    other_tenant = tenants[1]  # not the `other_tenant` fixture: its test transaction would hide the rows

    User = get_user_model()
    User.objects.filter(username=OWNER).delete()
    User.objects.create_superuser(username=OWNER, password=PASSWORD, email="")
    api_key_issue(tenant=committed, label="server", scope="full")
    api_key_issue(tenant=other_tenant, label="another-business-key", scope="chat")
    yield
    User.objects.filter(username=OWNER).delete()
    ApiKey.objects.filter(tenant__in=[committed, other_tenant]).delete()


def test_an_owner_issues_finds_and_revokes_a_chat_key(owner):
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(exist_ok=True)
    with serve() as port, sync_playwright() as playwright:
        base = f"http://tenant.test.localhost:{port}"
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(f"{base}/admin/login/?next=/chat/widget/")
        page.fill("#id_username", OWNER)
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        expect(page.get_by_text("You have no chat key yet.")).to_be_visible(timeout=20_000)
        page.click("#issue-chat-key")
        expect(page.locator("#id_scope")).to_have_value("chat", timeout=20_000)
        expect(page.locator("#id_label")).to_have_value("website-widget")
        page.click("input[name=_save]")
        issued = page.locator("#issued-key")
        expect(issued).to_be_visible(timeout=20_000)
        raw = issued.input_value()
        assert raw.startswith("rk_")
        expect(page.get_by_text("it is the one to paste into your website widget")).to_be_visible()
        page.screenshot(path=str(SHOTS / "keys-issued.png"), full_page=True)
        prefix = raw.split("_")[1]
        page.goto(f"{base}/chat/widget/")
        expect(page.locator(".widget-keys")).to_contain_text(f"rk_{prefix}_", timeout=20_000)
        expect(page.locator(".widget-keys")).to_contain_text("never used")
        page.screenshot(path=str(SHOTS / "keys-widget-page.png"), full_page=True)
        page.goto(f"{base}/admin/ratiba/apikey/")
        table = page.locator("#result_list")
        expect(table).to_contain_text(prefix, timeout=20_000)
        expect(table).to_contain_text("server")
        expect(table).not_to_contain_text("another-business-key")
        assert raw not in page.content()
        row = table.locator("tr", has_text=prefix)
        row.locator("input.action-select").check()
        page.select_option("select[name=action]", "revoke")
        page.click("button[name=index]")
        expect(table.locator("tr", has_text=prefix)).to_contain_text("revoked", timeout=20_000)
        page.screenshot(path=str(SHOTS / "keys-list.png"), full_page=True)
        page.goto(f"{base}/chat/widget/")
        expect(page.get_by_text("You have no chat key yet.")).to_be_visible(timeout=20_000)
        browser.close()
