"""Candidate generation in SQL: eligibility, vector (HNSW) and keyword (FTS) candidates, per-candidate signals.

Rules every query here follows (each is a measured trap, see docs/STACK-NOTES.md and tests/retrieval):
- the embedding column is never selected: distances are computed in the database and only ids and
  scores travel back;
- HNSW runs with pgvector's iterative scan, so an eligibility or filter clause applied after the index
  scan still yields k rows; when it cannot (a very selective filter), the search is redone exactly
  over the filtered rows;
- the FTS pool is capped before ranking, because ts_rank_cd costs per matching row and a common word
  matches almost every row;
- user text only reaches Postgres as bound parameters, through websearch_to_tsquery (which never
  raises on operator characters) after reduction to plain word tokens.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from knowledge.models import Role, SnippetVersion, Status
from knowledge.retrieval.filters import Filters

SNIPPETS = SnippetVersion._meta.db_table


@dataclass
class Candidate:
    """A snippet version (or document chunk) under consideration, with its raw signals and scores."""

    id: int
    key: str
    version: int
    title: str
    body: str
    category: str
    status: str
    token_count: int
    related_keys: list[str] = field(default_factory=list)
    last_reviewed_at: dt.date | None = None
    updated_at: dt.datetime | None = None
    pending: bool = False  # no embedding yet: only keyword search can find it
    similarity: float | None = None  # cosine similarity to the query (None without an embedding)
    title_similarity: float | None = None  # cosine similarity of the title alone (snippets only)
    # A Swahili question as written against a Swahili snippet (its similarity above reads the glossary's English):
    native_similarity: float | None = None
    native_title_similarity: float | None = None
    # The query vector against the glossary's English reading of a Swahili snippet (whole, title):
    reading_similarity: float | None = None
    reading_title_similarity: float | None = None
    # For a message asking several questions: the similarity to each of them, by question (pipeline.add_parts).
    part_similarities: dict[str, float] = field(default_factory=dict)
    keyword_rank: float = 0.0  # ts_rank_cd against the OR query
    matched_terms: int = 0  # query content lexemes present in the search document
    heading_terms: int = 0  # query content lexemes present in the title/key (or heading path)
    query_terms: int = 0  # content lexemes in the query
    idf_coverage: float = 0.0  # share of the query's content words found, each weighted by its rarity (IDF)
    vector_rank: int | None = None  # 1-based position in the vector candidate list
    fts_rank: int | None = None  # 1-based position in the keyword candidate list
    source: str = "snippet"  # "snippet" | "chunk"
    citation: dict = field(default_factory=dict)
    truncated: bool = False  # packing cut the body to an excerpt that fits the token budget
    # Filled by fusion:
    vector_score: float = 0.0
    keyword_score: float = 0.0
    heading_score: float = 0.0
    boost: float = 0.0
    type_boost: float = 0.0  # holds the kind of answer asked for (fusion.ANSWER_TYPE_BOOST)
    focus: float = 0.0  # share of the question its best sentence holds (focus.add_focus)
    penalty: float = 0.0
    fused: float = 0.0
    score: float = 0.0
    match_type: str = ""

    @property
    def coverage(self) -> float:
        """Share of the query's content words found in this candidate."""
        return self.matched_terms / self.query_terms if self.query_terms else 0.0


@dataclass
class QueryText:
    """The query as the database sees it: word tokens for FTS, content text for coverage."""

    or_text: str  # "word or word or ..." for websearch_to_tsquery (any word matches)
    and_text: str  # "word word ..." (every word must match: the precise part of the pool)
    content_text: str  # the words whose coverage is measured
    vector: list[float] | None = None

    @property
    def vector_literal(self) -> str | None:
        return None if self.vector is None else vector_literal(self.vector)


def vector_literal(vector: list[float]) -> str:
    """A vector as pgvector's text input."""
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"


