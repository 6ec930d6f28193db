"""python manage.py add_tenant SCHEMA --name NAME --domain DOMAIN"""
from django.core.management.base import BaseCommand, CommandError

from ratiba.services import PlatformError, tenant_create


class Command(BaseCommand):
    help = "Create a business (schema, tables and primary domain). Re-running with the same values changes nothing."

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("--name", required=True)
        parser.add_argument("--domain", required=True)
        parser.add_argument("--timezone", default="UTC")
        parser.add_argument("--currency", default="KES")

    def handle(self, *args, schema, name, domain, timezone, currency, **options):
        try:
            tenant, created = tenant_create(schema=schema, name=name, domain=domain, timezone_name=timezone,
                                            currency=currency)
        except PlatformError as exc:
            raise CommandError(str(exc)) from exc
        verb = "Created" if created else "Already exists:"
        self.stdout.write(f"{verb} tenant {tenant.schema_name} ({tenant.name}) at {domain}")
