"""python manage.py whatsapp_connect SCHEMA --phone-number-id ID --access-token T [--app-secret S] [--verify-token V]"""
from django.core.management.base import BaseCommand, CommandError

from channels.registry.services import ConnectError, whatsapp_number_connect
from ratiba.selectors import tenant_get


class Command(BaseCommand):
    help = ("Connect a WhatsApp Business number (Cloud API) to a business; re-running updates it. Secrets are "
            "stored encrypted (the verify token hashed) and never printed. Options not given keep their stored value.")

    def add_arguments(self, parser):
        parser.add_argument("schema")
        parser.add_argument("--phone-number-id", required=True)
        parser.add_argument("--access-token", required=True)
        parser.add_argument("--app-secret", default=None, help="signs deliveries; else WHATSAPP_APP_SECRET is used")
        parser.add_argument("--verify-token", default=None, help="for Meta's handshake; else WHATSAPP_VERIFY_TOKEN")
        parser.add_argument("--owner-number", default=None, help="the owner's own WhatsApp number, for hand-off alerts")
        parser.add_argument("--display-phone-number", default=None)

    def handle(self, *args, schema, phone_number_id, access_token, app_secret, verify_token, owner_number,
               display_phone_number, **options):
        tenant = tenant_get(schema=schema)
        if tenant is None or schema == "public":
            raise CommandError(f"No tenant with schema {schema!r}. Create it with add_tenant first.")
        try:
            connected = whatsapp_number_connect(tenant=tenant, phone_number_id=phone_number_id,
                                                access_token=access_token, app_secret=app_secret,
                                                verify_token=verify_token, owner_number=owner_number,
                                                display_phone_number=display_phone_number)
        except ConnectError as exc:
            raise CommandError(str(exc)) from exc
        number = connected.number
        secrets = ", ".join(name for name, stored in (("app secret", number.app_secret_encrypted),
                                                      ("verify token", number.verify_token_hash)) if stored)
        self.stdout.write(f"{'Connected' if connected.created else 'Updated'} WhatsApp number {number.phone_number_id} "
                          f"for {schema} (access token{', ' + secrets if secrets else ''} stored; not shown again).")