def eligibility_sql(*, channel: str, today: dt.date, filters: Filters) -> tuple[str, dict]:
    """The WHERE clause (alias v) of snippet versions a turn may use, and its parameters."""
    clauses = [
        "v.is_active",
        "v.role = %(el_role)s",
        "v.status <> %(el_draft)s",
        "%(el_channel)s = ANY(v.channels)",
        "(v.valid_from IS NULL OR v.valid_from <= %(el_today)s)",
        "(v.valid_until IS NULL OR v.valid_until >= %(el_today)s)",
    ]
    params: dict = {"el_role": Role.RETRIEVED, "el_draft": Status.DRAFT, "el_channel": channel, "el_today": today}
    if filters.categories:
        clauses.append("v.category = ANY(%(f_category)s)")
        params["f_category"] = list(filters.categories)
    if filters.tags:
        clauses.append("v.tags && %(f_tags)s::varchar[]")
        params["f_tags"] = list(filters.tags)
    if filters.channels:
        clauses.append("v.channels && %(f_channels)s::varchar[]")
        params["f_channels"] = list(filters.channels)
    if filters.keys:
        clauses.append("v.key = ANY(%(f_keys)s)")
        params["f_keys"] = list(filters.keys)
    if filters.updated_since:
        clauses.append("v.updated_at >= %(f_since)s")
        params["f_since"] = filters.updated_since
    return " AND ".join(clauses), params


def _fetch(sql: str, params: dict, cursor=None) -> list[tuple]:
    if cursor is not None:
        cursor.execute(sql, params)
        return cursor.fetchall()
    with connection.cursor() as own:
        own.execute(sql, params)
        return own.fetchall()


# Below this many rows (pg_class.reltuples; -1 before the first ANALYZE) the table counts as small:
# an exact vector scan is cheaper than HNSW and document frequencies are counted exactly. Above it,
# HNSW is used and document frequencies come from the column statistics ANALYZE keeps. (-1 forces the
# large-table path, for tests.)
SMALL_TABLE_ROWS = 2000
# A word in more than this share of the tenant's active snippets ("spa" at a spa, "gmail" in a Gmail FAQ)
# carries no keyword evidence: it is left out of the IDF coverage.
COMMON_SHARE = 0.3
# ...but a word in only one or two snippets is never "common": in a five-snippet KB, 30% would otherwise
# discard "parking" from the one parking snippet and leave no keyword evidence at all.
COMMON_MIN_DOCS = 2


def _ef_search(limit: int) -> str:
    return str(max(40, min(limit * 2, 1000)))


def _signal_ctes() -> str:
    """The query's lexemes and each one's inverse document frequency within the tenant.

    Small tables count document frequencies exactly (cheap there). Large ones read them from the
    `most_common_elems` statistics ANALYZE keeps for the tsvector column (one catalog row, no scan): a
    lexeme not listed is rarer than the least common listed one and gets half its frequency, the
    planner's own convention; before the first ANALYZE every word counts as rare (frequency 1).
    `or_lex` (any-word keyword query) is looked up too, for the keyword pool.
    """
    return f"""
        q AS (SELECT CASE WHEN %(q_or)s = '' THEN NULL
                          ELSE websearch_to_tsquery(%(q_cfg)s::regconfig, %(q_or)s) END AS q_or,
                     tsvector_to_array(to_tsvector(%(q_cfg)s::regconfig, %(q_content)s)) AS lex,
                     tsvector_to_array(to_tsvector(%(q_cfg)s::regconfig, %(q_or)s)) AS or_lex),
        rel AS MATERIALIZED (SELECT greatest(c.reltuples, 0) AS tuples, c.reltuples < %(q_small)s AS small
                             FROM pg_class c WHERE c.oid = '{SNIPPETS}'::regclass),
        n AS MATERIALIZED (SELECT CASE WHEN rel.small THEN (SELECT count(*) FROM {SNIPPETS} a WHERE a.is_active)
                                       ELSE rel.tuples END AS total FROM rel),
        mce AS MATERIALIZED (SELECT s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
                             FROM pg_stats s, rel
                             WHERE NOT rel.small AND s.schemaname = current_schema()
                               AND s.tablename = '{SNIPPETS}' AND s.attname = 'search_vector'),
        df AS MATERIALIZED (
            SELECT l.x AS lexeme, l.x = ANY(q.lex) AS content,
                   CASE WHEN rel.small THEN
                            (SELECT count(*) FROM {SNIPPETS} d WHERE d.is_active
                                                 AND d.search_vector @@ plainto_tsquery('simple', l.x))
                        ELSE coalesce((SELECT m.freqs[array_position(m.elems, l.x)] FROM mce m) * rel.tuples,
                                      (SELECT m.freqs[cardinality(m.elems) + 1] / 2 FROM mce m) * rel.tuples,
                                      1)
                   END AS freq
            FROM q, rel, unnest(ARRAY(SELECT DISTINCT unnest(q.lex || q.or_lex))) AS l(x)),
        w AS (SELECT df.lexeme, ln(1 + (greatest(n.total, df.freq) - df.freq + 0.5) / (df.freq + 0.5)) AS idf
              FROM df, n WHERE df.content AND df.freq <= greatest({COMMON_SHARE} * n.total, {COMMON_MIN_DOCS})),
        wt AS (SELECT greatest(coalesce(sum(w.idf), 0), 1e-9) AS total FROM w)
    """


