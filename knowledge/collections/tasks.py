"""Celery entry point for document ingestion (runs in the schema it was sent from)."""
from __future__ import annotations

from celery import shared_task

from knowledge.collections.services import document_ingest
from knowledge.embeddings import EmbeddingError

MAX_RETRIES = 3


@shared_task(name="knowledge.collections.ingest_document", bind=True, acks_late=True,
             reject_on_worker_lost=True, max_retries=MAX_RETRIES)
def ingest_document(self, document_id: int) -> dict:
    """Ingest one document; safe to run twice (a redelivered message finds it indexed and stops)."""
    # Run inline (no broker) there is no worker to retry later: record the failure for a manual retry.
    final = bool(self.request.is_eager) or self.request.retries >= self.max_retries
    try:
        outcome = document_ingest(document_id=document_id, final_attempt=final)
    except EmbeddingError as exc:
        # Only retryable errors reach here (the service records terminal ones as a failed document).
        raise self.retry(exc=exc, countdown=5 * 2 ** self.request.retries)
    return {"outcome": outcome.outcome, "document_id": outcome.document_id, "chunks": outcome.chunks,
            "error": outcome.error}
