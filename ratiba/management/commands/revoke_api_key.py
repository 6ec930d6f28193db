"""python manage.py revoke_api_key (PREFIX | KEY)... | --tenant SCHEMA --all — revoke REST keys at once."""
import re

from django.core.management.base import BaseCommand, CommandError

from ratiba.models import ApiKey
from ratiba.selectors import tenant_get
from ratiba.services import KEY_PREFIX, api_key_revoke


def _prefix_of(value: str) -> str:
    # Accept the prefix an admin page shows, or a whole leaked key pasted as is.
    match = re.match(rf"^(?:{KEY_PREFIX})?([0-9a-f]{{12}})(?:_.*)?$", value.strip())
    if not match:
        raise CommandError(f"{value!r} is neither a key prefix (12 hex digits) nor a key ({KEY_PREFIX}...).")
    return match.group(1)


class Command(BaseCommand):
    help = "Revoke REST API keys by prefix (or the leaked key itself), or every key of one business."

    def add_arguments(self, parser):
        parser.add_argument("keys", nargs="*", help="key prefixes or whole keys")
        parser.add_argument("--tenant", help="with --all: the business whose keys are revoked")
        parser.add_argument("--all", action="store_true", help="revoke every active key of --tenant")

    def handle(self, *args, keys, tenant, all, **options):
        if all == bool(keys) or (all and not tenant):
            raise CommandError("Give key prefixes, or --tenant SCHEMA --all (not both).")
        if all:
            row = tenant_get(schema=tenant)
            if row is None or tenant == "public":
                raise CommandError(f"No tenant with schema {tenant!r}.")
            targets = list(ApiKey.objects.filter(tenant=row, revoked_at__isnull=True).select_related("tenant"))
        else:
            prefixes = [_prefix_of(value) for value in keys]
            found = {key.prefix: key for key in ApiKey.objects.filter(prefix__in=prefixes).select_related("tenant")}
            missing = [prefix for prefix in prefixes if prefix not in found]
            if missing:
                raise CommandError(f"No API key with prefix {', '.join(missing)}.")
            targets = [found[prefix] for prefix in prefixes]
        for api_key in targets:
            if api_key.revoked_at is not None:
                self.stdout.write(f"{api_key.prefix} ({api_key.tenant.schema_name}) was already revoked "
                                  f"on {api_key.revoked_at:%Y-%m-%d %H:%M} UTC.")
                continue
            api_key_revoke(api_key=api_key, actor="command:revoke_api_key")
            last = f"{api_key.last_used_at:%Y-%m-%d %H:%M} UTC" if api_key.last_used_at else "never"
            self.stdout.write(f"Revoked {api_key.prefix} ({api_key.tenant.schema_name}, "
                              f"{api_key.label or 'unlabelled'}; last used {last}).")
        if all:
            self.stdout.write(f"{len(targets)} key(s) of {tenant} revoked.")