def _signal_params(query: QueryText) -> dict:
    return {"q_vec": query.vector_literal, "q_cfg": settings.TEXT_SEARCH_CONFIG, "q_or": query.or_text,
            "q_content": query.content_text, "q_small": SMALL_TABLE_ROWS}


_SNIPPET_COLUMNS = """
    v.id, v.key, v.version, v.title, v.body, v.category, v.status, v.token_count, v.related_keys,
    v.last_reviewed_at, v.updated_at, v.embedding IS NULL AS pending,
    CASE WHEN v.embedding IS NULL OR %(q_vec)s::vector IS NULL THEN NULL
         ELSE 1 - (v.embedding <=> %(q_vec)s::vector) END AS similarity,
    CASE WHEN q.q_or IS NULL THEN 0 ELSE ts_rank_cd(v.search_vector, q.q_or) END AS keyword_rank,
    (SELECT count(*) FROM unnest(q.lex) AS l(x) WHERE l.x = ANY(d.doc_lex)) AS matched,
    (SELECT count(*) FROM unnest(q.lex) AS l(x) WHERE l.x = ANY(d.title_lex)) AS heading,
    cardinality(q.lex) AS query_terms,
    coalesce((SELECT sum(w.idf) FROM w WHERE w.lexeme = ANY(d.doc_lex)), 0) / wt.total AS idf_coverage,
    CASE WHEN v.title_embedding IS NULL OR %(q_vec)s::vector IS NULL THEN NULL
         ELSE 1 - (v.title_embedding <=> %(q_vec)s::vector) END AS title_similarity
"""
# Each candidate's lexemes, read once per row from stored columns (stemming the title per candidate per
# query cost ~0.1 ms a row).
_SNIPPET_LEXEMES = """
    CROSS JOIN LATERAL (SELECT tsvector_to_array(v.search_vector) AS doc_lex,
                               tsvector_to_array(v.title_search) AS title_lex) d
"""


def _rows_to_candidates(rows: list[tuple], offset: int = 0) -> list[Candidate]:
    return [Candidate(id=row[o], key=row[o + 1], version=row[o + 2], title=row[o + 3], body=row[o + 4],
                      category=row[o + 5], status=row[o + 6], token_count=row[o + 7],
                      related_keys=list(row[o + 8] or []), last_reviewed_at=row[o + 9], updated_at=row[o + 10],
                      pending=row[o + 11], similarity=None if row[o + 12] is None else float(row[o + 12]),
                      keyword_rank=float(row[o + 13] or 0), matched_terms=row[o + 14], heading_terms=row[o + 15],
                      query_terms=row[o + 16], idf_coverage=float(row[o + 17] or 0),
                      title_similarity=None if row[o + 18] is None else float(row[o + 18]))
            for row in rows for o in (offset,) if row[o] is not None]


