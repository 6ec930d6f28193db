"""Shared benchmark plumbing: Django set-up on a bench database, eval loaders, seeding, metrics, tables."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = Path(os.environ.get("RATIBA_EVAL_DIR", ROOT.parent / "shared" / "eval"))
RESULTS_DIR = ROOT / "bench" / "results"
# The bench creates, drops and reloads tenants freely: it never runs on the dev database.
DEFAULT_BENCH_DB = "ratiba_bench_retrieval"
FORBIDDEN_DBS = {"ratiba"}


def setup_django(*, default_db: str = DEFAULT_BENCH_DB, migrate: bool = True, fresh: bool = False) -> None:
    """Point Django at a bench database (RATIBA_DB_NAME, default ratiba_bench_retrieval), set up and migrate it.

    `fresh` drops and recreates that database first (after migrations were rewritten, say).
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("RATIBA_DB_NAME", default_db)
    name = os.environ["RATIBA_DB_NAME"]
    if name in FORBIDDEN_DBS or name.startswith("test_") or os.environ.get("DATABASE_URL"):
        sys.exit(f"refusing to benchmark on database {name!r} (or a DATABASE_URL server): "
                 "use an embedded bench database of your own (RATIBA_DB_NAME=bench_...)")
    if fresh:
        _drop_embedded_database(name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")
    # Embedding tasks must run inline so a seeded tenant is fully embedded before it is measured.
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    import django

    django.setup()
    import logging

    import structlog

    logging.getLogger().setLevel(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if migrate:
        from django.core.management import call_command

        call_command("migrate_schemas", interactive=False, verbosity=0)


def _drop_embedded_database(name: str) -> None:
    import psycopg

    from ratiba.embedded_db import ensure_server

    server = ensure_server()
    with psycopg.connect(host=server.socket_dir, port=server.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ----------------------------------------------------------------------------- eval data
@dataclass(frozen=True)
class Query:
    """One evaluation question; `relevant` empty means it should be refused (unanswerable)."""

    text: str
    relevant: frozenset[str]
    language: str = "en"
    kind: str = ""  # dev tenant: direct|paraphrase|typo|swahili|multi; public: answer_type
    intent: str = "other"
    unanswerable_kind: str = ""  # "in_domain" | "generic" for unanswerables

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


@dataclass
class TenantData:
    """A tenant to seed and the questions asked of it."""

    schema: str
    name: str
    domain: str
    dataset: str  # "dev" | "public"
    family: str = ""
    seed_yaml: Path | None = None  # a seed_knowledge file, as is
    snippets: list[dict] = field(default_factory=list)  # public JSON snippets (key already mapped)
    queries: list[Query] = field(default_factory=list)
    key_to_label: dict[str, str] = field(default_factory=dict)  # product key -> label id in the eval file
    fold: int | None = None  # a written business's fold when its eval file names one (bench/unseen_data.py)


# Kinds with no retrieval label: answered from structured facts, skipped as trivial, or
# prompt-injection probes. They are neither scored for recall nor counted as unanswerable.
UNSCORED_DEV_KINDS = {"structured", "trivial", "injection"}


def load_dev_tenant() -> tuple[TenantData, list[dict]]:
    """The development tenant (aria_spa.yaml) with its labelled and unanswerable questions."""
    import yaml

    seed_path = EVAL_DIR / "aria_spa.yaml"
    seed = yaml.safe_load(seed_path.read_text())
    evaluation = yaml.safe_load((EVAL_DIR / "aria_spa.eval.yaml").read_text())
    block = seed["tenant"]
    tenant = TenantData(schema=block["schema"], name=block["name"], domain=block["domain"], dataset="dev",
                        family="aria_spa", seed_yaml=seed_path)
    skipped = []
    for item in evaluation["queries"]:
        if item.get("kind") in UNSCORED_DEV_KINDS or not item.get("relevant"):
            skipped.append(item)
            continue
        tenant.queries.append(Query(text=item["text"], relevant=frozenset(item["relevant"]),
                                    language=item.get("language", "en"), kind=item.get("kind", ""),
                                    intent=item.get("intent", "other")))
    for item in evaluation["unanswerable"]:
        tenant.queries.append(Query(text=item["text"], relevant=frozenset(), language=item.get("language", "en"),
                                    kind="unanswerable", unanswerable_kind="in_domain"))
    return tenant, skipped


def public_schema_name(tenant_id: str) -> str:
    return "pub_" + re.sub(r"[^a-z0-9_]", "_", tenant_id.lower())[:58]


def load_public_tenants(tier: str = "core") -> list[TenantData]:
    """Every tenant of public/tenants/<tier>/*.json, with neutral product keys (kb001...)."""
    tenants = []
    for path in sorted((EVAL_DIR / "public" / "tenants" / tier).glob("*.json")):
        raw = json.loads(path.read_text())
        schema = public_schema_name(raw["tenant_id"])
        # Neutral keys: the generated search document weights the key like the title, and the
        # source ids ("hotel-3-0", "sfaq-12") would add words no owner would have written.
        id_to_key = {snippet["id"]: f"kb{index:03d}" for index, snippet in enumerate(raw["snippets"], start=1)}
        tenant = TenantData(schema=schema, name=raw["tenant"][:200], domain=f"{schema.replace('_', '-')}.bench.localhost",
                            dataset="public", family="stackfaq" if raw["tenant_id"].startswith("stackfaq") else "dstc",
                            key_to_label={key: sid for sid, key in id_to_key.items()})
        for snippet in raw["snippets"]:
            tenant.snippets.append({"key": id_to_key[snippet["id"]], "title": snippet["title"][:200],
                                    "body": snippet["body"], "category": snippet.get("category") or "general"})
        for item in raw["queries"]:
            tenant.queries.append(Query(text=item["text"], relevant=frozenset(id_to_key[i] for i in item["relevant_ids"]),
                                        language=raw.get("language", "en"), kind=item.get("answer_type", "")))
        for text, meta in zip(raw["unanswerable"], raw["unanswerable_meta"]):
            generic = meta["source"].startswith("clinc150")
            tenant.queries.append(Query(text=text, relevant=frozenset(), language=raw.get("language", "en"),
                                        kind="unanswerable", unanswerable_kind="generic" if generic else "in_domain"))
        tenants.append(tenant)
    return tenants


# ----------------------------------------------------------------------------- seeding
def has_command(name: str) -> bool:
    from django.core.management import get_commands

    return name in get_commands()


def tenant_get_or_none(schema: str):
    from ratiba.models import Tenant

    return Tenant.objects.filter(schema_name=schema).first()


def drop_tenant(schema: str) -> None:
    from django.db import connection

    from ratiba.services import tenant_delete

    connection.set_schema_to_public()
    tenant = tenant_get_or_none(schema)
    if tenant is not None:
        tenant_delete(tenant=tenant)


def seed_tenant(tenant: TenantData, *, reseed: bool) -> tuple[object, str]:
    """Seed one tenant (see _seed_tenant), keeping the per-schema migration chatter off the report."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return _seed_tenant(tenant, reseed=reseed)


def _seed_tenant(tenant: TenantData, *, reseed: bool) -> tuple[object, str]:
    """Seed one tenant through the product's own write paths; return (Tenant, how).

    The dev tenant goes through `seed_knowledge` (services, hours, drafts, related keys); a public
    JSON tenant through `tenant_create` + `snippet_version_create` (role=retrieved, accepted).
    """
    from django.core.management import call_command
    from django.db import connection

    connection.set_schema_to_public()
    existing = tenant_get_or_none(tenant.schema)
    if reseed and existing is not None:
        drop_tenant(tenant.schema)
        existing = None
    how = "seeded" if existing is None else "updated"
    if tenant.seed_yaml is not None and has_command("seed_knowledge"):
        # Idempotent: on an existing tenant it only applies what changed in the file.
        call_command("seed_knowledge", str(tenant.seed_yaml), tenant=tenant.schema, verbosity=0)
    elif existing is not None and _seeded_ok(existing, tenant):
        return existing, "reused"
    elif existing is not None:
        drop_tenant(tenant.schema)
    elif tenant.seed_yaml is not None:
        # Until seed_knowledge exists: the same snippets through the same service, facts left out.
        import yaml

        document = yaml.safe_load(tenant.seed_yaml.read_text())
        _seed_snippets(tenant, [s for s in document["snippets"]])
        how = "seeded*"
    else:
        _seed_snippets(tenant, [{**s, "role": "retrieved", "status": "accepted", "language": "en"}
                                for s in tenant.snippets])
    connection.set_schema_to_public()
    seeded = tenant_get_or_none(tenant.schema)
    embed_missing(seeded)
    return seeded, how


def _seed_snippets(tenant: TenantData, snippets: list[dict]) -> None:
    from django.db import connection

    from knowledge.services import snippet_version_create
    from ratiba.services import tenant_create

    row, _ = tenant_create(schema=tenant.schema, name=tenant.name, domain=tenant.domain)
    connection.set_tenant(row)
    try:
        for item in snippets:
            snippet_version_create(
                key=item["key"], title=item["title"], body=item["body"], category=item.get("category") or "general",
                role=item.get("role", "retrieved"), language=item.get("language", "en"),
                channels=item.get("channels"), tags=item.get("tags"), status=item.get("status", "accepted"),
                related_keys=item.get("related_keys") or item.get("related") or [],
                enforce_release_gate=False, queue_embedding=False, check_related=False)
    finally:
        connection.set_schema_to_public()


def _seeded_ok(tenant_row, tenant: TenantData) -> bool:
    """A previously seeded tenant is reused when it is fully embedded (and, for public data, complete)."""
    from django.db import connection

    from knowledge.models import SnippetVersion

    connection.set_tenant(tenant_row)
    try:
        active = SnippetVersion.objects.filter(is_active=True, role="retrieved")
        if active.filter(embedding__isnull=True).exclude(status="draft").exists():
            return False
        if tenant.snippets:
            return active.count() == len(tenant.snippets)
        return active.exists()
    finally:
        connection.set_schema_to_public()


def embed_missing(tenant_row) -> int:
    """Embed any active version the seed left pending (only when embedding tasks were not run inline)."""
    from django.db import connection

    from knowledge.models import SnippetVersion

    connection.set_tenant(tenant_row)
    try:
        pending = list(SnippetVersion.objects.filter(is_active=True, embedding__isnull=True).exclude(status="draft"))
        if not pending:
            return 0
        # The product's own embedding path, so the vectors are exactly what it would store.
        from knowledge.services import snippet_versions_embed

        snippet_versions_embed(version_ids=[version.pk for version in pending])
        return len(pending)
    finally:
        connection.set_schema_to_public()


def pin_mode(tenant_row, mode: str) -> None:
    """Pin a tenant's retrieval mode through its RetrievalSettings row (the owner's admin setting)."""
    from django.db import connection

    from knowledge.models import RetrievalSettings

    connection.set_tenant(tenant_row)
    try:
        row = RetrievalSettings.objects.order_by("pk").first() or RetrievalSettings()
        row.mode = mode
        row.save()
    finally:
        connection.set_schema_to_public()


# ----------------------------------------------------------------------------- metrics
K_VALUES = (1, 3, 5)


def first_hit_rank(ranked: list[str], relevant: frozenset[str]) -> int | None:
    """1-based rank of the first relevant key (any relevant key counts), or None."""
    for position, key in enumerate(ranked, start=1):
        if key in relevant:
            return position
    return None


@dataclass
class Scores:
    """Ranking and refusal metrics over a set of questions for one method."""

    n: int = 0
    hits: dict[int, int] = field(default_factory=lambda: {k: 0 for k in K_VALUES})
    rr_sum: float = 0.0
    n_unanswerable: int = 0
    refused_unanswerable: int = 0
    refused_answerable: int = 0
    refusal_known: bool = True

    def add_ranked(self, ranked: list[str], relevant: frozenset[str]) -> None:
        self.n += 1
        rank = first_hit_rank(ranked, relevant)
        if rank is not None:
            self.rr_sum += 1.0 / rank
            for k in K_VALUES:
                if rank <= k:
                    self.hits[k] += 1

    def add_refusal(self, *, answerable: bool, refused: bool | None) -> None:
        if refused is None:
            self.refusal_known = False
            return
        if not answerable:
            self.n_unanswerable += 1
            self.refused_unanswerable += int(refused)
        else:
            self.refused_answerable += int(refused)

    def recall(self, k: int) -> float | None:
        return self.hits[k] / self.n if self.n else None

    @property
    def mrr(self) -> float | None:
        return self.rr_sum / self.n if self.n else None

    @property
    def refusal_precision(self) -> float | None:
        refused = self.refused_unanswerable + self.refused_answerable
        if not self.refusal_known or not refused:
            return None
        return self.refused_unanswerable / refused

    @property
    def refusal_recall(self) -> float | None:
        if not self.refusal_known or not self.n_unanswerable:
            return None
        return self.refused_unanswerable / self.n_unanswerable

    @property
    def false_refusal_rate(self) -> float | None:
        if not self.refusal_known or not self.n:
            return None
        return self.refused_answerable / self.n

    def as_dict(self) -> dict:
        return {"n": self.n, **{f"recall@{k}": self.recall(k) for k in K_VALUES}, "mrr": self.mrr,
                "n_unanswerable": self.n_unanswerable, "refusal_precision": self.refusal_precision,
                "refusal_recall": self.refusal_recall, "false_refusal_rate": self.false_refusal_rate}


def best_threshold(pairs: list[tuple[float, bool]]) -> float:
    """The similarity cut (refuse below it) with the best balanced accuracy (Youden's J) on
    (top_similarity, answerable) pairs: the criterion the product's refusal model is fitted with.
    """
    candidates = sorted({round(sim, 4) for sim, _ in pairs})
    positives = sum(1 for _, answerable in pairs if answerable) or 1
    negatives = sum(1 for _, answerable in pairs if not answerable) or 1
    best, best_j = 0.0, -2.0
    for cut in [min(candidates, default=0.0)] + [c + 1e-4 for c in candidates]:
        tpr = sum(1 for sim, answerable in pairs if answerable and sim >= cut) / positives
        tnr = sum(1 for sim, answerable in pairs if not answerable and sim < cut) / negatives
        if tpr + tnr - 1 > best_j:
            best, best_j = cut, tpr + tnr - 1
    return best


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation), the convention latency SLOs use."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, int(round(pct / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


# ----------------------------------------------------------------------------- output
def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: list[str], rows: list[list], *, title: str = "") -> str:
    """A Markdown table (readable in a terminal and pasteable into docs/BENCHMARKS.md)."""
    cells = [[fmt(cell) for cell in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(headers)]
    lines = []
    if title:
        lines.append(f"\n{title}\n")
    lines.append("| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
    return "\n".join(lines)


def write_result(name: str, payload: dict) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS_DIR / f"{name}-{stamp}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    (RESULTS_DIR / f"{name}-latest.json").write_text(json.dumps(payload, indent=2, default=str))
    return path


def git_revision() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5).stdout.strip()
    except Exception:  # noqa: BLE001 - provenance only
        return "unknown"


def grouped(items, key):
    groups = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return groups
