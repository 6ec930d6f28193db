"""python manage.py add_tenant SCHEMA --name NAME --domain DOMAIN [--owner-email E]"""
from django.core.management.base import BaseCommand, CommandError

from ratiba.services import PlatformError, tenant_create, tenant_owner_invite


class Command(BaseCommand):
    help = ("Create a business (schema, tables and primary domain). Re-running with the same values changes nothing. "
            "With --owner-email, also the owner's login: a one-time set-password URL is printed as the last line.")

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("--name", required=True)
        parser.add_argument("--domain", required=True)
        parser.add_argument("--timezone", default="UTC")
        parser.add_argument("--currency", default="KES")
        parser.add_argument("--owner-email", default="", help="create the owner's admin login for this address")

    def handle(self, *args, schema, name, domain, timezone, currency, owner_email, **options):
        try:
            tenant, created = tenant_create(schema=schema, name=name, domain=domain, timezone_name=timezone,
                                            currency=currency)
            invite = tenant_owner_invite(tenant=tenant, email=owner_email) if owner_email else None
        except PlatformError as exc:
            raise CommandError(str(exc)) from exc
        verb = "Created" if created else "Already exists:"
        self.stdout.write(f"{verb} tenant {tenant.schema_name} ({tenant.name}) at {domain}")
        if invite is not None:
            state = "Created" if invite.created else "Found"
            self.stdout.write(f"{state} owner login {invite.username}. Send them this link to set a password "
                              "(it works once):")
            self.stdout.write(invite.set_password_url)