@dataclass
class HybridCandidates:
    """What one hybrid search statement found: candidates with every signal, and how."""

    candidates: list[Candidate]
    strategy: str  # "exact" | "hnsw" | "hnsw+exact" | "none"
    pool_size: int  # keyword matches ranked (at most the pool cap)
    has_collections: bool  # the tenant has document collections (their chunks are searched separately)


def hybrid_candidates(*, where: str, params: dict, query: QueryText, limit: int, pool_cap: int,
                      exact: bool = False, cursor=None, small_table_rows: int = SMALL_TABLE_ROWS) -> HybridCandidates:
    """Vector and keyword candidates, with every fusion and refusal signal, in ONE statement.

    - vector: the `limit` nearest eligible rows, exactly on a small table (or when `exact`), else through
      HNSW with pgvector's iterative scan, so the eligibility filter applied after the index scan still
      yields `limit` rows. The scan settings are set by set_config() in a one-time filter that runs
      before the index scan's first row (pgvector reads them then), local to the transaction;
    - keyword: one pool of at most `pool_cap` rows matching the query's rarer words (those in at most
      `pool_cap` rows), ranked by ts_rank_cd against the whole query, best `limit` kept. A word on more
      rows than the cap would only fill the pool with an arbitrary sample of them and crowd out the one
      row that has the rare word too; such words still count in every candidate's keyword score, and the
      vector search covers their meaning. (Under the cap, as in every KB of fewer rows, all words count.)
    - signals: similarity, ts_rank_cd, IDF coverage, heading matches for the union of both.
    The rare HNSW shortfall (a very selective filter starving the iterative scan) is settled by one
    exact re-run. Runs on `cursor` when given (one search_path SET per retrieval, not per statement).
    """
    values = {**params, **_signal_params(query), "q_limit": max(limit, 0), "q_cap": pool_cap,
              "q_ef": _ef_search(limit), "q_exact": exact, "q_small": small_table_rows}
    sql = _hybrid_sql(where=where, with_vector=query.vector is not None and limit > 0,
                      with_keyword=bool(query.or_text) and limit > 0, small_table_rows=small_table_rows)
    rows = _fetch(sql, values, cursor)
    found = _hybrid_result(rows)
    if found.strategy == "hnsw" and sum(1 for c in found.candidates if c.vector_rank) < limit:
        # Fewer than asked: the eligible set is that small, or a selective filter starved the iterative
        # scan (it stops after hnsw.max_scan_tuples). An exact search settles both: few rows pass then.
        exact_found = _hybrid_result(_fetch(sql, {**values, "q_exact": True}, cursor))
        if sum(1 for c in exact_found.candidates if c.vector_rank) > sum(1 for c in found.candidates if c.vector_rank):
            exact_found.strategy = "hnsw+exact"
            return exact_found
    return found


