"""python manage.py purge_tenant SCHEMA --yes — remove a business and all of its data."""
from django.core.management.base import BaseCommand, CommandError

from ratiba.selectors import tenant_get
from ratiba.services import PlatformError, tenant_delete


class Command(BaseCommand):
    help = "Delete a business completely: its schema (every table), API keys, domains and tenant row."

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("--yes", action="store_true", help="Confirm; without it nothing is deleted.")

    def handle(self, *args, schema, yes, **options):
        tenant = tenant_get(schema=schema)
        if tenant is None:
            raise CommandError(f"No tenant with schema {schema!r}.")
        if not yes:
            raise CommandError(f"This deletes every row of {schema!r}. Re-run with --yes to confirm.")
        try:
            tenant_delete(tenant=tenant)
        except PlatformError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Deleted tenant {schema} and all of its data.")
