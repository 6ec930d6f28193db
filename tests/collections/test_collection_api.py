"""REST API for collections and documents: shapes, idempotent upload, progress, errors in the standard shape."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from collection_docs import GUIDE_MD, price_list_pdf
from knowledge.collections.models import Chunk, Collection, Document

BASE = "/api/v1/collections/"


@pytest.fixture
def api(api_client, django_capture_on_commit_callbacks):
    client, headers = api_client

    class Api:
        def get(self, path):
            return client.get(path, **headers)

        def post_json(self, path, body):
            return client.post(path, body, content_type="application/json", **headers)

        def upload(self, path, name, data, content_type="text/markdown"):
            with django_capture_on_commit_callbacks(execute=True):
                return client.post(path, {"file": SimpleUploadedFile(name, data, content_type=content_type)},
                                   **headers)

        def delete(self, path):
            return client.delete(path, **headers)

    return Api()


def test_it_creates_lists_and_deletes_collections(api):
    created = api.post_json(BASE, {"name": "price-lists", "scope": "session", "description": "PDFs"})
    listed = api.get(BASE)
    detail = api.get(f"{BASE}price-lists/")
    deleted = api.delete(f"{BASE}price-lists/")
    assert created.status_code == 201
    body = created.json()
    assert {key: body[key] for key in ("name", "scope", "description", "document_count")} == {
        "name": "price-lists", "scope": "session", "description": "PDFs", "document_count": 0}
    assert [item["name"] for item in listed.json()["results"]] == ["price-lists"]
    assert detail.json()["scope"] == "session"
    assert deleted.status_code == 204
    assert api.get(f"{BASE}price-lists/").json() == {
        "error": {"code": "not_found", "message": "No collection named 'price-lists'."}}


def test_it_rejects_a_taken_or_invalid_name(api):
    api.post_json(BASE, {"name": "guides"})
    taken = api.post_json(BASE, {"name": "guides"})
    invalid = api.post_json(BASE, {"name": "no spaces!", "scope": "galaxy"})
    assert taken.status_code == 409
    assert taken.json() == {"error": {"code": "conflict", "message": "A collection named 'guides' already exists.",
                                      "fields": {"name": ["Already exists."]}}}
    assert invalid.status_code == 400
    assert invalid.json()["error"]["code"] == "invalid_request"
    assert set(invalid.json()["error"]["fields"]) == {"scope"}
    invalid_name = api.post_json(BASE, {"name": "no spaces!"})
    assert invalid_name.json()["error"]["fields"] == {
        "name": ["Use 1-100 letters, digits, hyphens or underscores, starting with a letter or digit."]}
    assert Collection.objects.count() == 1


def test_upload_indexes_the_file_and_reports_progress(api):
    api.post_json(BASE, {"name": "guides"})
    response = api.upload(f"{BASE}guides/documents/", "guest-guide.md", GUIDE_MD)
    assert response.status_code == 201
    body = response.json()
    # The response is written before the queued ingestion runs (here: when the test's commit hooks fire).
    assert body["upload"] == {"created": True, "changed": True, "queued": True}
    assert (body["title"], body["status"], body["format"], body["size"], body["searchable"]) == (
        "guest guide", "queued", "markdown", len(GUIDE_MD), False)

    detail = api.get(f"{BASE}guides/documents/{body['id']}/").json()
    listed = api.get(f"{BASE}guides/documents/").json()
    assert (detail["title"], detail["status"], detail["error"], detail["searchable"]) == (
        "Aria Spa Guest Guide", "done", "", True)
    assert detail["progress"] == {"chunks_done": 5, "chunks_total": 5, "percent": 100}
    assert listed["count"] == 1 and listed["results"][0] == detail
    assert api.get(BASE + "guides/").json()["document_count"] == 1


def test_uploading_the_same_file_twice_returns_the_same_document(api):
    api.post_json(BASE, {"name": "guides"})
    first = api.upload(f"{BASE}guides/documents/", "guest-guide.md", GUIDE_MD).json()
    second = api.upload(f"{BASE}guides/documents/", "guest-guide.md", GUIDE_MD)
    assert second.status_code == 200
    assert second.json()["id"] == first["id"]
    assert second.json()["upload"] == {"created": False, "changed": False, "queued": False}
    assert Document.objects.count() == 1


def test_it_rejects_uploads_with_clear_errors(api, settings):
    api.post_json(BASE, {"name": "guides"})
    url = f"{BASE}guides/documents/"
    corrupt = api.upload(url, "prices.pdf", price_list_pdf(pages=2)[:300], "application/pdf")
    unsupported = api.upload(url, "photo.png", b"\x89PNG\r\n\x1a\n....", "image/png")
    missing = api.post_json(url, {})
    settings.DOCUMENT_MAX_BYTES = 2048
    oversized = api.upload(url, "huge.md", b"# Big\n\n" + b"word " * 1000)
    assert corrupt.status_code == 400
    assert corrupt.json()["error"]["code"] == "invalid_document"
    assert corrupt.json()["error"]["message"].startswith("'prices.pdf' could not be read as a PDF; the file is damaged")
    assert unsupported.status_code == 415
    assert unsupported.json()["error"] == {
        "code": "unsupported_media_type",
        "message": "'photo.png' is not a supported document; upload Markdown (.md), plain text (.txt), "
                   "HTML (.html) or PDF (.pdf)."}
    assert missing.status_code in (400, 415)
    assert oversized.status_code == 413
    assert oversized.json()["error"]["code"] == "payload_too_large"
    assert Document.objects.count() == 0 and Chunk.objects.count() == 0


def test_an_upload_under_the_body_limit_but_over_the_file_limit_is_413(api, settings, monkeypatch):
    # The middleware checks the whole body; the view also checks the file itself (chunked uploads
    # have no Content-Length).
    api.post_json(BASE, {"name": "guides"})
    settings.DOCUMENT_MAX_BYTES = 10_000
    monkeypatch.setattr("knowledge.collections.services.max_document_bytes", lambda: 100)
    response = api.upload(f"{BASE}guides/documents/", "guide.md", GUIDE_MD)
    assert response.status_code == 413
    assert response.json()["error"]["message"] == f"'guide.md' is {len(GUIDE_MD):,} bytes; the limit is 100 bytes."


def test_deleting_a_document_removes_its_chunks(api):
    api.post_json(BASE, {"name": "guides"})
    document = api.upload(f"{BASE}guides/documents/", "guest-guide.md", GUIDE_MD).json()
    response = api.delete(f"{BASE}guides/documents/{document['id']}/")
    assert response.status_code == 204
    assert Chunk.objects.count() == 0
    assert api.get(f"{BASE}guides/documents/{document['id']}/").status_code == 404


def test_a_failed_document_can_be_retried_through_the_api(api, failing_embedder, monkeypatch,
                                                          django_capture_on_commit_callbacks):
    from knowledge import embeddings

    real = embeddings.get_embedder()
    api.post_json(BASE, {"name": "guides"})
    failing_embedder(retryable=False)
    uploaded = api.upload(f"{BASE}guides/documents/", "guest-guide.md", GUIDE_MD).json()
    failed = api.get(f"{BASE}guides/documents/{uploaded['id']}/").json()
    assert (failed["status"], failed["error"], failed["searchable"]) == (
        "failed", "Embedding failed: provider said no", False)
    monkeypatch.setattr(embeddings, "get_embedder", lambda: real)
    with django_capture_on_commit_callbacks(execute=True):
        retried = api.post_json(f"{BASE}guides/documents/{failed['id']}/retry/", {})
    assert (retried.status_code, retried.json()["status"]) == (202, "queued")
    after = api.get(f"{BASE}guides/documents/{failed['id']}/").json()
    assert (after["status"], after["progress"]["percent"]) == ("done", 100)


def test_it_needs_an_api_key(client_for, tenant):
    response = client_for(tenant).get(BASE)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_each_collections_error_has_its_exact_body(api):
    api.post_json(BASE, {"name": "guides"})
    document = api.upload(f"{BASE}guides/documents/", "guest-guide.md", GUIDE_MD).json()
    retry = api.post_json(f"{BASE}guides/documents/{document['id']}/retry/", {})
    empty = api.upload(f"{BASE}guides/documents/", "empty.md", b"   \n")
    no_collection = api.upload(f"{BASE}nowhere/documents/", "guest-guide.md", GUIDE_MD)
    no_document = api.get(f"{BASE}guides/documents/999999/")
    assert (retry.status_code, retry.json()) == (409, {"error": {
        "code": "conflict", "message": "'guest-guide.md' is already indexed."}})
    assert (empty.status_code, empty.json()) == (400, {"error": {
        "code": "invalid_document", "message": "'empty.md' is empty."}})
    assert (no_collection.status_code, no_collection.json()) == (404, {"error": {
        "code": "not_found", "message": "No collection named 'nowhere'."}})
    assert (no_document.status_code, no_document.json()) == (404, {"error": {
        "code": "not_found", "message": "No document 999999 in collection 'guides'."}})
