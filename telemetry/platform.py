"""The platform overview: each tenant's health aggregated inside its own schema, stored in the public one."""
from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal

from django.utils import timezone
from django_tenants.utils import get_public_schema_name, get_tenant_model, schema_context

from telemetry.health import ALERT, WARN

logger = logging.getLogger(__name__)


def _tenant_figures(*, now: dt.datetime) -> dict:
    """Figures of the current schema (runs inside schema_context)."""
    from telemetry.rollups import rollups_warm
    from telemetry.selectors import retrieval_health

    rollups_warm(now=now)
    week = retrieval_health(days=7, now=now)
    today = week.daily[-1].figures if week.daily else None
    return {
        "turns": week.totals.turns,
        "turns_today": today.turns if today else 0,
        "refusals": week.totals.refusals,
        "refusal_rate": week.totals.refusal_rate,
        "empty_rate": week.totals.empty_rate,
        "cost_usd": Decimal(str(week.totals.cost_usd)),
        "state": week.state,
        "alerts": [{"metric": f.metric, "label": f.label, "value": f.value, "state": f.state}
                   for f in week.figures if f.state in (WARN, ALERT)],
        "open_gap_groups": week.open_gap_groups,
        "current_mode": week.mode.current,
    }


def platform_snapshot_take(*, now: dt.datetime | None = None) -> list:
    """Write today's TenantHealthSnapshot for every tenant; a tenant that fails is logged and skipped."""
    from ratiba.models import TenantHealthSnapshot

    now = now or timezone.now()
    snapshots = []
    with schema_context(get_public_schema_name()):
        tenants = list(get_tenant_model().objects.exclude(schema_name=get_public_schema_name()).order_by("pk"))
    for tenant in tenants:
        try:
            with schema_context(tenant.schema_name):
                figures = _tenant_figures(now=now)
        except Exception:  # noqa: BLE001 - one broken tenant must not hide the others
            logger.exception("health snapshot failed for schema %s", tenant.schema_name)
            continue
        with schema_context(get_public_schema_name()):
            snapshot, _ = TenantHealthSnapshot.objects.update_or_create(
                tenant=tenant, day=now.date(), defaults={"taken_at": now, "window_days": 7, **figures})
        snapshots.append(snapshot)
    return snapshots


def platform_overview() -> list:
    """The latest snapshot per tenant (public schema only), tenants without one last."""
    from ratiba.models import Tenant, TenantHealthSnapshot

    latest = {snapshot.tenant_id: snapshot for snapshot in
              TenantHealthSnapshot.objects.order_by("tenant_id", "-day").distinct("tenant_id")}
    rows = []
    for tenant in Tenant.objects.exclude(schema_name=get_public_schema_name()).order_by("name"):
        rows.append((tenant, latest.get(tenant.pk)))
    return rows
