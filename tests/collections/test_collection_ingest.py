"""Ingestion of real files: parsing keeps titles, headings and pages; re-upload is idempotent; updates swap."""
from __future__ import annotations

import pytest

from collection_docs import FAQ_HTML, GUIDE_MD, price_list_pdf
from knowledge.collections.errors import DocumentTooLarge, InvalidDocument, UnsupportedFormat
from knowledge.collections.models import Chunk, Document, DocumentStatus
from knowledge.collections.services import collection_create, document_ingest, document_retry
from knowledge.collections.testing import make_pdf
from knowledge.embeddings import EmbeddingError


@pytest.fixture
def guides(tenant):
    return collection_create(name="guides")


def live_chunks(document):
    return list(Chunk.objects.filter(document=document, is_live=True).order_by("ordinal"))


def test_markdown_keeps_title_and_heading_paths(guides, ingest):
    result = ingest(guides, "guest-guide.md", GUIDE_MD)
    document = Document.objects.get(pk=result.document.pk)
    chunks = live_chunks(document)
    assert result.created is True
    assert document.status == DocumentStatus.DONE
    assert document.title == "Aria Spa Guest Guide"
    assert (document.chunks_done, document.chunks_total, document.progress_percent) == (len(chunks), len(chunks), 100)
    assert [chunk.heading_path for chunk in chunks] == [
        "Aria Spa Guest Guide",
        "Aria Spa Guest Guide > Arrival",
        "Aria Spa Guest Guide > Arrival > Parking",
        "Aria Spa Guest Guide > Treatments > Hot stone massage",
        "Aria Spa Guest Guide > Treatments > Facials",
    ]
    assert chunks[2].text == ("Free parking is available behind the building. "
                              "The car park closes at nine in the evening.")
    assert all(chunk.page is None and chunk.embedding is not None and chunk.generation == 1 for chunk in chunks)


def test_multi_page_pdf_keeps_pages_and_headings(guides, ingest):
    result = ingest(guides, "prices.pdf", price_list_pdf(pages=4), "application/pdf")
    document = Document.objects.get(pk=result.document.pk)
    chunks = live_chunks(document)
    assert document.status == DocumentStatus.DONE
    assert (document.title, document.page_count, document.format) == ("Aria Spa Price List 2026", 4, "pdf")
    assert [(chunk.page, chunk.heading_path) for chunk in chunks] == [
        (1, "Aria Spa Price List > Massages"),
        (2, "Aria Spa Price List > Facials"),
        (3, "Aria Spa Price List > Nail care"),
        (4, "Aria Spa Price List > Packages"),
    ]
    assert chunks[0].text == ("A full body massage of sixty minutes costs 4,500 shillings. A back and shoulder "
                              "massage of thirty minutes costs 2,500 shillings.\n"
                              "Prices include VAT. Tips are at your discretion.")
    # The running footer ("... page 3 of 4") is dropped from every page.
    assert chunks[2].text == "A manicure costs 1,200 shillings. A pedicure with a foot soak costs 1,800 shillings."


def test_html_uses_the_page_title_and_skips_scripts_and_navigation(guides, ingest):
    result = ingest(guides, "delivery.html", FAQ_HTML, "text/html")
    document = Document.objects.get(pk=result.document.pk)
    chunks = live_chunks(document)
    assert document.title == "Aria Spa delivery FAQ"
    assert [chunk.heading_path for chunk in chunks] == [
        "Gift box delivery", "Gift box delivery > Delivery fees", "Gift box delivery > Returns"]
    assert chunks[2].text == "Unopened gift boxes can be returned within seven days for a full refund."
    assert not any("console" in chunk.text or "Home" in chunk.text for chunk in chunks)


