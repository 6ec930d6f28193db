"""Fill a tenant with synthetic telemetry so the dashboards have something to show (demos, load checks)."""
from django.core.management.base import BaseCommand, CommandError
from django_tenants.utils import schema_context

from ratiba.models import Tenant


class Command(BaseCommand):
    help = "Write synthetic retrieval logs and events into a tenant (deterministic for a seed)."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="schema name")
        parser.add_argument("--turns", type=int, default=500)
        parser.add_argument("--days", type=int, default=30)
        parser.add_argument("--gap-events", type=int, default=60)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, tenant, turns, days, gap_events, seed, **options):
        if not Tenant.objects.filter(schema_name=tenant).exclude(schema_name="public").exists():
            raise CommandError(f"No tenant with schema {tenant!r}.")
        if turns < 0 or days < 1:
            raise CommandError("--turns must be >= 0 and --days >= 1.")
        from telemetry.digest import gap_questions_group
        from telemetry.synthetic import synthetic_telemetry_write

        with schema_context(tenant):
            result = synthetic_telemetry_write(turns=turns, days=days, seed=seed, gap_events=gap_events)
            grouping = gap_questions_group()
        self.stdout.write(f"{result.logs} turns, {result.sections} section rows, {result.events} events written; "
                          f"{len(grouping.created)} gap group(s) formed in {tenant}")
