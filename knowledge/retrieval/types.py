"""What retrieval returns across the app boundary."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetrievedSnippet:
    """One ranked piece of knowledge (a snippet version or a document chunk)."""

    key: str
    version: int
    title: str
    body: str
    category: str
    score: float
    match_type: str  # "inline" | "vector" | "keyword" | "hybrid" | "related"
    token_count: int = 0
    status: str = "accepted"
    similarity: float | None = None  # cosine similarity to the query, when computed
    last_reviewed_at: str | None = None  # ISO date
    source: str = "snippet"  # "snippet" | "chunk"
    citation: dict = field(default_factory=dict)  # document title / heading / page for chunks
    truncated: bool = False  # the body is an excerpt: the whole text did not fit the token budget
    # For a message asking several questions ("Where are you, and is there parking?"): the cosine similarity to
    # each question, keyed by the question as written; the extractive answer quotes a source for each.
    part_similarities: dict[str, float] = field(default_factory=dict)


@dataclass
class Retrieval:
    """A retrieval result plus everything the per-turn retrieval log needs."""

    intent: str
    query: str
    channel: str
    mode: str  # "inline" | "hybrid"
    snippets: list[RetrievedSnippet] = field(default_factory=list)
    candidate_count: int = 0
    returned_count: int = 0
    skipped_for_budget: int = 0
    fallback_used: bool = False
    empty: bool = True
    trivial: bool = False
    embedding_ms: float = 0.0
    retrieval_ms: float = 0.0
    retrieved_tokens: int = 0
    refusal_reason: str | None = None
    overflowed: bool = False
    debug: dict = field(default_factory=dict)  # per-stage detail for the owner's test-retrieval page
    language: str = "en"  # detected language of the query ("en" | "sw")
    relevance: float | None = None  # the calibrated probability that the results can answer the query

    @property
    def primary(self) -> list[RetrievedSnippet]:
        """The ranked results without the 1-hop related context."""
        return [snippet for snippet in self.snippets if snippet.match_type != "related"]

    @property
    def related(self) -> list[RetrievedSnippet]:
        return [snippet for snippet in self.snippets if snippet.match_type == "related"]


def retrieval_to_dict(retrieval: Retrieval) -> dict:
    """A JSON-safe form of a Retrieval (for a session's `last_retrieval` column)."""
    from dataclasses import asdict

    data = asdict(retrieval)
    data["debug"] = {}  # per-stage detail is for the owner's page, not for storage
    return data


def retrieval_from_dict(data: dict) -> Retrieval | None:
    """Rebuild a Retrieval stored with `retrieval_to_dict`; None for an empty or unreadable value."""
    if not data or not isinstance(data, dict) or "mode" not in data:
        return None
    known = set(Retrieval.__dataclass_fields__)
    snippet_fields = set(RetrievedSnippet.__dataclass_fields__)
    try:
        snippets = [RetrievedSnippet(**{k: v for k, v in item.items() if k in snippet_fields})
                    for item in data.get("snippets", [])]
        values = {k: v for k, v in data.items() if k in known and k != "snippets"}
        return Retrieval(snippets=snippets, **values)
    except (TypeError, AttributeError):
        return None