def test_uploading_the_same_bytes_again_changes_nothing(guides, ingest, monkeypatch):
    first = ingest(guides, "guest-guide.md", GUIDE_MD)
    before = [(chunk.pk, chunk.generation) for chunk in live_chunks(first.document)]
    calls = []
    monkeypatch.setattr("knowledge.collections.services.embed_texts", lambda texts: calls.append(texts))
    again = ingest(guides, "guest-guide.md", GUIDE_MD)
    renamed = ingest(guides, "copy-of-guide.md", GUIDE_MD)
    assert (again.document.pk, again.created, again.changed, again.queued) == (first.document.pk, False, False, False)
    assert (renamed.document.pk, renamed.created, renamed.queued) == (first.document.pk, False, False)
    assert Document.objects.count() == 1
    assert [(chunk.pk, chunk.generation) for chunk in live_chunks(first.document)] == before
    assert calls == []


def test_a_changed_file_replaces_the_document_chunks(guides, ingest):
    first = ingest(guides, "prices.pdf", price_list_pdf(pages=2))
    second = ingest(guides, "prices.pdf", price_list_pdf(pages=2, massage_price="5,200"))
    document = Document.objects.get(pk=first.document.pk)
    chunks = live_chunks(document)
    assert (second.document.pk, second.created, second.changed) == (first.document.pk, False, True)
    assert (document.status, document.live_generation, document.indexed_sha256) == ("done", 2, document.sha256)
    assert Chunk.objects.filter(document=document).count() == len(chunks) == 2
    assert "5,200 shillings" in chunks[0].text and "4,500" not in chunks[0].text
    assert {chunk.generation for chunk in chunks} == {2}


def test_running_the_task_twice_is_harmless(guides, ingest):
    result = ingest(guides, "guest-guide.md", GUIDE_MD)
    ids = [chunk.pk for chunk in live_chunks(result.document)]
    outcome = document_ingest(document_id=result.document.pk)
    assert (outcome.outcome, outcome.chunks) == ("unchanged", len(ids))
    assert [chunk.pk for chunk in live_chunks(result.document)] == ids


def test_a_damaged_pdf_is_rejected_at_upload_and_nothing_is_stored(guides, ingest):
    data = price_list_pdf(pages=2)
    with pytest.raises(InvalidDocument) as not_pdf:
        ingest(guides, "prices.pdf", b"this is not a pdf at all, just text renamed")
    with pytest.raises(InvalidDocument) as truncated:
        ingest(guides, "cut.pdf", data[:200])
    assert "is not a PDF" in not_pdf.value.message
    assert truncated.value.message.startswith("'cut.pdf' could not be read as a PDF; the file is damaged")
    assert Document.objects.count() == 0 and Chunk.objects.count() == 0


def test_a_pdf_without_text_fails_with_a_clear_error_and_no_chunks(guides, ingest):
    result = ingest(guides, "scan.pdf", make_pdf([[], []]))
    document = Document.objects.get(pk=result.document.pk)
    assert document.status == DocumentStatus.FAILED
    assert document.error == ("'scan.pdf' has no extractable text (a scanned image needs OCR, "
                              "which is not supported).")
    assert Chunk.objects.filter(document=document).count() == 0


