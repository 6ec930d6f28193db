"""Knowledge tasks: thin wrappers that take ids and call services."""
from __future__ import annotations

import logging

from django_tenants.utils import get_tenant_model, schema_context

from knowledge.collections.services import chunks_embed
from knowledge.embeddings import EmbeddingError
from knowledge.selectors import stale_versions
from knowledge.services import snippet_version_embedding_failed, snippet_versions_embed
from ratiba.celery import app

logger = logging.getLogger(__name__)

MAX_RETRIES = 5


# Bound to the project's app, not `shared_task`: a shared task follows whichever Celery app was created
# last in the process (a second app, such as a test's sender, would silently take over `.delay`).
@app.task(name="knowledge.embed_snippet_version", bind=True, acks_late=True, max_retries=MAX_RETRIES)
def embed_snippet_version(self, version_id: int) -> int:
    """Embed one version in the sender's schema; a no-op when it is already embedded with the current model."""
    try:
        return snippet_versions_embed(version_ids=[version_id])
    except EmbeddingError as exc:
        if not exc.retryable:
            snippet_version_embedding_failed(version_id=version_id)
            logger.error("embedding failed permanently for version %s: %s", version_id, exc)
            return 0
        if self.request.is_eager:
            # Inline runs have no queue to retry on: leave it pending for embed_pending_sweep.
            logger.warning("embedding unavailable for version %s (left pending): %s", version_id, exc)
            return 0
        raise self.retry(exc=exc, countdown=min(600, 10 * 2 ** self.request.retries)) from exc


@app.task(name="knowledge.embed_pending_sweep", acks_late=True)
def embed_pending_sweep() -> dict[str, int]:
    """Embed every tenant's pending versions in batches (catches versions saved while the broker was down), and
    re-embed those and the document chunks made by another model (after the encoder changed)."""
    embedded: dict[str, int] = {}
    for schema in get_tenant_model().objects.exclude(schema_name="public").values_list("schema_name", flat=True):
        with schema_context(schema):
            try:
                ids = list(stale_versions().order_by("pk").values_list("pk", flat=True)[:1000])
                count = snippet_versions_embed(version_ids=ids) if ids else 0
                count += chunks_embed()
            except EmbeddingError as exc:
                logger.warning("pending sweep: embedding unavailable in %s: %s", schema, exc)
                continue
            if count:
                embedded[schema] = count
    return embedded
