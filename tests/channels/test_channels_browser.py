"""In Chromium: the hand-off page (takeover, a WhatsApp reply, done) and the chat page's WhatsApp preview."""
from __future__ import annotations

import json
import os

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from channels.whatsapp import services
from channels.whatsapp.payloads import signature_for
from channels_support import APP_SECRET, PHONE_NUMBER_ID, TOKEN, message_delivery
from chat_kb import seed_all
from live_http import CHROMIUM, CHROMIUM_ARGS, serve

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture
def site(committed, graph_api):
    from channels.registry.services import whatsapp_number_connect

    seed_all()
    user = get_user_model().objects.create_user("ho-owner", password="pw-ho-12345", is_staff=True,
                                                 is_superuser=True, email="owner@spa.test")
    connection.set_schema_to_public()
    number = whatsapp_number_connect(tenant=committed, phone_number_id=PHONE_NUMBER_ID, access_token=TOKEN,
                                     app_secret=APP_SECRET).number
    raw = json.dumps(message_delivery(text="I want to book a hot stone massage on Saturday at 11am")).encode()
    services.delivery_accept(raw_body=raw, signature=signature_for(raw_body=raw, app_secret=APP_SECRET))
    connection.set_tenant(committed)
    try:
        with serve() as port:
            yield f"http://tenant.test.localhost:{port}"
    finally:
        connection.set_tenant(committed)
        get_user_model().objects.filter(pk=user.pk).delete()
        number.delete()


def test_an_owner_takes_over_a_whatsapp_hand_off_replies_and_closes_it(site, graph_api):
    from playwright.sync_api import sync_playwright

    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.set_default_timeout(20_000)
            page.goto(f"{site}/handoffs/")
            page.fill("#id_username", "ho-owner")
            page.fill("#id_password", "pw-ho-12345")
            page.click("input[type=submit]")
            page.wait_for_url(f"{site}/handoffs/")
            card = page.locator(".ho-card").first
            assert card.locator(".ho-kind").inner_text() == "Booking"
            assert card.locator(".ho-what").inner_text() == "Hot Stone Massage"
            assert "+254722333444 (WhatsApp, Wanjiku)" in card.locator(".ho-contact").inner_text()
            assert "hot stone massage on Saturday" in card.locator(".ho-line.ho-customer").first.inner_text()
            assert card.locator(".ho-line.ho-bot").count() == 1
            page.screenshot(path=f"{SHOTS}/handoffs_open.png", full_page=True)

            card.get_by_role("button", name="Take over (pause the assistant)").click()
            page.wait_for_selector(".ho-paused")
            assert "the assistant is not answering this customer" in page.locator(".ho-paused").inner_text()
            card = page.locator(".ho-card").first
            card.locator("textarea[name=reply]").fill("Hi Wanjiku, Saturday 11am is booked. See you then.")
            card.get_by_role("button", name="Send on WhatsApp").click()
            page.wait_for_selector(".ho-flash li")
            assert page.locator(".ho-flash li").inner_text() == "Reply queued for WhatsApp."
            owner_line = page.locator(".ho-line.ho-owner")
            assert "Saturday 11am is booked" in owner_line.inner_text() and "sent" in owner_line.inner_text()
            assert graph_api.texts[-1] == "Hi Wanjiku, Saturday 11am is booked. See you then."
            assert page.locator(".ho-card .ho-status").first.inner_text() == "Contacted"
            page.screenshot(path=f"{SHOTS}/handoffs_taken_over_and_replied.png", full_page=True)

            page.get_by_role("button", name="Mark done").click()
            page.wait_for_selector(".ho-empty")
            assert page.locator(".ho-card").count() == 0

            page.goto(f"{site}/chat/")
            page.select_option("#chat-channel", "whatsapp")
            page.fill("#chat-message", "Is there parking at the spa?")
            page.click("#chat-send")
            bubble = page.locator(".msg.bot").nth(0)
            bubble.locator(".wa-preview .wa-text").wait_for()
            page.wait_for_function("document.querySelector('.wa-text').textContent !== '…'")
            preview = bubble.locator(".wa-text").inner_text()
            assert "basement of Mirage Tower" in preview
            assert "[1]" not in preview and "**" not in preview
            assert "[1]" in bubble.locator(".answer").inner_text()  # the owner's view keeps the citation
            page.screenshot(path=f"{SHOTS}/chat_whatsapp_preview.png", full_page=True)
        finally:
            browser.close()