def _hybrid_sql(*, where: str, with_vector: bool, with_keyword: bool, small_table_rows: int) -> str:
    if with_vector:
        distance = "v.embedding <=> %(q_vec)s::vector"
        # The nearest by the whole snippet's vector only: every candidate's title similarity is computed
        # with its signals, and a second, title-only search found nothing more (ADR 0007 §1e).
        # "+ 0" keeps the planner from answering the exact branch through the HNSW index.
        vec = f"""
            cfg AS MATERIALIZED (SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true) IS NOT NULL
                                        AND set_config('hnsw.ef_search', %(q_ef)s, true) IS NOT NULL AS ready),
            vec AS (
                (SELECT v.id, 1 - ({distance}) AS sim, 'exact' AS strategy FROM {SNIPPETS} v
                 WHERE ((SELECT small FROM rel) OR %(q_exact)s) AND {where} AND v.embedding IS NOT NULL
                 ORDER BY ({distance}) + 0 LIMIT %(q_limit)s)
                UNION ALL
                (SELECT v.id, 1 - ({distance}) AS sim, 'hnsw' AS strategy FROM {SNIPPETS} v
                 WHERE NOT ((SELECT small FROM rel) OR %(q_exact)s) AND (SELECT ready FROM cfg)
                   AND {where} AND v.embedding IS NOT NULL
                 ORDER BY {distance} LIMIT %(q_limit)s)),"""
    else:
        vec = "vec AS (SELECT NULL::bigint AS id, NULL::float8 AS sim, 'none' AS strategy WHERE false),"
    if with_keyword:
        kw = f"""
            kq AS (SELECT string_agg(plainto_tsquery('simple', df.lexeme)::text, ' | ')::tsquery AS tsq
                   FROM q, df WHERE q.q_or IS NOT NULL AND df.lexeme = ANY(q.or_lex)
                                AND df.freq > 0 AND df.freq <= %(q_cap)s),
            kpool AS MATERIALIZED (SELECT v.id, v.search_vector FROM {SNIPPETS} v
                                   WHERE {where} AND v.search_vector @@ (SELECT tsq FROM kq) LIMIT %(q_cap)s),
            kw AS (SELECT kpool.id, ts_rank_cd(kpool.search_vector, q.q_or) AS rank FROM kpool, q
                   ORDER BY rank DESC, kpool.id LIMIT %(q_limit)s),"""
    else:
        kw = """kpool AS (SELECT NULL::bigint AS id WHERE false),
            kw AS (SELECT NULL::bigint AS id, NULL::float4 AS rank WHERE false),"""
    from knowledge.collections.models import Collection

    return f"""
        WITH {_signal_ctes()}, {vec} {kw}
        ids AS (SELECT id FROM vec UNION SELECT id FROM kw),
        found AS (SELECT {_SNIPPET_COLUMNS}, vec.sim IS NOT NULL AS from_vector, kw.rank AS fts_score
                  FROM ids JOIN {SNIPPETS} v ON v.id = ids.id
                  LEFT JOIN vec ON vec.id = v.id LEFT JOIN kw ON kw.id = v.id
                  {_SNIPPET_LEXEMES} CROSS JOIN q CROSS JOIN wt)
        SELECT EXISTS (SELECT 1 FROM {Collection._meta.db_table}) AS has_collections,
               (SELECT count(*) FROM kpool) AS pool_size,
               (SELECT min(strategy) FROM vec) AS strategy, found.*
        FROM (SELECT 1) AS one LEFT JOIN found ON true
    """


def _hybrid_result(rows: list[tuple]) -> HybridCandidates:
    candidates = _rows_to_candidates(rows, offset=3)
    flags = {row[3]: (row[3 + 19], row[3 + 20]) for row in rows if row[3] is not None}
    by_vector = sorted((c for c in candidates if flags[c.id][0]), key=lambda c: (-(c.similarity or 0.0), c.id))
    by_keyword = sorted((c for c in candidates if flags[c.id][1] is not None),
                        key=lambda c: (-float(flags[c.id][1]), c.id))
    for position, candidate in enumerate(by_vector, start=1):
        candidate.vector_rank = position
    for position, candidate in enumerate(by_keyword, start=1):
        candidate.fts_rank = position
    first = rows[0] if rows else (False, 0, None)
    return HybridCandidates(candidates=candidates, strategy=first[2] or "none", pool_size=int(first[1] or 0),
                            has_collections=bool(first[0]))


def vector_candidates(*, where: str, params: dict, query: QueryText, limit: int, exact: bool = False,
                      small_table_rows: int = SMALL_TABLE_ROWS) -> tuple[list[tuple[int, float]], str]:
    """(id, similarity) of the `limit` nearest eligible rows, and the strategy used ("hnsw", "exact", ...)."""
    found = hybrid_candidates(where=where, params=params, query=QueryText(or_text="", and_text="", content_text="",
                                                                          vector=query.vector),
                              limit=limit, pool_cap=0, exact=exact, small_table_rows=small_table_rows)
    rows = sorted(((c.id, c.similarity) for c in found.candidates if c.vector_rank), key=lambda r: -r[1])
    return rows, found.strategy


