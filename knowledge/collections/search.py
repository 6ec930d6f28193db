"""Chunk candidates for hybrid retrieval: vector and keyword search over the live chunks of collections."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

from knowledge.collections.selectors import searchable_collection_ids
from knowledge.retrieval.types import RetrievedSnippet

CHUNK_CATEGORY = "document"
DEFAULT_EF_SEARCH = 80


@dataclass(frozen=True)
class ChunkHit:
    """One live chunk with the signals fusion needs (similarity, keyword rank, term matches)."""

    chunk_id: int
    document_id: int
    ordinal: int
    generation: int
    collection: str
    title: str  # the document's title
    filename: str
    heading_path: str
    page: int | None
    text: str
    token_count: int
    indexed_at: object
    similarity: float | None  # cosine similarity to the query embedding
    keyword_rank: float  # ts_rank_cd of the any-word query; 0 when the chunk did not match it
    matched_terms: int  # query content lexemes found in the chunk (headings and text)
    heading_terms: int  # query content lexemes found in the document title and heading path
    query_terms: int  # content lexemes in the query
    vector_rank: int | None  # 1-based position among the vector candidates
    fts_rank: int | None  # 1-based position among the keyword candidates

    @property
    def key(self) -> str:
        return chunk_key(document_id=self.document_id, ordinal=self.ordinal)

    @property
    def heading(self) -> str:
        return self.heading_path.split(" > ")[-1] if self.heading_path else ""

    def citation(self) -> dict:
        return {"document": self.title, "document_id": self.document_id, "filename": self.filename,
                "collection": self.collection, "heading": self.heading, "heading_path": self.heading_path,
                "page": self.page}

    def to_snippet(self, *, score: float, match_type: str) -> RetrievedSnippet:
        """The chunk as the retrieval result type every caller already understands."""
        return RetrievedSnippet(
            key=self.key, version=self.generation, title=self.title, body=self.text, category=CHUNK_CATEGORY,
            score=score, match_type=match_type, token_count=self.token_count, status="accepted",
            similarity=self.similarity, source="chunk", citation=self.citation(),
        )


def chunk_key(*, document_id: int, ordinal: int) -> str:
    return f"doc:{document_id}#{ordinal}"


def _vector_literal(embedding: Iterable[float]) -> str:
    return "[" + ",".join(f"{float(value):.7g}" for value in embedding) + "]"


def or_text(text: str) -> str:
    """Plain words joined by "or" for websearch_to_tsquery (any word matches; no operator survives)."""
    words = [word for word in re.findall(r"\w+", (text or "").lower()) if word != "or"]
    return " or ".join(dict.fromkeys(words))


_VECTOR_HNSW = (
    "v as (select id, 1 - (embedding <=> %(vec)s::vector) as sim from knowledge_chunk "
    "where is_live and embedding is not null and collection_id = any(%(ids)s) "
    "order by embedding <=> %(vec)s::vector limit %(vlimit)s)")
# MATERIALIZED keeps the planner from using the HNSW index: distances for the filtered rows only.
_VECTOR_EXACT = (
    "f as materialized (select id, embedding from knowledge_chunk "
    "where is_live and embedding is not null and collection_id = any(%(ids)s)), "
    "v as (select id, 1 - (embedding <=> %(vec)s::vector) as sim from f "
    "order by embedding <=> %(vec)s::vector limit %(vlimit)s)")
_VECTOR_NONE = "v as (select null::bigint as id, null::float as sim where false)"
_KEYWORD = (
    "kpool as (select c.id, c.search_vector from knowledge_chunk c, q "
    "where c.is_live and c.collection_id = any(%(ids)s) and q.tsq is not null and c.search_vector @@ q.tsq "
    "limit %(kcap)s), "
    "k as (select kpool.id, ts_rank_cd(kpool.search_vector, q.tsq) as rank from kpool, q "
    "order by 2 desc, kpool.id limit %(klimit)s)")
_SELECT = """
    select c.id, c.document_id, c.ordinal, c.generation, col.name, d.title, d.filename, c.heading_path, c.page,
           c.text, c.token_count, d.indexed_at, {similarity}, coalesce(k.rank, 0),
           (select count(*) from unnest(q.lex) as l(x) where l.x = any(tsvector_to_array(c.search_vector))),
           (select count(*) from unnest(q.lex) as l(x) where l.x = any(tsvector_to_array(
               to_tsvector(%(cfg)s::regconfig, d.title || ' ' || c.heading_path)))),
           cardinality(q.lex), v.sim is not null, k.id is not null, v.sim, k.rank
    from ids join knowledge_chunk c on c.id = ids.id
    join knowledge_document d on d.id = c.document_id
    join knowledge_collection col on col.id = c.collection_id
    cross join q
    left join v on v.id = c.id left join k on k.id = c.id
