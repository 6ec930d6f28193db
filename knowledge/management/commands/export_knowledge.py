"""python manage.py export_knowledge --tenant SCHEMA [FILE] — write a business's knowledge as a seed file."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django_tenants.utils import get_tenant_model, schema_context

from knowledge.seed import seed_export


class Command(BaseCommand):
    help = "Export a tenant's active knowledge in the seed_knowledge format (to FILE, or stdout)."

    def add_arguments(self, parser):
        parser.add_argument("file", nargs="?")
        parser.add_argument("--tenant", required=True)

    def handle(self, *args, file=None, tenant, **options):
        target = get_tenant_model().objects.filter(schema_name=tenant).first()
        if target is None or tenant == "public":
            raise CommandError(f"No tenant {tenant!r}.")
        with schema_context(target.schema_name):
            text = seed_export(tenant=target)
        if file:
            Path(file).write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {file}")
        else:
            self.stdout.write(text, ending="")
