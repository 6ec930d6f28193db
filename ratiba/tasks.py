"""Platform tasks, and the fan-out every beat task uses to queue one task per business."""
import logging

from django.db import connection
from django_tenants.utils import get_public_schema_name, get_tenant_model, schema_context

from ratiba.celery import app

logger = logging.getLogger(__name__)


def tenant_schemas(**filters) -> list[str]:
    """The businesses' schema names (not the public one), sorted; `filters` narrow the tenants."""
    with schema_context(get_public_schema_name()):
        return list(get_tenant_model().objects.exclude(schema_name=get_public_schema_name()).filter(**filters)
                    .distinct().order_by("schema_name").values_list("schema_name", flat=True))


def tenant_fan_out(task, *, schemas: list[str]) -> list[str]:
    """Queue `task` once per schema; returns the schemas."""
    for schema in schemas:
        # tenant-schemas-celery stamps the schema current at send time on the task.
        with schema_context(schema):
            try:
                task.delay()
            except Exception:  # noqa: BLE001 - one tenant's failure must not stop the others
                logger.exception("task %s could not be queued for schema %s", task.name, schema)
    return schemas


@app.task(name="ratiba.tenant_probe")
def tenant_probe() -> dict:
    """Report the schema the task ran in and what that schema holds (a tenancy health check)."""
    from knowledge.models import Snippet

    return {"schema": connection.schema_name, "snippets": Snippet.objects.count()}
