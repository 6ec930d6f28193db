"""The collection admin: create through the service, multi-file upload with per-file answers, progress, retry."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from collection_docs import FAQ_HTML, GUIDE_MD, price_list_pdf
from knowledge.collections.models import Collection, Document
from knowledge.collections.services import collection_create


@pytest.fixture
def owner_client(tenant, client_for):
    user = get_user_model().objects.create_superuser(username="collections-owner", password="pw-owner-1", email="")
    client = client_for(tenant)
    client.force_login(user)
    return client


def test_the_owner_creates_a_collection_in_the_admin(owner_client):
    response = owner_client.post(reverse("admin:knowledge_collection_add"),
                                 {"name": "price-lists", "scope": "session", "description": "Our PDFs"})
    collection = Collection.objects.get()
    assert response.status_code == 302
    assert (collection.name, collection.scope, collection.description) == ("price-lists", "session", "Our PDFs")
    page = owner_client.get(reverse("admin:knowledge_collection_change", args=[collection.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Drop documents here" in html and 'type="file" name="files" multiple' in html
    assert "No documents yet." in html


def test_several_files_upload_at_once_with_an_answer_per_file(owner_client, django_capture_on_commit_callbacks):
    collection = collection_create(name="guides")
    url = reverse("admin:knowledge_collection_upload", args=[collection.pk])
    files = [SimpleUploadedFile("guest-guide.md", GUIDE_MD, "text/markdown"),
             SimpleUploadedFile("delivery.html", FAQ_HTML, "text/html"),
             SimpleUploadedFile("broken.pdf", b"%PDF-1.7 garbage", "application/pdf")]
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(url, {"files": files}, HTTP_ACCEPT="application/json")
    results = response.json()["results"]
    assert response.status_code == 200
    assert [(entry["filename"], entry["ok"]) for entry in results] == [
        ("guest-guide.md", True), ("delivery.html", True), ("broken.pdf", False)]
    assert results[2]["error"].startswith("'broken.pdf' could not be read as a PDF; the file is damaged")

    progress = owner_client.get(reverse("admin:knowledge_collection_documents", args=[collection.pk])).json()
    assert progress["busy"] is False
    assert [(row["title"], row["status"], row["percent"], row["chunks_total"]) for row in progress["documents"]] == [
        ("Aria Spa delivery FAQ", "done", 100, 3), ("Aria Spa Guest Guide", "done", 100, 5)]
    page = owner_client.get(reverse("admin:knowledge_collection_change", args=[collection.pk])).content.decode()
    assert "Aria Spa Guest Guide" in page and "5/5 chunks" in page and 'style="width:100%"' in page


def test_without_javascript_the_upload_form_redirects_with_messages(owner_client, django_capture_on_commit_callbacks):
    collection = collection_create(name="guides")
    url = reverse("admin:knowledge_collection_upload", args=[collection.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(url, {"files": [SimpleUploadedFile("guest-guide.md", GUIDE_MD)]}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("admin:knowledge_collection_change", args=[collection.pk])
    assert [str(message) for message in response.context["messages"]] == ["“guest-guide.md” uploaded."]


def test_a_failed_document_shows_its_error_and_can_be_retried(owner_client, failing_embedder, monkeypatch,
                                                              django_capture_on_commit_callbacks):
    from knowledge import embeddings

    real = embeddings.get_embedder()
    collection = collection_create(name="prices")
    failing_embedder(retryable=False)
    with django_capture_on_commit_callbacks(execute=True):
        owner_client.post(reverse("admin:knowledge_collection_upload", args=[collection.pk]),
                          {"files": [SimpleUploadedFile("prices.pdf", price_list_pdf(pages=2))]},
                          HTTP_ACCEPT="application/json")
    document = Document.objects.get()
    page = owner_client.get(reverse("admin:knowledge_collection_change", args=[collection.pk])).content.decode()
    assert "Embedding failed: provider said no" in page and ">Retry</button>" in page

    monkeypatch.setattr(embeddings, "get_embedder", lambda: real)
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(reverse("admin:knowledge_collection_retry", args=[collection.pk, document.pk]),
                                     follow=True)
    document.refresh_from_db()
    assert (document.status, document.error, document.chunks_done) == ("done", "", 2)
    assert [str(message) for message in response.context["messages"]] == [
        "“prices.pdf” is queued for indexing again."]


def test_the_document_list_shows_progress_and_offers_a_retry_action(owner_client, ingest, failing_embedder):
    collection = collection_create(name="guides")
    ingest(collection, "guest-guide.md", GUIDE_MD)
    failing_embedder(retryable=False)
    ingest(collection, "delivery.html", FAQ_HTML)
    changelist = owner_client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert changelist.count('class="kc-progress"') == 2
    assert "Retry indexing of the selected documents" in changelist
    detail = owner_client.get(reverse("admin:knowledge_document_change",
                                      args=[Document.objects.get(filename="guest-guide.md").pk])).content.decode()
    assert "Aria Spa Guest Guide &gt; Arrival &gt; Parking" in detail
