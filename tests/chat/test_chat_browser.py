"""The /chat/ page in headless Chromium: log in, ask, watch the answer stream in with citations, see a refusal."""
from __future__ import annotations

import os

import pytest

from tests.support.live import chromium_page


pytestmark = pytest.mark.browser

SHOTS = "/tmp/shots"


def test_an_owner_asks_sees_a_streamed_cited_answer_and_a_clear_refusal(site):
    os.makedirs(SHOTS, exist_ok=True)
    with chromium_page() as page:
        page.set_default_timeout(20_000)
        page.goto(f"{site}/chat/")
        assert "/admin/login/" in page.url  # the page needs a signed-in owner
        page.fill("#id_username", "chat-owner")
        page.fill("#id_password", "pw-chat-12345")
        page.click("input[type=submit]")
        page.wait_for_url(f"{site}/chat/")

        deltas = []
        page.on("response", lambda r: deltas.append(r.headers.get("content-type", ""))
                if r.url.endswith("/chat/stream/") else None)
        page.fill("#chat-message", "Is there parking at the spa?")
        page.click("#chat-send")
        answer = page.locator(".msg.bot").nth(0)
        answer.locator(".meta").wait_for()
        assert deltas and deltas[0].startswith("text/event-stream")
        assert "basement of Mirage Tower" in answer.locator(".answer").inner_text()
        assert answer.locator("button.cite").first.inner_text() == "[1]"
        assert "Parking" in answer.locator(".sources").inner_text()
        assert "other · extractive" in answer.locator(".meta").inner_text()

        answer.locator("button.cite").first.click()
        card = page.locator("#citation-card")
        card.wait_for(state="visible")
        assert page.locator("#citation-title").inner_text() == "Parking"
        assert "Mirage Tower" in page.locator("#citation-excerpt").inner_text()
        assert page.locator("#citation-open").get_attribute("href") == "/chat/citations/parking/1/"
        page.screenshot(path=f"{SHOTS}/chat_answer_with_citation.png", full_page=True)
        page.click("#citation-close")

        page.fill("#chat-message", "Who won the football world cup in 1998?")
        page.click("#chat-send")
        refusal = page.locator(".msg.bot").nth(1)
        refusal.locator(".meta").wait_for()
        assert "refused" in refusal.get_attribute("class")
        assert refusal.locator(".refusal-badge").inner_text() == "Not answered · no_relevant_context"
        assert "I don't have an answer to that yet" in refusal.locator(".answer").inner_text()

        page.fill("#chat-message", "Jumapili mnafungua saa ngapi?")
        page.press("#chat-message", "Enter")
        swahili = page.locator(".msg.bot").nth(2)
        swahili.locator(".meta").wait_for()
        assert "Jumapili" in swahili.locator(".answer").inner_text()
        page.screenshot(path=f"{SHOTS}/chat_refusal_and_swahili.png", full_page=True)

        # The citation link opens the snippet in the admin.
        page.goto(f"{site}/chat/citations/parking/1/")
        assert "/admin/knowledge/snippet/" in page.url
