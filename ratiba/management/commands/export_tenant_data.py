"""python manage.py export_tenant_data SCHEMA OUTFILE — a business's data as JSON (its right to take it away)."""
import json

from django.core.management.base import BaseCommand, CommandError

from ratiba.selectors import tenant_get
from ratiba.services import tenant_export


class Command(BaseCommand):
    help = "Export every row of a business's schema (without embedding vectors, which can be rebuilt) as JSON."

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("outfile")

    def handle(self, *args, schema, outfile, **options):
        tenant = tenant_get(schema=schema)
        if tenant is None or schema == "public":
            raise CommandError(f"No tenant with schema {schema!r}.")
        data = tenant_export(tenant=tenant)
        with open(outfile, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=1, default=str)
        counts = ", ".join(f"{label}: {len(rows)}" for label, rows in data["tables"].items() if rows)
        self.stdout.write(f"Exported {schema} to {outfile} ({counts or 'no rows'})")
