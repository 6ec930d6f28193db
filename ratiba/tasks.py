"""Platform tasks."""
from django.db import connection

from ratiba.celery import app


@app.task(name="ratiba.tenant_probe")
def tenant_probe() -> dict:
    """Report the schema the task ran in and what that schema holds (a tenancy health check)."""
    from knowledge.models import Snippet

    return {"schema": connection.schema_name, "snippets": Snippet.objects.count()}
