"""The /chat/ page in headless Chromium with follow-ups: "and the hot stone one?", then a phone number for a booking."""
from __future__ import annotations

import os

import pytest

from conversations.models import HandoffRequest
from tests.support.live import chromium_page, sign_in

pytestmark = pytest.mark.browser

SHOTS = "/tmp/shots"


def _send(page, message: str, index: int):
    """Send a message on the chat page and wait for the bot's answer number `index` to finish."""
    page.fill("#chat-message", message)
    page.click("#chat-send")
    bot = page.locator(".msg.bot").nth(index)
    bot.locator(".meta").wait_for()
    return bot


def test_an_owner_asks_a_follow_up_and_gives_a_number_for_a_booking(site):
    os.makedirs(SHOTS, exist_ok=True)
    with chromium_page(height=1100) as page:
        sign_in(page, url=f"{site}/chat/", username="chat-owner", password="pw-chat-12345")
        first = _send(page, "How much is the deep tissue massage?", 0)
        assert "Deep Tissue Massage: KES 5,500" in first.locator(".answer").inner_text()
        second = _send(page, "and the hot stone one?", 1)
        text = second.locator(".answer").inner_text()
        assert "Hot Stone Massage: KES 7,500, 90 minutes" in text and "Deep Tissue" not in text
        assert "Services and prices" in second.locator(".sources").inner_text()

        booking = _send(page, "I'd like to book a hot stone massage on Saturday", 2)
        assert "Please share your phone number" in booking.locator(".answer").inner_text()
        thanks = _send(page, "0712 345 678", 3)
        assert thanks.locator(".answer").inner_text() == (
            "Thank you. I've added 0712 345 678 to your booking request; our team will contact you shortly.")
        assert "refused" not in (thanks.get_attribute("class") or "")
        page.screenshot(path=f"{SHOTS}/chat_followups.png", full_page=True)
    assert list(HandoffRequest.objects.values_list("kind", "contact")) == [("booking", "0712 345 678")]


def test_a_customer_asking_two_things_gets_an_answer_and_a_source_for_each(site):
    os.makedirs(SHOTS, exist_ok=True)
    with chromium_page() as page:
        sign_in(page, url=f"{site}/chat/", username="chat-owner", password="pw-chat-12345")
        bot = _send(page, "Where can I leave my car, and what if I need to call off my appointment?", 0)
        answer = bot.locator(".answer").inner_text()
        assert "basement of Mirage Tower" in answer and "free of charge" in answer
        assert "passed your" not in answer  # asking what happens if is not asking to cancel: no hand-off
        sources = bot.locator(".sources").inner_text()
        assert "Parking" in sources and "Cancellation policy" in sources
        page.screenshot(path=f"{SHOTS}/chat_two_questions.png", full_page=True)


def test_a_customer_asking_where_and_when_and_for_the_number_gets_them(site):
    from knowledge.services import snippet_version_create, snippet_versions_embed

    location = snippet_version_create(
        key="location", title="Where to find us", category="facility", role="retrieved", status="accepted",
        body="We are on the 3rd floor of Mirage Tower, Chiromo Road, Westlands. If you get lost, call or WhatsApp "
             "us on 0722 418 903 and reception will guide you up.", enforce_release_gate=False, queue_embedding=False)
    snippet_versions_embed(version_ids=[location.pk])
    os.makedirs(SHOTS, exist_ok=True)
    with chromium_page(height=1000) as page:
        sign_in(page, url=f"{site}/chat/", username="chat-owner", password="pw-chat-12345")
        both = _send(page, "Where are you, and what time do you open on Saturday?", 0)
        answer = both.locator(".answer").inner_text()
        assert "Chiromo Road" in answer and "09:00" in answer and "public holidays" not in answer
        assert "Where to find us" in both.locator(".sources").inner_text()
        number = _send(page, "whats ur numba", 1)
        assert "0722 418 903" in number.locator(".answer").inner_text()
        assert "refused" not in (number.get_attribute("class") or "")
        page.screenshot(path=f"{SHOTS}/chat_where_and_number.png", full_page=True)


def test_a_customer_asking_whether_a_product_is_sold_and_how_to_pay_gets_the_row_and_the_way(site):
    from knowledge.services import service_upsert

    service_upsert(name="Kaya Body Oil (100 ml)", duration_minutes=None, price="1800.00", currency="KES", position=9,
                   description="Shea and baobab body oil.")
    os.makedirs(SHOTS, exist_ok=True)
    with chromium_page(height=1000) as page:
        sign_in(page, url=f"{site}/chat/", username="chat-owner", password="pw-chat-12345")
        sold = _send(page, "Do you sell body oil?", 0)
        assert "Kaya Body Oil (100 ml): KES 1,800" in sold.locator(".answer").inner_text()
        assert "Services and prices" in sold.locator(".sources").inner_text()
        paying = _send(page, "do u take mpesa", 1)
        answer = paying.locator(".answer").inner_text()
        assert "M-Pesa (Till 5123987)" in answer and "refused" not in (paying.get_attribute("class") or "")
        assert "Ways to pay" in paying.locator(".sources").inner_text()
        page.screenshot(path=f"{SHOTS}/chat_sold_and_paying.png", full_page=True)


def test_a_customer_asking_how_to_book_and_who_runs_the_spa_gets_the_snippets_titled_for_them(site):
    from tests.support.spa import seed_snippets

    seed_snippets(items=[
        ("how_to_book", "general", "How to book", "Book on WhatsApp at 0722 418 903 or at reception; a 50% deposit "
         "holds a Saturday slot."),
        ("about_aria", "general", "About Aria Aura Spa", "Aria Aura Spa was opened in 2016 by Wanjiku Mwangi, a "
         "therapist trained in Bali. Today eight therapists work with her."),
    ])
    os.makedirs(SHOTS, exist_ok=True)
    with chromium_page(height=1000) as page:
        sign_in(page, url=f"{site}/chat/", username="chat-owner", password="pw-chat-12345")
        booking = _send(page, "How do I book the Signature facial?", 0)
        assert "WhatsApp at 0722 418 903" in booking.locator(".answer").inner_text()
        assert "How to book" in booking.locator(".sources").inner_text()
        about = _send(page, "and who's behind the spa?", 1)
        assert "Wanjiku Mwangi" in about.locator(".answer").inner_text()
        sources = about.locator(".sources").inner_text()
        assert "About Aria Aura Spa" in sources and "How to book" not in sources  # read alone, not with the topic
        page.screenshot(path=f"{SHOTS}/chat_booking_and_about.png", full_page=True)
