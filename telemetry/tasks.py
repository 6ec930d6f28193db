"""Beat tasks: each fans out one task per tenant, and each tenant's task runs in that tenant's schema."""
from __future__ import annotations

from django.db import connection
from django_tenants.utils import get_public_schema_name

from ratiba.celery import app
from ratiba.tasks import tenant_fan_out, tenant_schemas


def _require_tenant_schema() -> str:
    schema = connection.schema_name
    if schema == get_public_schema_name():
        raise RuntimeError("This telemetry task must run in a tenant's schema, not the public one.")
    return schema


@app.task(name="telemetry.daily_digest")
def daily_digest() -> dict:
    """Build, keep and mail today's digest of the schema the task was sent from."""
    from telemetry.digest import daily_digest_run

    schema = _require_tenant_schema()
    digest = daily_digest_run()
    return {"schema": schema, "day": digest.day.isoformat(), "recipients": digest.recipients,
            "sent": digest.sent_at is not None}


@app.task(name="telemetry.daily_digest_all")
def daily_digest_all() -> list[str]:
    """Beat: one daily digest task per tenant."""
    return tenant_fan_out(daily_digest, schemas=tenant_schemas())


@app.task(name="telemetry.prune")
def prune() -> dict:
    """Delete this schema's telemetry older than the retention period."""
    from telemetry.digest import telemetry_prune

    schema = _require_tenant_schema()
    result = telemetry_prune()
    return {"schema": schema, "logs": result.logs, "sections": result.sections, "events": result.events}


@app.task(name="telemetry.prune_all")
def prune_all() -> list[str]:
    """Beat: prune every tenant's telemetry."""
    return tenant_fan_out(prune, schemas=tenant_schemas())


@app.task(name="telemetry.platform_snapshot")
def platform_snapshot() -> int:
    """Beat: aggregate each tenant's health, inside its schema, into the public overview table."""
    from telemetry.platform import platform_snapshot_take

    return len(platform_snapshot_take())
