"""python manage.py reembed (--tenant SCHEMA | --all) [--force] — rebuild snippet and chunk vectors in batches."""
from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from django_tenants.utils import get_tenant_model, schema_context

from knowledge.collections.services import chunks_embed
from knowledge.embeddings import EmbeddingError, embedding_model_name
from knowledge.services import EMBED_BATCH_SIZE, snippet_versions_embed


class Command(BaseCommand):
    help = ("Embed snippet versions that are pending, failed or embedded with another model, and document chunks "
            "embedded with another model (all of them with --force), in batches of 64 with one bulk update per "
            "batch.")

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--tenant", help="Schema to re-embed.")
        target.add_argument("--all", action="store_true", help="Every tenant.")
        parser.add_argument("--force", action="store_true", help="Re-embed even versions already current.")
        parser.add_argument("--batch-size", type=int, default=EMBED_BATCH_SIZE)

    def handle(self, *args, tenant=None, all=False, force=False, batch_size=EMBED_BATCH_SIZE, **options):
        tenants = get_tenant_model().objects.exclude(schema_name="public")
        if tenant:
            tenants = tenants.filter(schema_name=tenant)
            if not tenants.exists():
                raise CommandError(f"No tenant {tenant!r}.")
        failures = 0
        for target in tenants.order_by("schema_name"):
            started = time.monotonic()
            with schema_context(target.schema_name):
                try:
                    count = snippet_versions_embed(force=force, batch_size=max(1, batch_size))
                    chunks = chunks_embed(force=force, batch_size=max(1, batch_size))
                except EmbeddingError as exc:
                    failures += 1
                    self.stderr.write(f"{target.schema_name}: embedding failed ({exc})")
                    continue
            self.stdout.write(f"{target.schema_name}: {count} version(s) and {chunks} chunk(s) embedded with "
                              f"{embedding_model_name()} in {time.monotonic() - started:.1f}s")
        if failures:
            raise CommandError(f"Embedding failed for {failures} tenant(s); their versions stay pending.")
