"""Conversation beat tasks: one prune per tenant, each run inside that tenant's schema."""
from __future__ import annotations

from django.db import connection
from django_tenants.utils import get_public_schema_name

from ratiba.celery import app
from ratiba.tasks import tenant_fan_out, tenant_schemas


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
    """Beat: queue one prune per tenant."""
    return tenant_fan_out(prune, schemas=tenant_schemas())
