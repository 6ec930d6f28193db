"""Collections, their documents (original bytes kept) and the searchable chunks of each document."""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField


class CollectionScope(models.TextChoices):
    TENANT = "tenant", "Tenant (always searched)"
    SESSION = "session", "Session (searched only where a session added it)"


class Collection(models.Model):
    """A named knowledge base of uploaded documents (General Bots' KB folder)."""

    name = models.SlugField(max_length=100, unique=True,
                            help_text="Letters, digits, hyphens and underscores; used in the API and by ADD_KB.")
    scope = models.CharField(max_length=10, choices=CollectionScope.choices, default=CollectionScope.TENANT)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DocumentStatus(models.TextChoices):
    QUEUED = "queued"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"


class DocumentFormat(models.TextChoices):
    MARKDOWN = "markdown"
    TEXT = "text"
    HTML = "html"
    PDF = "pdf"


class Document(models.Model):
    """One uploaded file in a collection; its live chunks are what search sees."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=300)
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=100, blank=True)
    format = models.CharField(max_length=10, choices=DocumentFormat.choices)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64, help_text="Hash of the current upload's bytes.")
    # The bytes live in the row (see docs/adr/0006-document-collections.md): the tenant's schema
    # isolates them, a worker on another machine reads them without a shared volume, and deleting
    # the document or the tenant's schema leaves no orphan files.
    content = models.BinaryField()
    status = models.CharField(max_length=12, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED)
    error = models.TextField(blank=True)
    page_count = models.PositiveIntegerField(null=True, blank=True)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    # The generation whose chunks are live, and the hash that generation was built from.
    live_generation = models.PositiveIntegerField(default=0)
    indexed_sha256 = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["collection", "filename"]
        constraints = [
            # Uploading a changed file under the same name replaces the document's content.
            models.UniqueConstraint(fields=["collection", "filename"], name="document_filename_per_collection"),
        ]
        indexes = [models.Index(fields=["collection", "sha256"], name="document_collection_sha")]

    def __str__(self) -> str:
        return self.title or self.filename

    @property
    def progress_percent(self) -> int:
        if self.status == DocumentStatus.DONE:
            return 100
        if not self.chunks_total:
            return 0
        return min(100, int(100 * self.chunks_done / self.chunks_total))


class Chunk(models.Model):
    """A heading- and sentence-aware piece of a document, embedded and full-text indexed."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # Copied from the document so search filters by collection without a join.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    generation = models.PositiveIntegerField()
    # A new generation is built with is_live=False and swapped in by one transaction.
    is_live = models.BooleanField(default=False)
    ordinal = models.PositiveIntegerField()
    heading_path = models.TextField(blank=True, help_text="Headings above the chunk, joined by ' > '.")
    page = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    # Which model made the vector: `reembed` redoes chunks made by another one.
    embedding_model = models.CharField(max_length=100, blank=True)
    search_vector = models.GeneratedField(
        expression=(
            SearchVector("heading_path", weight="A", config=settings.TEXT_SEARCH_CONFIG)
            + SearchVector("text", weight="B", config=settings.TEXT_SEARCH_CONFIG)
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    HEADING_SEPARATOR = " > "

    class Meta:
        ordering = ["document", "generation", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "generation", "ordinal"], name="chunk_position_unique"),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_gin"),
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            models.Index(fields=["collection"], name="chunk_live_collection", condition=Q(is_live=True)),
            models.Index(fields=["document", "generation"], name="chunk_document_generation"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal} (g{self.generation})"

    @property
    def headings(self) -> list[str]:
        return [part for part in self.heading_path.split(self.HEADING_SEPARATOR) if part]