def test_binary_and_unknown_files_are_rejected(guides, ingest):
    with pytest.raises(InvalidDocument) as binary:
        ingest(guides, "notes.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(UnsupportedFormat) as unknown:
        ingest(guides, "sheet.xlsx", b"PK\x03\x04 zip bytes")
    assert binary.value.message == "'notes.txt' looks like a binary file, not text; upload Markdown (.md), " \
                                   "plain text (.txt), HTML (.html) or PDF (.pdf)."
    assert unknown.value.status == 415
    assert Document.objects.count() == 0


def test_an_oversized_file_is_rejected(guides, ingest, settings):
    settings.DOCUMENT_MAX_BYTES = 1000
    with pytest.raises(DocumentTooLarge) as too_large:
        ingest(guides, "big.txt", b"word " * 300)
    assert too_large.value.message == "'big.txt' is 1,500 bytes; the limit is 1,000 bytes."
    assert Document.objects.count() == 0


def test_an_embedding_failure_is_recorded_and_retry_indexes_it(guides, ingest, failing_embedder, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    from knowledge import embeddings

    real = embeddings.get_embedder()
    fake = failing_embedder(retryable=False)
    result = ingest(guides, "guest-guide.md", GUIDE_MD)
    failed = Document.objects.get(pk=result.document.pk)
    assert (failed.status, failed.error) == ("failed", "Embedding failed: provider said no")
    assert Chunk.objects.filter(document=failed).count() == 0 and len(fake.calls) == 1

    monkeypatch.setattr(embeddings, "get_embedder", lambda: real)
    with django_capture_on_commit_callbacks(execute=True):
        document_retry(document=failed)
    retried = Document.objects.get(pk=failed.pk)
    assert (retried.status, retried.error, retried.attempts) == ("done", "", 2)
    assert len(live_chunks(retried)) == 5


def test_a_failed_update_keeps_the_previous_version_searchable(guides, ingest, failing_embedder):
    first = ingest(guides, "prices.pdf", price_list_pdf(pages=2))
    old = [(chunk.pk, chunk.text) for chunk in live_chunks(first.document)]
    failing_embedder(retryable=True)  # inline (eager) ingestion records it at once; a worker retries first
    ingest(guides, "prices.pdf", price_list_pdf(pages=2, massage_price="5,200"))
    document = Document.objects.get(pk=first.document.pk)
    assert (document.status, document.error) == ("failed", "Embedding failed: provider said no")
    assert (document.live_generation, document.attempts) == (1, 2)
    assert [(chunk.pk, chunk.text) for chunk in live_chunks(document)] == old
    assert Chunk.objects.filter(document=document, is_live=False).count() == 0


def test_a_retryable_embedding_error_before_the_last_attempt_requeues_without_a_partial_build(guides, ingest,
                                                                                           failing_embedder):
    first = ingest(guides, "prices.pdf", price_list_pdf(pages=2))
    failing_embedder(retryable=True)
    Document.objects.filter(pk=first.document.pk).update(sha256="0" * 64, status="queued")  # as a new upload would
    with pytest.raises(EmbeddingError):
        document_ingest(document_id=first.document.pk, final_attempt=False)
    document = Document.objects.get(pk=first.document.pk)
    assert (document.status, document.error) == ("queued", "Embedding unavailable, retrying: provider said no")
    assert Chunk.objects.filter(document=document, is_live=False).count() == 0
    assert Chunk.objects.filter(document=document, is_live=True).count() == 2


def test_reembed_redoes_chunks_made_by_another_model(guides, ingest):
    import io

    import numpy as np
    from django.core.management import call_command

    from knowledge.collections.chunking import embedding_text
    from knowledge.embeddings import embed_texts, embedding_model_name

    document = Document.objects.get(pk=ingest(guides, "guest-guide.md", GUIDE_MD).document.pk)
    chunks = live_chunks(document)
    assert {chunk.embedding_model for chunk in chunks} == {embedding_model_name()}
    parking = chunks[2]
    Chunk.objects.filter(pk=parking.pk).update(embedding=[0.0] * 383 + [1.0], embedding_model="an-old-model")
    out = io.StringIO()
    call_command("reembed", "--tenant", "test_tenant", stdout=out)
    assert "0 version(s) and 1 chunk(s) embedded" in out.getvalue()
    parking.refresh_from_db()
    expected = embed_texts([embedding_text(title=document.title, heading_path=parking.heading_path,
                                           text=parking.text)])[0]
    assert parking.embedding_model == embedding_model_name()
    assert float(np.array(parking.embedding) @ np.array(expected)) == pytest.approx(1.0, abs=1e-4)
    # Current everywhere now: nothing more to do unless forced.
    call_command("reembed", "--tenant", "test_tenant", stdout=out)
    assert "0 version(s) and 0 chunk(s) embedded" in out.getvalue()
    call_command("reembed", "--tenant", "test_tenant", "--force", stdout=out)
    assert f"0 version(s) and {len(chunks)} chunk(s) embedded" in out.getvalue()
