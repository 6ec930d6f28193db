"""Collection and document writes: create/delete, upload (idempotent by hash), ingest with an atomic swap."""
from __future__ import annotations

import hashlib
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from knowledge.audit import audit_record, field_changes
from knowledge.collections.chunking import chunk_document, embedding_text
from knowledge.collections.errors import CollectionConflict, CollectionsError, DocumentTooLarge, InvalidDocument
from knowledge.collections.models import Chunk, Collection, CollectionScope, Document, DocumentFormat, DocumentStatus
from knowledge.collections.parsers import check_pdf, decode_text, detect_format, parse_document, title_from_filename
from knowledge.embeddings import EmbeddingError, embed_texts, embedding_model_name
from knowledge.models import AuditAction, AuditSubject

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
EMBED_BATCH = 32
INSERT_BATCH = 500


def max_document_bytes() -> int:
    return settings.DOCUMENT_MAX_BYTES


def max_chunks() -> int:
    return getattr(settings, "DOCUMENT_MAX_CHUNKS", 20_000)


# ----------------------------------------------------------------------------- collections


def collection_create(*, name: str, scope: str = CollectionScope.TENANT, description: str = "", user=None,
                      actor: str | None = None) -> Collection:
    """Create a named collection; the name is unique in the tenant."""
    name = (name or "").strip()
    errors = {}
    if not NAME_RE.match(name):
        errors["name"] = ["Use 1-100 letters, digits, hyphens or underscores, starting with a letter or digit."]
    if scope not in CollectionScope.values:
        errors["scope"] = [f"Must be one of: {', '.join(CollectionScope.values)}."]
    if errors:
        raise CollectionsError("Some fields are invalid.", fields=errors)
    try:
        with transaction.atomic():
            collection = Collection.objects.create(name=name, scope=scope, description=description or "")
            audit_record(subject=AuditSubject.COLLECTION, action=AuditAction.CREATED, key=name, user=user,
                         actor=actor, detail={"scope": scope, "description": description or ""})
            return collection
    except IntegrityError as exc:
        raise CollectionConflict(f"A collection named {name!r} already exists.",
                                 fields={"name": ["Already exists."]}) from exc


def collection_update(*, collection: Collection, scope: str, description: str, user=None,
                      actor: str | None = None) -> Collection:
    """Change a collection's scope or description (its name is what sessions and clients refer to: fixed)."""
    if scope not in CollectionScope.values:
        raise CollectionsError("Some fields are invalid.", fields={"scope": [
            f"Must be one of: {', '.join(CollectionScope.values)}."]})
    with transaction.atomic():
        row = Collection.objects.select_for_update().get(pk=collection.pk)
        after = {"scope": scope, "description": description or ""}
        detail = field_changes(before={"scope": row.scope, "description": row.description}, after=after)
        if detail:
            Collection.objects.filter(pk=row.pk).update(**after, updated_at=timezone.now())
            audit_record(subject=AuditSubject.COLLECTION, action=AuditAction.CHANGED, key=row.name, user=user,
                         actor=actor, detail=detail)
        row.refresh_from_db()
    return row


def collection_delete(*, collection: Collection, user=None, actor: str | None = None) -> None:
    """Delete a collection with its documents and chunks (search stops seeing them at commit)."""
    with transaction.atomic():
        documents = Document.objects.filter(collection=collection).count()
        collection.delete()
        audit_record(subject=AuditSubject.COLLECTION, action=AuditAction.DELETED, key=collection.name, user=user,
                     actor=actor, detail={"documents": documents})


# ----------------------------------------------------------------------------- upload


@dataclass(frozen=True)
class UploadResult:
    """What an upload did: `created` a new document, `changed` its content, `queued` an ingestion."""

    document: Document
    created: bool
    changed: bool
    queued: bool


def _clean_filename(filename: str) -> str:
    name = PurePosixPath((filename or "").replace("\\", "/")).name.strip()
    name = re.sub(r"[\x00-\x1f]", "", name)
    if not name:
        raise CollectionsError("The uploaded file has no name.", fields={"file": ["A file name is required."]})
    return name[-255:]


