"""Tenant-aware Celery app: a task runs in the schema it was sent from."""
import os

from tenant_schemas_celery.app import CeleryApp

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")

app = CeleryApp("ratiba")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
