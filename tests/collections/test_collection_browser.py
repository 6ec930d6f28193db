"""In a real browser: drop several files on a collection page, watch them index, see a bad file's error."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from collection_docs import FAQ_HTML, GUIDE_MD, price_list_pdf
from knowledge.collections.models import Document
from knowledge.collections.services import collection_create
from tests.support.live import CHROMIUM, CHROMIUM_ARGS, serve

USERNAME, PASSWORD = "kc-browser-owner", "pw-kc-browser-1"


@pytest.fixture
def server():
    with serve() as port:
        yield port


@pytest.fixture
def owner(committed):
    User = get_user_model()
    User.objects.filter(username=USERNAME).delete()
    user = User.objects.create_superuser(username=USERNAME, password=PASSWORD, email="")
    yield user
    User.objects.filter(username=USERNAME).delete()


@pytest.mark.browser
def test_dropping_files_on_a_collection_indexes_them_with_visible_progress(committed, owner, server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    collection = collection_create(name="guides", description="Guest-facing guides")
    (tmp_path / "guest-guide.md").write_bytes(GUIDE_MD)
    (tmp_path / "prices.pdf").write_bytes(price_list_pdf(pages=3))
    base = f"http://tenant.test.localhost:{server}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"{base}/admin/login/?next=/admin/knowledge/collection/{collection.pk}/change/")
            page.fill("#id_username", USERNAME)
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            expect(page.locator("#kc-documents h2")).to_have_text("Documents")

            # Two files through the file chooser, one dropped onto the zone (a real DataTransfer drop event).
            page.set_input_files("#kc-documents input[type=file]",
                                 [str(tmp_path / "guest-guide.md"), str(tmp_path / "prices.pdf")])
            page.evaluate("""([html, broken]) => {
                const transfer = new DataTransfer();
                transfer.items.add(new File([html], "delivery.html", {type: "text/html"}));
                transfer.items.add(new File([broken], "broken.pdf", {type: "application/pdf"}));
                const zone = document.querySelector(".kc-dropzone");
                const options = {dataTransfer: transfer, bubbles: true, cancelable: true};
                zone.dispatchEvent(new DragEvent("dragover", options));
                zone.dispatchEvent(new DragEvent("drop", options));
            }""", [FAQ_HTML.decode(), "%PDF-1.4 this file was cut short"])

            rows = page.locator("table.kc-documents tbody tr")
            expect(rows).to_have_count(3, timeout=60_000)
            expect(page.locator("table.kc-documents .kc-status.kc-done")).to_have_count(3, timeout=60_000)
            uploads = page.locator(".kc-uploads li")
            expect(uploads).to_have_count(4)
            # Listed in the order they were added, answered one after another.
            expect(uploads.locator(".kc-name")).to_have_text(["guest-guide.md", "prices.pdf", "delivery.html",
                                                              "broken.pdf"])
            expect(uploads.nth(3)).to_contain_text("'broken.pdf' could not be read as a PDF", timeout=60_000)
            expect(uploads.nth(0)).to_contain_text("uploaded")
            expect(page.locator("table.kc-documents")).to_contain_text("Aria Spa Price List 2026")
            expect(page.locator("table.kc-documents")).to_contain_text("3/3 chunks")
            page.screenshot(path="/tmp/shots/collection_upload.png", full_page=True)
        finally:
            browser.close()
    assert sorted(Document.objects.values_list("filename", "status")) == [
        ("delivery.html", "done"), ("guest-guide.md", "done"), ("prices.pdf", "done")]