def document_check(*, filename: str, data: bytes, content_type: str = "") -> str:
    """Reject what can be rejected without a full parse (size, type, emptiness, damage); return the format."""
    if len(data) > max_document_bytes():
        raise DocumentTooLarge(f"{filename!r} is {len(data):,} bytes; the limit is {max_document_bytes():,} bytes.")
    if not data.strip():
        raise InvalidDocument(f"{filename!r} is empty.")
    fmt = detect_format(filename=filename, content_type=content_type, head=data[:1024])
    if fmt == DocumentFormat.PDF:
        check_pdf(data, filename=filename)
    else:
        decode_text(data, filename=filename)
    return fmt


def _queue_ingest(document_id: int) -> None:
    from knowledge.collections.tasks import ingest_document

    def send():
        try:
            ingest_document.delay(document_id)
        except Exception as exc:  # noqa: BLE001 - a broker outage must not lose the document silently
            if settings.CELERY_TASK_ALWAYS_EAGER:
                raise
            log.exception("could not queue ingestion of document %s", document_id)
            Document.objects.filter(pk=document_id).update(
                status=DocumentStatus.FAILED, error=f"The ingestion queue is unavailable ({exc}); retry later.",
                updated_at=timezone.now())

    transaction.on_commit(send)


def document_upload(*, collection: Collection, filename: str, data: bytes, content_type: str = "", user=None,
                    actor: str | None = None) -> UploadResult:
    """Store an uploaded file and queue its ingestion; the same bytes again change nothing.

    A file whose name already exists in the collection with different bytes replaces that document's
    content; its old chunks stay searchable until the new ones are embedded and swapped in.
    """
    filename = _clean_filename(filename)
    fmt = document_check(filename=filename, data=data, content_type=content_type)
    digest = hashlib.sha256(data).hexdigest()
    with transaction.atomic():
        # Uploads into one collection are serialised, so two identical uploads cannot both create.
        Collection.objects.select_for_update().filter(pk=collection.pk).first()
        same = (Document.objects.defer("content").filter(collection=collection, sha256=digest)
                .order_by("id").first())
        if same is not None:
            if same.status == DocumentStatus.FAILED:
                # Uploading a failed file again is the natural way to retry it.
                _mark_queued(same)
                _queue_ingest(same.pk)
                return UploadResult(document=same, created=False, changed=False, queued=True)
            return UploadResult(document=same, created=False, changed=False, queued=False)
        existing = Document.objects.defer("content").filter(collection=collection, filename=filename).first()
        if existing is not None:
            existing.content = data
            existing.sha256 = digest
            existing.size = len(data)
            existing.format = fmt
            existing.content_type = (content_type or "")[:100]
            existing.save(update_fields=["content", "sha256", "size", "format", "content_type", "updated_at"])
            audit_record(subject=AuditSubject.DOCUMENT, action=AuditAction.CHANGED,
                         key=f"{collection.name}/{filename}", user=user, actor=actor,
                         detail={"size": len(data), "sha256": digest[:12]})
            _mark_queued(existing)
            _queue_ingest(existing.pk)
            return UploadResult(document=existing, created=False, changed=True, queued=True)
        document = Document.objects.create(
            collection=collection, filename=filename, title=title_from_filename(filename)[:300],
            content_type=(content_type or "")[:100], format=fmt, size=len(data), sha256=digest, content=data,
        )
        audit_record(subject=AuditSubject.DOCUMENT, action=AuditAction.CREATED, key=f"{collection.name}/{filename}",
                     user=user, actor=actor, detail={"size": len(data), "sha256": digest[:12]})
        _queue_ingest(document.pk)
        return UploadResult(document=document, created=True, changed=True, queued=True)


def _mark_queued(document: Document) -> None:
    document.status = DocumentStatus.QUEUED
    document.error = ""
    document.chunks_done = 0
    document.chunks_total = 0
    document.save(update_fields=["status", "error", "chunks_done", "chunks_total", "updated_at"])


