"""python manage.py knowledge_smoke_tests --tenant SCHEMA — the release check: stored queries must retrieve their keys."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django_tenants.utils import get_tenant_model, schema_context

from knowledge.selectors import SMOKE_TEST_TOP_K, smoke_tests_run


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class Command(BaseCommand):
    help = (f"Run the tenant's stored smoke tests through retrieval (channel chat); a test passes when one of its "
            f"expected keys is in the top {SMOKE_TEST_TOP_K} and the bot would answer (a refusal fails it). "
            "Exits non-zero if any fails.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--channel", default="chat", choices=["chat", "whatsapp", "email"])

    def handle(self, *args, tenant, channel="chat", **options):
        if tenant == "public" or not get_tenant_model().objects.filter(schema_name=tenant).exists():
            raise CommandError(f"No tenant {tenant!r}.")
        with schema_context(tenant):
            results = smoke_tests_run(channel=channel)
        if not results:
            self.stdout.write(f"{tenant}: no smoke tests stored.")
            return
        header = f"{'result':6}  {'rank':4}  {'query':50}  {'expected':32}  top {SMOKE_TEST_TOP_K}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for result in results:
            status = "PASS" if result.passed else "FAIL"
            rank = str(result.rank) if result.rank else "-"
            top = ", ".join(result.top_keys) or "(nothing)"
            if result.refused:
                top = f"{top}; refuses ({result.refusal_reason})"
            self.stdout.write(f"{status:6}  {rank:4}  {_cut(result.query, 50):50}  "
                              f"{_cut(', '.join(result.expected_keys), 32):32}  {top}")
        failed = sum(not result.passed for result in results)
        self.stdout.write(f"{len(results) - failed}/{len(results)} passed (mode {results[0].mode}).")
        if failed:
            raise CommandError(f"{failed} smoke test(s) failed.")
