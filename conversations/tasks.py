"""Conversation beat tasks: one prune per tenant, each run inside that tenant's schema."""
from __future__ import annotations

import logging

from django.db import connection
from django_tenants.utils import get_public_schema_name, get_tenant_model, schema_context

from ratiba.celery import app

logger = logging.getLogger(__name__)


@app.task(name="conversations.prune", acks_late=True)
def prune() -> dict:
    """Delete this schema's conversations older than CONVERSATION_RETENTION_DAYS (idempotent)."""
    from conversations.retention import conversations_prune

    schema = connection.schema_name
    if schema == get_public_schema_name():
        raise RuntimeError("conversations.prune must run in a tenant's schema, not the public one.")
    result = conversations_prune()
    return {"schema": schema, "sessions": result.sessions, "turns": result.turns, "handoffs": result.handoffs}


@app.task(name="conversations.prune_all")
def prune_all() -> list[str]:
    """Beat: queue one prune per tenant (tenant-schemas-celery stamps the schema current at send time)."""
    with schema_context(get_public_schema_name()):
        schemas = list(get_tenant_model().objects.exclude(schema_name=get_public_schema_name())
                       .order_by("schema_name").values_list("schema_name", flat=True))
    for schema in schemas:
        with schema_context(schema):
            try:
                prune.delay()
            except Exception:  # noqa: BLE001 - one tenant's failure must not stop the others
                logger.exception("conversation prune could not be queued for schema %s", schema)
    return schemas