def keyword_candidates(*, where: str, params: dict, query: QueryText, limit: int, pool_cap: int,
                       small_table_rows: int = SMALL_TABLE_ROWS) -> tuple[list[tuple[int, float]], int]:
    """(id, ts_rank_cd) of the best keyword matches from the capped pool, and the pool size ranked."""
    found = hybrid_candidates(where=where, params=params, query=QueryText(or_text=query.or_text,
                                                                          and_text=query.and_text,
                                                                          content_text=query.content_text),
                              limit=limit, pool_cap=pool_cap, small_table_rows=small_table_rows)
    ranked = sorted((c for c in found.candidates if c.fts_rank), key=lambda c: c.fts_rank)
    return [(c.id, c.keyword_rank) for c in ranked], found.pool_size


def snippet_signals(*, ids: list[int], query: QueryText, cursor=None) -> list[Candidate]:
    """Full rows plus every scoring signal for the given snippet version ids (embedding never selected)."""
    if not ids:
        return []
    sql = (f"WITH {_signal_ctes()} SELECT {_SNIPPET_COLUMNS} FROM {SNIPPETS} v {_SNIPPET_LEXEMES}, q, wt "
           f"WHERE v.id = ANY(%(ids)s)")
    return _rows_to_candidates(_fetch(sql, {**_signal_params(query), "ids": list(ids)}, cursor))


def native_similarities(*, ids: list[int], vector: list[float], cursor=None) -> dict[int, tuple[float, float | None]]:
    """Cosine similarity of the given snippet versions (whole, title) to another query vector."""
    if not ids:
        return {}
    sql = (f"SELECT v.id, 1 - (v.embedding <=> %(n_vec)s::vector), "
           f"CASE WHEN v.title_embedding IS NULL THEN NULL ELSE 1 - (v.title_embedding <=> %(n_vec)s::vector) END "
           f"FROM {SNIPPETS} v WHERE v.id = ANY(%(n_ids)s) AND v.embedding IS NOT NULL")
    return {row[0]: (float(row[1]), None if row[2] is None else float(row[2]))
            for row in _fetch(sql, {"n_vec": vector_literal(vector), "n_ids": list(ids)}, cursor)}


def snippet_related(*, keys: list[str], exclude_ids: list[int], where: str, params: dict,
                    query: QueryText, cursor=None) -> list[Candidate]:
    """Eligible snippets whose keys are listed as related (1 hop), with their signals."""
    if not keys:
        return []
    sql = (f"WITH {_signal_ctes()} SELECT {_SNIPPET_COLUMNS} FROM {SNIPPETS} v {_SNIPPET_LEXEMES}, q, wt "
           f"WHERE {where} AND v.key = ANY(%(rel_keys)s) AND NOT (v.id = ANY(%(rel_exclude)s))")
    values = {**params, **_signal_params(query), "rel_keys": list(keys), "rel_exclude": list(exclude_ids)}
    return _rows_to_candidates(_fetch(sql, values, cursor))


def inline_rows(*, where: str, params: dict, limit: int, cursor=None) -> tuple[list[tuple[int, int]], int]:
    """Newest-first (id, characters) of the first `limit` eligible rows, and how many are eligible."""
    sql = (f"SELECT v.id, char_length(v.title) + char_length(v.body), count(*) OVER () FROM {SNIPPETS} v "
           f"WHERE {where} ORDER BY v.updated_at DESC, v.id DESC LIMIT %(in_limit)s")
    rows = _fetch(sql, {**params, "in_limit": limit}, cursor)
    return [(row[0], row[1]) for row in rows], (rows[0][2] if rows else _count(where, params, cursor))


def _count(where: str, params: dict, cursor=None) -> int:
    return _fetch(f"SELECT count(*) FROM {SNIPPETS} v WHERE {where}", params, cursor)[0][0]


def eligible_count(*, where: str, params: dict) -> int:
    """How many snippet versions pass the clause."""
    return _count(where, params)
