"""In Chromium: the hand-off mail and the page it links to (takeover, a WhatsApp reply, done), and the chat
page's WhatsApp preview."""
from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection

from channels.whatsapp import services
from channels.whatsapp.payloads import SIGNATURE_HEADER, signature_for
from channels_support import APP_SECRET, PHONE_NUMBER_ID, TOKEN, message_delivery
from conversations.models import HandoffRequest
from tests.support.live import CHROMIUM, CHROMIUM_ARGS, serve
from tests.support.spa import seed_all

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


def _owner_page(browser, site: str, path: str):
    """A page signed in as the site fixture's owner, on `path`."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(f"{site}/admin/login/?next={path}")
    page.fill("#id_username", "ho-owner")
    page.fill("#id_password", "pw-ho-12345")
    page.click("input[type=submit]")
    page.wait_for_url(f"{site}{path}")
    return page


def test_an_owner_takes_over_a_whatsapp_hand_off_replies_and_closes_it(site, graph_api):
    from playwright.sync_api import sync_playwright

    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = _owner_page(browser, site, "/handoffs/")
            card = page.locator(".ho-card").first
            assert card.locator(".ho-kind").inner_text() == "Booking"
            assert card.locator(".ho-what").inner_text() == "Hot Stone Massage"
            assert card.locator(".ho-channel").inner_text() == "WhatsApp"
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


def test_a_number_sent_after_a_complaint_on_the_chat_page_reaches_staff_as_a_call_back(site):
    from playwright.sync_api import sync_playwright

    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = _owner_page(browser, site, "/chat/")
            for number, message in enumerate(["The massage oil left a rash on my arms after Monday's visit.",
                                              "Wanjiku Mwangi, 0798 115 642"]):
                page.fill("#chat-message", message)
                page.click("#chat-send")
                page.locator(".msg.bot .answer").nth(number).wait_for()
            page.wait_for_function("document.querySelectorAll('.msg.bot .answer')[1].textContent.includes('0798')")
            reply = page.locator(".msg.bot .answer").nth(1).inner_text()
            assert "I've passed your message to our team; they will get back to you shortly on 0798 115 642" in reply
            page.screenshot(path=f"{SHOTS}/chat_call_back.png", full_page=True)

            page.goto(f"{site}/handoffs/")
            card = page.locator(".ho-card").first
            assert card.locator(".ho-kind").inner_text() == "Call back"
            assert card.locator(".ho-what").inner_text() == "Wants to hear back"
            assert "Wanjiku Mwangi, 0798 115 642" in card.locator(".ho-contact").inner_text()
            assert "massage oil left a rash" in card.locator(".ho-line.ho-customer").first.inner_text()
            page.screenshot(path=f"{SHOTS}/handoffs_call_back.png", full_page=True)
        finally:
            browser.close()


BOOKING = "I want to book a hot stone massage on Saturday at 11am, my number is 0712 345 678"


@pytest.fixture
def mailed_site(committed, graph_api, settings):
    """A live server whose links point at itself, a front-desk staff user with an email address, and the
    test tenant's number connected; yields (base URL of the business's host, platform URL)."""
    from channels.registry.services import whatsapp_number_connect

    seed_all()
    user = get_user_model().objects.create_user("frontdesk", password="pw-desk-12345", is_staff=True,
                                                 email="desk@spa.test")
    connection.set_schema_to_public()
    number = whatsapp_number_connect(tenant=committed, phone_number_id=PHONE_NUMBER_ID, access_token=TOKEN,
                                     app_secret=APP_SECRET).number
    connection.set_tenant(committed)
    try:
        with serve() as port:
            settings.TELEMETRY_LINK_BASE = f"http://{{domain}}:{port}"
            yield f"http://tenant.test.localhost:{port}", f"http://localhost:{port}"
    finally:
        connection.set_tenant(committed)
        get_user_model().objects.filter(pk=user.pk).delete()
        number.delete()


def _handoff_mail_after(deadline_seconds: float = 20.0):
    # The webhook answers once the message is stored and handled (tasks run inline here); the mail follows.
    deadline = time.monotonic() + deadline_seconds
    while not mail.outbox and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(mail.outbox) == 1
    return mail.outbox[0]


def test_the_hand_off_mail_renders_and_its_link_lets_staff_take_over_and_close_it(mailed_site, graph_api):
    from playwright.sync_api import sync_playwright

    site, platform = mailed_site
    raw = json.dumps(message_delivery(text=BOOKING)).encode()
    response = httpx.post(f"{platform}/webhooks/whatsapp/", content=raw, timeout=60, headers={
        "Content-Type": "application/json", SIGNATURE_HEADER: signature_for(raw_body=raw, app_secret=APP_SECRET)})
    assert response.json() == {"accepted": 1, "duplicates": 0, "statuses": 0}
    handoff = HandoffRequest.objects.get()
    assert (handoff.channel, handoff.status) == ("whatsapp", "new")
    message = _handoff_mail_after()
    assert message.to == ["desk@spa.test"]
    assert message.subject == "[Test Spa] New booking request: Hot Stone Massage"
    [(html, mimetype)] = message.alternatives
    assert mimetype == "text/html" and "<script" not in html and len(html) < 6000
    link = f"{site}/handoffs/#handoff-{handoff.pk}"
    assert link in message.body

    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 760, "height": 900})
            context.set_default_timeout(20_000)
            page = context.new_page()
            page.goto(f"{site}/admin/login/?next=/handoffs/")
            page.fill("#id_username", "frontdesk")
            page.fill("#id_password", "pw-desk-12345")
            page.click("input[type=submit]")
            page.wait_for_url(f"{site}/handoffs/")

            inbox = context.new_page()
            inbox.set_content(html)
            text = inbox.locator("body").inner_text()
            assert "Test Spa" in text and "New booking request: Hot Stone Massage" in text
            assert "0712 345 678 · +254722333444 (WhatsApp, Wanjiku)" in text
            assert BOOKING in inbox.locator("blockquote").inner_text()
            assert "Channel\tWhatsApp" in text  # the brand's spelling, not the choice value capitalised
            button = inbox.get_by_role("link", name="Open the hand-off")
            assert button.get_attribute("href") == link and button.is_visible()
            inbox.screenshot(path=f"{SHOTS}/handoff_mail.png", full_page=True)

            button.click()
            inbox.wait_for_url(link)
            card = inbox.locator(f"#handoff-{handoff.pk}")
            assert card.locator(".ho-what").inner_text() == "Hot Stone Massage"
            assert "0712 345 678 · +254722333444 (WhatsApp, Wanjiku)" in card.locator(".ho-contact").inner_text()
            assert BOOKING in card.locator(".ho-line.ho-customer").first.inner_text()
            assert card.locator(".ho-line.ho-bot").count() == 1  # the bot's answer, already sent
            inbox.screenshot(path=f"{SHOTS}/handoff_from_mail.png", full_page=True)

            card.get_by_role("button", name="Take over (pause the assistant)").click()
            inbox.wait_for_selector(".ho-paused")
            assert "(since" in inbox.locator(".ho-paused").inner_text() and "frontdesk" in inbox.locator(
                ".ho-paused").inner_text()
            inbox.screenshot(path=f"{SHOTS}/handoff_taken_over.png", full_page=True)
            inbox.locator(f"#handoff-{handoff.pk}").get_by_role("button", name="Mark done").click()
            inbox.wait_for_selector(".ho-empty")
            assert inbox.locator(".ho-flash li").inner_text() == "Marked done."
        finally:
            browser.close()
    handoff.refresh_from_db()
    assert handoff.status == "done"
    assert handoff.session.whatsapp_contacts.get().paused_by == "frontdesk"
    assert len(mail.outbox) == 1 and len(graph_api.requests) == 1  # one mail, one bot answer, nothing more
