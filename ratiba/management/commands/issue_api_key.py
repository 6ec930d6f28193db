"""python manage.py issue_api_key SCHEMA [--label L] — prints the key as the last line."""
from django.core.management.base import BaseCommand, CommandError

from ratiba.selectors import tenant_get
from ratiba.services import api_key_issue


class Command(BaseCommand):
    help = "Issue a REST API key for a business. The key is shown once; only its hash is stored."

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("--label", default="")

    def handle(self, *args, schema, label, **options):
        tenant = tenant_get(schema=schema)
        if tenant is None or schema == "public":
            raise CommandError(f"No tenant with schema {schema!r}. Create it with add_tenant first.")
        issued = api_key_issue(tenant=tenant, label=label)
        self.stderr.write(f"Issued key {issued.api_key.prefix} for {schema}. Store it now: it is not shown again.")
        self.stdout.write(issued.raw)
