"""python manage.py issue_api_key SCHEMA [--label L] [--scope chat|full] — prints the key as the last line."""
from django.core.management.base import BaseCommand, CommandError

from ratiba.models import KeyScope
from ratiba.selectors import tenant_get
from ratiba.services import api_key_issue


class Command(BaseCommand):
    help = ("Issue a REST API key for a business. The key is shown once; only its hash is stored. "
            "A chat key can only send chat turns (safe to publish in a website widget); a full key opens every API.")

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("--label", default="")
        parser.add_argument("--scope", default=KeyScope.FULL, choices=KeyScope.values,
                            help="chat: chat turns only (website widget); full: every API (default)")

    def handle(self, *args, schema, label, scope, **options):
        tenant = tenant_get(schema=schema)
        if tenant is None or schema == "public":
            raise CommandError(f"No tenant with schema {schema!r}. Create it with add_tenant first.")
        issued = api_key_issue(tenant=tenant, label=label, scope=scope, actor="command:issue_api_key")
        self.stderr.write(f"Issued {scope} key {issued.api_key.prefix} for {schema}. Store it now: it is not shown "
                          "again.")
        self.stdout.write(issued.raw)