"""


def _run(*, vector: str | None, keyword_text: str, content_text: str, collection_ids: list[int],
         vector_limit: int, keyword_limit: int, keyword_cap: int, exact: bool) -> list[tuple]:
    params = {"vec": vector, "ids": collection_ids, "vlimit": vector_limit, "klimit": keyword_limit,
              "kcap": keyword_cap, "cfg": settings.TEXT_SEARCH_CONFIG, "kw": keyword_text, "content": content_text}
    ctes = ["q as (select case when %(kw)s = '' then null else websearch_to_tsquery(%(cfg)s::regconfig, %(kw)s) "
            "end as tsq, tsvector_to_array(to_tsvector(%(cfg)s::regconfig, %(content)s)) as lex)"]
    ctes.append(_VECTOR_NONE if vector is None else _VECTOR_EXACT if exact else _VECTOR_HNSW)
    ctes.append(_KEYWORD)
    ctes.append("ids as (select id from v union select id from k)")
    similarity = "1 - (c.embedding <=> %(vec)s::vector)" if vector is not None else "null::float"
    sql = "with " + ", ".join(ctes) + _SELECT.format(similarity=similarity)
    with transaction.atomic(), connection.cursor() as cursor:
        # The collection filter is applied after the HNSW scan; iterative scanning keeps it from
        # coming back short when the tenant's other chunks crowd the nearest neighbours.
        ef_search = max(DEFAULT_EF_SEARCH, min(vector_limit * 2, 1000))
        cursor.execute("select set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                       "set_config('hnsw.ef_search', %s, true)", [str(ef_search)])
        cursor.execute(sql, params)
        return cursor.fetchall()


def chunk_search(*, keyword_text: str, content_text: str, embedding: list[float] | None,
                 collection_ids: list[int], vector_limit: int = 24, keyword_limit: int = 24,
                 keyword_cap: int = 200) -> list[ChunkHit]:
    """Vector and keyword candidates among the live chunks of `collection_ids`, each with every signal.

    `keyword_text` is websearch syntax ("word or word"); `content_text` the words whose coverage counts.
    Each attempt is one SQL statement, so one snapshot: while a document is re-indexed a search sees
    either all of its old chunks or all of its new ones, never a mixture or neither.
    """
    if not collection_ids or (not keyword_text and embedding is None):
        return []
    vector = _vector_literal(embedding) if embedding is not None else None
    args = dict(vector=vector, keyword_text=keyword_text or "", content_text=content_text or "",
                collection_ids=collection_ids, vector_limit=vector_limit, keyword_limit=keyword_limit,
                keyword_cap=keyword_cap)
    rows = _run(**args, exact=False)
    if vector is not None and sum(1 for row in rows if row[17]) < vector_limit:
        # Short: the collections hold fewer chunks than asked, or a selective filter starved the
        # index scan; an exact scan over the (then few) filtered rows settles both.
        exact_rows = _run(**args, exact=True)
        if sum(1 for row in exact_rows if row[17]) > sum(1 for row in rows if row[17]):
            rows = exact_rows
    vector_order = sorted((row for row in rows if row[17]), key=lambda row: (-row[19], row[0]))
    keyword_order = sorted((row for row in rows if row[18]), key=lambda row: (-row[20], row[0]))
    vector_rank = {row[0]: index + 1 for index, row in enumerate(vector_order)}
    keyword_rank = {row[0]: index + 1 for index, row in enumerate(keyword_order)}
    hits = [
        ChunkHit(chunk_id=row[0], document_id=row[1], ordinal=row[2], generation=row[3], collection=row[4],
                 title=row[5], filename=row[6], heading_path=row[7], page=row[8], text=row[9], token_count=row[10],
                 indexed_at=row[11], similarity=None if row[12] is None else float(row[12]),
                 keyword_rank=float(row[13]), matched_terms=row[14], heading_terms=row[15], query_terms=row[16],
                 vector_rank=vector_rank.get(row[0]), fts_rank=keyword_rank.get(row[0]))
        for row in rows
    ]
    hits.sort(key=lambda hit: (-(hit.similarity or 0.0), -hit.keyword_rank, hit.chunk_id))
    return hits


def chunk_candidates(*, query, filters=None, session=None, limit: int = 24) -> list:
    """Chunk candidates for fetch_snippets, as retrieval Candidates (ids negated so they never collide
    with snippet version ids). Tenant-scope collections are always searched, session-scope ones only
    when the session added them, narrowed by the collections filter; none under snippet-only filters.

    `query` is the pipeline's QueryText (or_text, content_text, vector); `filters` a Filters or a dict.
    """
    from knowledge.retrieval.candidates import Candidate

    names = _filter_collections(filters)
    if _snippet_only(filters):
        return []
    collection_ids = searchable_collection_ids(names=names, session=session)
    hits = chunk_search(keyword_text=query.or_text, content_text=query.content_text, embedding=query.vector,
                        collection_ids=collection_ids, vector_limit=limit, keyword_limit=limit)
    return [
        Candidate(id=-hit.chunk_id, key=hit.key, version=hit.generation, title=hit.title, body=hit.text,
                  category=CHUNK_CATEGORY, status="accepted", token_count=hit.token_count,
                  updated_at=hit.indexed_at, similarity=hit.similarity, keyword_rank=hit.keyword_rank,
                  matched_terms=hit.matched_terms, heading_terms=hit.heading_terms, query_terms=hit.query_terms,
                  vector_rank=hit.vector_rank, fts_rank=hit.fts_rank, source="chunk", citation=hit.citation())
        for hit in hits
    ]


def _filter_collections(filters) -> list[str] | None:
    if filters is None:
        return None
    if isinstance(filters, dict):
        names = filters.get("collections", filters.get("collection"))
        if names in (None, "", []):
            return None
        return [names] if isinstance(names, str) else list(names)
    return list(filters.collections) or None


def _snippet_only(filters) -> bool:
    if filters is None:
        return False
    if isinstance(filters, dict):
        return bool(filters.get("category") or filters.get("categories") or filters.get("tags") or filters.get("keys"))
    return bool(getattr(filters, "snippet_only", False))


def chunk_query(text: str, *, names: list[str] | None = None, session=None, limit: int = 24) -> list[ChunkHit]:
    """Embed a question and search the collections it may read (the admin's preview and tests use this)."""
    from knowledge.embeddings import EmbeddingError, embed_query

    try:
        embedding = embed_query(text)
    except EmbeddingError:
        embedding = None  # keyword search alone still works
    return chunk_search(keyword_text=or_text(text), content_text=text, embedding=embedding,
                        collection_ids=searchable_collection_ids(names=names, session=session),
                        vector_limit=limit, keyword_limit=limit)
