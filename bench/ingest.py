"""How fast do 200 pages of documents become searchable chunks?  python bench/ingest.py

Builds ten 20-page price-list/guide PDFs (about 250 words a page, headings in a larger font, a running
footer), uploads them into a collection of a fresh bench tenant and times the product's ingestion path
(parse, chunk, embed in batches of 32, swap live) against the baseline of embedding one chunk at a time
(the same path with a batch size of 1), in the same process with the model already loaded, document by
document in turn so that other load on the machine falls on both paths alike. Also times:
re-uploading the same files (idempotent: nothing parsed or embedded), replacing one changed file (a new
generation built and swapped in), and the same 200 pages as Markdown (parser cost without PDF extraction).

Bench database: RATIBA_DB_NAME (default ratiba_bench). Env: INGEST_BENCH_DOCS (10), INGEST_BENCH_PAGES (20).
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import drop_tenant, git_revision, setup_django, table, write_result  # noqa: E402

DOCS = int(os.environ.get("INGEST_BENCH_DOCS", "10"))
PAGES = int(os.environ.get("INGEST_BENCH_PAGES", "20"))
SCHEMA = "bench_ingest"

TOPICS = ["massage", "facial", "manicure", "pedicure", "sauna", "steam room", "hair treatment", "waxing",
          "body scrub", "aromatherapy", "reflexology", "couples package", "gift voucher", "membership"]
SENTENCES = [
    "The {topic} takes {minutes} minutes and costs {price} shillings including VAT.",
    "Guests who book a {topic} on a weekday before noon receive a {percent} percent discount.",
    "Please tell the therapist about allergies, pregnancy or recent surgery before your {topic} begins.",
    "Our therapists trained for {years} years and use oils pressed from Kenyan macadamia and baobab.",
    "A {topic} can be combined with the steam room for an extra {extra} shillings.",
    "Cancellations less than {hours} hours before the appointment are charged half the price of the {topic}.",
    "Children under {age} may only use the pool and the {topic} area with an adult.",
    "Towels, robes and slippers are provided; lockers take a coin that is returned afterwards.",
    "The {topic} room is on the {floor} floor and can be reached by the lift next to reception.",
    "Members receive one free {topic} every {months} months and priority booking on weekends.",
]


def _paragraph(rng: random.Random, topic: str, sentences: int) -> str:
    values = lambda: {"topic": topic, "minutes": rng.choice([30, 45, 60, 90]),  # noqa: E731
                      "price": f"{rng.randint(8, 95) * 100:,}", "percent": rng.choice([10, 15, 20]),
                      "years": rng.randint(2, 12), "extra": f"{rng.randint(5, 20) * 100:,}",
                      "hours": rng.choice([12, 24, 48]), "age": rng.choice([12, 14, 16]),
                      "floor": rng.choice(["ground", "first", "second"]), "months": rng.choice([2, 3, 6])}
    return " ".join(rng.choice(SENTENCES).format(**values()) for _ in range(sentences))


def build_documents(seed: int = 7) -> list[tuple[str, list[list[tuple[str, str]]]]]:
    """DOCS documents of PAGES pages: each page a heading and three paragraphs (~250 words)."""
    rng = random.Random(seed)
    documents = []
    for number in range(DOCS):
        pages = []
        for page in range(PAGES):
            topic = TOPICS[(number * PAGES + page) % len(TOPICS)]
            pages.append([("heading", f"{topic.title()} {page + 1}")] +
                         [("text", _paragraph(rng, topic, rng.randint(5, 6))) for _ in range(3)])
        documents.append((f"guide-{number + 1:02d}", pages))
    return documents


def as_pdf(name: str, pages: list[list[tuple[str, str]]]) -> bytes:
    from knowledge.collections.testing import PdfLine, make_pdf

    content = []
    for index, page in enumerate(pages):
        lines = [PdfLine(f"{name} handbook", 20)] if index == 0 else []
        for kind, text in page:
            lines.append(PdfLine(text, 15) if kind == "heading" else PdfLine(text))
        lines.append(PdfLine(f"Aria Spa - {name} - page {index + 1}", 8))
        content.append(lines)
    return make_pdf(content, title=f"{name} handbook", wrap=95)


def as_markdown(name: str, pages: list[list[tuple[str, str]]]) -> bytes:
    parts = [f"# {name} handbook"]
    for page in pages:
        for kind, text in page:
            parts.append(f"## {text}" if kind == "heading" else text)
    return "\n\n".join(parts).encode()


class Stopwatch:
    """Wraps the parser and the embedder so each run can say where its time went."""

    def __init__(self):
        from knowledge.collections import services

        self.services = services
        self.parse_s = self.embed_s = 0.0
        self.embed_calls = 0
        self._parse, self._embed = services.parse_document, services.embed_texts
        services.parse_document, services.embed_texts = self.parse, self.embed

    def parse(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self._parse(*args, **kwargs)
        finally:
            self.parse_s += time.perf_counter() - started

    def embed(self, texts):
        started = time.perf_counter()
        try:
            return self._embed(texts)
        finally:
            self.embed_s += time.perf_counter() - started
            self.embed_calls += 1

    def reset(self):
        self.parse_s = self.embed_s = 0.0
        self.embed_calls = 0


def ingest_interleaved(paths: list[tuple[str, int, list[tuple[str, bytes]]]], watch: Stopwatch) -> list[dict]:
    """Ingest the files of every path document by document, alternating paths, so a change in machine
    load (other processes on these 2 cores) hits every path alike. Each path: (collection, batch, files)."""
    from knowledge.collections import services
    from knowledge.collections.models import Chunk, Document

    runs = []
    for name, batch, files in paths:
        runs.append({"collection": services.collection_create(name=name), "batch": batch, "files": files,
                     "seconds": 0.0, "parse_s": 0.0, "embed_s": 0.0, "embed_calls": 0})
    default_batch = services.EMBED_BATCH
    try:
        for index in range(max(len(run["files"]) for run in runs)):
            for run in runs:
                filename, data = run["files"][index]
                services.EMBED_BATCH = run["batch"]
                watch.reset()
                started = time.perf_counter()
                result = services.document_upload(collection=run["collection"], filename=filename, data=data)
                run["seconds"] += time.perf_counter() - started
                run["parse_s"] += watch.parse_s
                run["embed_s"] += watch.embed_s
                run["embed_calls"] += watch.embed_calls
                assert result.queued
    finally:
        services.EMBED_BATCH = default_batch
    for run in runs:
        documents = Document.objects.filter(collection=run["collection"])
        failed = [document.error for document in documents if document.status != "done"]
        if failed:
            sys.exit(f"ingestion failed: {failed[:3]}")
        run["chunks"] = Chunk.objects.filter(collection=run["collection"], is_live=True).count()
        run["pages"] = sum(document.page_count or 0 for document in documents)
        run["documents"] = len(run.pop("files"))
        run["other_s"] = run["seconds"] - run["parse_s"] - run["embed_s"]
    return runs


def main() -> None:
    setup_django()
    from django.db import connection

    from knowledge.collections import services
    from knowledge.embeddings import embed_texts, embedding_model_name
    from ratiba.services import tenant_create

    drop_tenant(SCHEMA)
    connection.set_schema_to_public()
    with contextlib.redirect_stdout(io.StringIO()):  # the per-schema migration chatter
        tenant, _ = tenant_create(schema=SCHEMA, name="Ingest bench", domain="ingest.bench.localhost")
    connection.set_tenant(tenant)
    load_started = time.perf_counter()
    embed_texts(["warm up"])
    model_load = time.perf_counter() - load_started

    documents = build_documents()
    build_started = time.perf_counter()
    pdfs = [(f"{name}.pdf", as_pdf(name, pages)) for name, pages in documents]
    markdown = [(f"{name}.md", as_markdown(name, pages)) for name, pages in documents]
    build_s = time.perf_counter() - build_started
    words = sum(len(text.split()) for _, pages in documents for page in pages for _, text in page)
    default_batch = services.EMBED_BATCH
    watch = Stopwatch()
    try:
        product, baseline, md = ingest_interleaved([
            ("pdf-batched", default_batch, pdfs), ("pdf-one-by-one", 1, pdfs),
            ("markdown-batched", default_batch, markdown),
        ], watch)

        watch.reset()
        started = time.perf_counter()
        for filename, data in pdfs:
            again = services.document_upload(collection=product["collection"], filename=filename, data=data)
            assert not again.changed and not again.queued
        idempotent = {"seconds": time.perf_counter() - started, "embed_calls": watch.embed_calls}

        name, pages = documents[0]
        pages[0][1] = ("text", pages[0][1][1] + " Prices change on the first of July.")
        watch.reset()
        started = time.perf_counter()
        replaced = services.document_upload(collection=product["collection"], filename=f"{name}.pdf",
                                            data=as_pdf(name, pages))
        replace = {"seconds": time.perf_counter() - started, "changed": replaced.changed,
                   "generation": type(replaced.document).objects.get(pk=replaced.document.pk).live_generation}
    finally:
        watch.services.parse_document, watch.services.embed_texts = watch._parse, watch._embed
        services.EMBED_BATCH = default_batch
        connection.set_schema_to_public()
        drop_tenant(SCHEMA)

    def row(label, run):
        return [label, run["documents"], run["pages"] or "-", run["chunks"], run["seconds"], run["parse_s"],
                run["embed_s"], run["other_s"], run["chunks"] / run["seconds"],
                (run["pages"] / run["seconds"]) if run["pages"] else "-", run["embed_calls"]]

    headers = ["path", "docs", "pages", "chunks", "total s", "parse s", "embed s", "db+chunking s", "chunks/s",
               "pages/s", "encode calls"]
    rows = [row(f"product: PDF, embed batches of {default_batch}", product),
            row("baseline: PDF, one chunk per encode", baseline),
            row(f"product: same text as Markdown, batches of {default_batch}", md)]
    load = os.getloadavg()[0]
    print(f"\nIngesting {DOCS} documents x {PAGES} pages ({words:,} words) - model {embedding_model_name()}, "
          f"model load {model_load:.1f}s (excluded), PDFs built in {build_s:.1f}s (excluded), "
          f"load average {load:.1f} on {os.cpu_count()} cores")
    print(table(headers, rows))
    print(f"\nbatched vs one-by-one: {baseline['seconds'] / product['seconds']:.2f}x faster overall, "
          f"{baseline['embed_s'] / product['embed_s']:.2f}x faster embedding")
    print(f"re-upload of the same {DOCS} files: {idempotent['seconds'] * 1000:.0f} ms in total, "
          f"{idempotent['embed_calls']} encode calls (idempotent)")
    print(f"replacing one changed {PAGES}-page file: {replace['seconds']:.2f} s (generation "
          f"{replace['generation']} swapped in; the old one answered searches until then)")
    write_result("ingest", {
        "revision": git_revision(), "docs": DOCS, "pages_per_doc": PAGES, "words": words,
        "model": embedding_model_name(), "model_load_s": model_load, "load_average": load,
        "runs": {label: {k: v for k, v in run.items() if k != "collection"}
                 for label, run in (("product_pdf", product), ("baseline_pdf_one_by_one", baseline),
                                    ("product_markdown", md))},
        "idempotent_reupload": idempotent, "replace_one": replace,
    })


if __name__ == "__main__":
    main()