def document_retry(*, document: Document) -> Document:
    """Queue a failed (or stuck) document for ingestion again."""
    if document.status == DocumentStatus.DONE and document.indexed_sha256 == document.sha256:
        raise CollectionConflict(f"{document.filename!r} is already indexed.")
    with transaction.atomic():
        _mark_queued(document)
        _queue_ingest(document.pk)
    return document


def document_delete(*, document: Document, user=None, actor: str | None = None) -> None:
    """Delete a document and its chunks (search stops seeing them at commit)."""
    with transaction.atomic():
        key = f"{document.collection.name}/{document.filename}"
        document.delete()
        audit_record(subject=AuditSubject.DOCUMENT, action=AuditAction.DELETED, key=key, user=user, actor=actor)


# ----------------------------------------------------------------------------- ingestion


@dataclass(frozen=True)
class IngestOutcome:
    outcome: str  # "indexed" | "unchanged" | "failed" | "superseded" | "missing"
    document_id: int
    chunks: int = 0
    error: str = ""


def _lock_key(document_id: int) -> int:
    digest = hashlib.blake2b(f"{connection.schema_name}:document:{document_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def _document_lock(document_id: int):
    """One ingestion per document at a time, across workers (a session advisory lock; a crash releases it)."""
    key = _lock_key(document_id)
    with connection.cursor() as cursor:
        cursor.execute("select pg_advisory_lock(%s)", [key])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("select pg_advisory_unlock(%s)", [key])


def _discard_build(document_id: int) -> None:
    Chunk.objects.filter(document_id=document_id, is_live=False).delete()


def _fail(document_id: int, sha256: str, message: str) -> IngestOutcome:
    with transaction.atomic():
        _discard_build(document_id)
        # Only the upload this run was building is marked; a newer upload has its own run queued.
        Document.objects.filter(pk=document_id, sha256=sha256).update(
            status=DocumentStatus.FAILED, error=message[:2000], chunks_done=0, updated_at=timezone.now())
    log.warning("document %s failed to ingest: %s", document_id, message)
    return IngestOutcome(outcome="failed", document_id=document_id, error=message)


def _still_current(document_id: int, sha256: str) -> bool:
    return Document.objects.filter(pk=document_id, sha256=sha256).exists()


def document_ingest(*, document_id: int, final_attempt: bool = True) -> IngestOutcome:
    """Parse, chunk and embed a document into a new generation, then swap it live in one transaction.

    Idempotent: a document already indexed from its current bytes is left alone. Until the swap,
    search keeps seeing the previous generation; a failure discards the new one and keeps the old.
    A retryable embedding error is re-raised (for the task to retry) unless this is the final attempt.
    """
    with _document_lock(document_id):
        document = Document.objects.filter(pk=document_id).first()
        if document is None:
            return IngestOutcome(outcome="missing", document_id=document_id)
        if document.status == DocumentStatus.DONE and document.indexed_sha256 == document.sha256:
            return IngestOutcome(outcome="unchanged", document_id=document_id, chunks=document.chunks_total)
        sha256, data = document.sha256, bytes(document.content)
        generation = document.live_generation + 1
        with transaction.atomic():
            _discard_build(document_id)  # leftovers of a run that died mid-way
            Document.objects.filter(pk=document_id).update(
                status=DocumentStatus.PROCESSING, error="", chunks_done=0, chunks_total=0,
                attempts=F("attempts") + 1, updated_at=timezone.now())

        try:
            parsed = parse_document(data, filename=document.filename, format=document.format)
            drafts = chunk_document(parsed)
        except InvalidDocument as exc:
            return _fail(document_id, sha256, exc.message)
        except Exception as exc:  # noqa: BLE001 - a parser bug on odd input must still leave a clear record
            log.exception("parser crashed on document %s", document_id)
            return _fail(document_id, sha256, f"{document.filename!r} could not be read "
                                              f"({exc.__class__.__name__}: {exc}).")
        if not drafts:
            return _fail(document_id, sha256, f"{document.filename!r} contains no text to index.")
        if len(drafts) > max_chunks():
            return _fail(document_id, sha256, f"{document.filename!r} would make {len(drafts):,} chunks; "
                                              f"the limit is {max_chunks():,}. Split it into smaller files.")

        try:
            with transaction.atomic():
                Chunk.objects.bulk_create(
                    [Chunk(document_id=document_id, collection_id=document.collection_id, generation=generation,
                           is_live=False, ordinal=draft.ordinal, heading_path=draft.heading_path, page=draft.page,
                           text=draft.text, token_count=draft.token_count) for draft in drafts],
                    batch_size=INSERT_BATCH)
                Document.objects.filter(pk=document_id).update(chunks_total=len(drafts), page_count=parsed.page_count,
                                                               updated_at=timezone.now())
        except IntegrityError:  # the document was deleted under us
            return IngestOutcome(outcome="missing", document_id=document_id)

        chunks = list(Chunk.objects.filter(document_id=document_id, generation=generation)
                      .order_by("ordinal").only("id", "heading_path", "text"))
        for start in range(0, len(chunks), EMBED_BATCH):
            if not _still_current(document_id, sha256):
                _discard_build(document_id)
                return IngestOutcome(outcome="superseded", document_id=document_id)
            batch = chunks[start:start + EMBED_BATCH]
            texts = [embedding_text(title=parsed.title, heading_path=chunk.heading_path, text=chunk.text)
                     for chunk in batch]
            try:
                vectors = embed_texts(texts)
            except EmbeddingError as exc:
                if exc.retryable and not final_attempt:
                    _discard_build(document_id)
                    Document.objects.filter(pk=document_id, sha256=sha256).update(
                        status=DocumentStatus.QUEUED, error=f"Embedding unavailable, retrying: {exc}",
                        chunks_done=0, updated_at=timezone.now())
                    raise
                return _fail(document_id, sha256, f"Embedding failed: {exc}")
            with transaction.atomic():
                _chunks_store_vectors(batch, vectors)
                Document.objects.filter(pk=document_id).update(chunks_done=start + len(batch),
                                                               updated_at=timezone.now())

        with transaction.atomic():
            current = Document.objects.select_for_update().filter(pk=document_id).only("id", "sha256").first()
            if current is None:
                return IngestOutcome(outcome="missing", document_id=document_id)
            if current.sha256 != sha256:
                _discard_build(document_id)
                return IngestOutcome(outcome="superseded", document_id=document_id)
            # The swap: readers see either every old chunk or every new one, never neither.
            Chunk.objects.filter(document_id=document_id, is_live=True).delete()
            Chunk.objects.filter(document_id=document_id, generation=generation).update(is_live=True)
            Document.objects.filter(pk=document_id).update(
                status=DocumentStatus.DONE, error="", title=parsed.title[:300], live_generation=generation,
                indexed_sha256=sha256, chunks_total=len(chunks), chunks_done=len(chunks),
                indexed_at=timezone.now(), updated_at=timezone.now())
        return IngestOutcome(outcome="indexed", document_id=document_id, chunks=len(chunks))


def chunks_embed(*, force: bool = False, batch_size: int = EMBED_BATCH) -> int:
    """Re-embed the schema's indexed chunks made by another model (all of them if `force`), in batches.
    Returns how many were embedded. Raises EmbeddingError."""
    model = embedding_model_name()
    queryset = Chunk.objects.filter(embedding__isnull=False)
    if not force:
        queryset = queryset.exclude(embedding_model=model)
    ids = list(queryset.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), batch_size):
        batch = list(Chunk.objects.filter(pk__in=ids[start:start + batch_size]).select_related("document")
                     .only("id", "heading_path", "text", "document__title").order_by("pk"))
        texts = [embedding_text(title=chunk.document.title, heading_path=chunk.heading_path, text=chunk.text)
                 for chunk in batch]
        _chunks_store_vectors(batch, embed_texts(texts))
    return len(ids)


def _chunks_store_vectors(chunks: list[Chunk], vectors: list[list[float]]) -> None:
    """Save each chunk's vector with the name of the model that made it (one bulk update)."""
    model = embedding_model_name()
    for chunk, vector in zip(chunks, vectors, strict=True):
        chunk.embedding = vector
        chunk.embedding_model = model
    Chunk.objects.bulk_update(chunks, ["embedding", "embedding_model"])
