"""python manage.py seed_knowledge FILE.yaml [--tenant SCHEMA] — apply a seed file (idempotent)."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django_tenants.utils import get_tenant_model, schema_context

from knowledge.seed import MAX_SEED_BYTES, SeedError, seed_apply, seed_parse, seed_tenant_ensure
from ratiba.services import PlatformError

logger = logging.getLogger(__name__)


def _warm_embedder() -> None:
    # Loading the local model is mostly CPU-bound imports; doing it while the main thread waits on the
    # database (tenant creation, the seed transaction) takes it off the critical path.
    from knowledge.embeddings import embed_texts

    try:
        embed_texts(["warm up"])
    except Exception as exc:  # noqa: BLE001 — the real embedding call reports errors properly
        logger.info("embedding model warm-up failed: %s", exc)


class Command(BaseCommand):
    help = ("Create or update a business's knowledge from a seed file (tenant, services, hours, snippets, "
            "smoke_tests). Re-running changes nothing; a changed snippet becomes a new active version; a removed "
            "one is deactivated. Nothing is written if the file has any problem.")

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--tenant", help="Schema to seed (default: the file's tenant.schema).")
        parser.add_argument("--skip-embeddings", action="store_true",
                            help="Leave new versions pending (the embed_pending_sweep task embeds them later).")

    def handle(self, *args, file, tenant=None, skip_embeddings=False, **options):
        started = time.monotonic()
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No such file: {file}")
        if path.stat().st_size > MAX_SEED_BYTES:
            raise CommandError(f"{file} is {path.stat().st_size} bytes; the limit is {MAX_SEED_BYTES}.")
        try:
            seed = seed_parse(text=path.read_bytes(), source=str(file))
        except SeedError as exc:
            raise CommandError(str(exc)) from None
        connection.set_schema_to_public()
        schema = tenant or (seed.tenant.schema if seed.tenant else None)
        if not skip_embeddings and schema and not get_tenant_model().objects.filter(schema_name=schema).exists():
            # A new tenant: every snippet will need embedding, so load the model while the schema is built.
            threading.Thread(target=_warm_embedder, name="embedder-warm-up", daemon=True).start()
        try:
            target, created = seed_tenant_ensure(spec=seed.tenant, schema=tenant)
        except PlatformError as exc:
            raise CommandError(str(exc)) from None
        if created:
            self.stdout.write(f"Created tenant {target.schema_name} ({target.get_primary_domain().domain})")
        with schema_context(target.schema_name):
            report = seed_apply(seed=seed, embed=not skip_embeddings)
        for line in report.versions_created:
            self.stdout.write(f"  new version  {line}")
        for line in report.reactivated:
            self.stdout.write(f"  reactivated  {line}")
        for key in report.deactivated:
            self.stdout.write(f"  deactivated  {key}")
        self.stdout.write(f"Seeded {target.schema_name} from {file} in {time.monotonic() - started:.1f}s: "
                          f"{report.summary()}")
        if report.embedding_error:
            self.stderr.write(f"Embeddings left pending: {report.embedding_error}")
