"""The measured traps: filtered HNSW starving, selecting the embedding column, an uncapped FTS pool, and
operator characters reaching the text-search parser."""
from __future__ import annotations

import random

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import Snippet, SnippetVersion
from knowledge.retrieval import candidates as sql
from knowledge.retrieval import fetch_snippets, retrieve
from knowledge.retrieval.candidates import QueryText
from knowledge.retrieval.config import tenant_today
from knowledge.retrieval.filters import Filters

pytestmark = pytest.mark.django_db


def _unit(rng: random.Random) -> list[float]:
    values = [rng.gauss(0, 1) for _ in range(384)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def _literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{v:.6f}" for v in vector) + "]"


def _bulk_versions(count: int, *, active: int, rng: random.Random, near: list[float]) -> None:
    """`count` versions of one key with embeddings close to `near`; only the last `active` keys are active."""
    snippets = Snippet.objects.bulk_create([Snippet(key=f"bulk_{i}") for i in range(count)])
    rows = []
    for index, snippet in enumerate(snippets):
        # Inactive rows sit nearest to the query, so an unfiltered index scan fills up with them.
        noise = 0.01 if index >= active else 0.6
        vector = [a + noise * b for a, b in zip(near, _unit(rng))]
        rows.append(SnippetVersion(snippet=snippet, key=snippet.key, version=1, title=f"Bulk {index}",
                                   body=f"bulk body {index}", is_active=index < active, embedding=vector,
                                   embedding_state="done", token_count=5))
    SnippetVersion.objects.bulk_create(rows, batch_size=500)


def test_filtered_hnsw_still_returns_k_rows(tenant):
    rng = random.Random(7)
    query_vector = _unit(rng)
    _bulk_versions(1500, active=12, rng=rng, near=query_vector)
    where, params = sql.eligibility_sql(channel="chat", today=tenant_today(), filters=Filters())
    query = QueryText(or_text="", and_text="", content_text="", vector=query_vector)
    with connection.cursor() as cursor:
        # Make the planner use the HNSW index at this size, as it does at scale.
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
        cursor.execute(f"EXPLAIN SELECT v.id FROM {sql.SNIPPETS} v WHERE {where} AND v.embedding IS NOT NULL "
                       f"ORDER BY v.embedding <=> %(vec)s::vector LIMIT 10", {**params, "vec": _literal(query_vector)})
        assert "snippet_embedding_hnsw" in " ".join(row[0] for row in cursor.fetchall())
        cursor.execute(f"SELECT v.id FROM {sql.SNIPPETS} v WHERE {where} AND v.embedding IS NOT NULL "
                       f"ORDER BY v.embedding <=> %(vec)s::vector LIMIT 10", {**params, "vec": _literal(query_vector)})
        plain = cursor.fetchall()
    assert len(plain) < 10  # the trap: post-filtering the index scan's 40 nearest rows starves the result
    # small_table_rows=-1: the HNSW path although the table is small (an exact scan otherwise).
    rows, strategy = sql.vector_candidates(where=where, params=params, query=query, limit=10, small_table_rows=-1)
    assert len(rows) == 10
    assert strategy == "hnsw"  # the iterative scan, set inside the one statement, found all 10 itself
    exact, exact_strategy = sql.vector_candidates(where=where, params=params, query=query, limit=10, exact=True)
    assert exact_strategy == "exact" and {r[0] for r in rows} == {r[0] for r in exact}


def test_retrieval_never_selects_the_embedding_column(kb, mode):
    kb.spa()
    for run_mode in ("hybrid", "inline"):
        mode(run_mode)
        with CaptureQueriesContext(connection) as captured:
            retrieve(intent="other", query="Is there parking?", channel="chat", filters={"keys": ["parking"]})
            retrieve(intent="other", query="Is there parking?", channel="chat")
        for query in captured.captured_queries:
            text = query["sql"].replace('"', "")
            for allowed in ("v.embedding <=>", "embedding <=>", "embedding IS NOT NULL", "embedding IS NULL",
                            "embedding_state", "SELECT v.id, v.embedding FROM"):  # the last stays in a CTE
                text = text.replace(allowed, "")
            assert "embedding" not in text, query["sql"][:300]


def test_a_common_word_ranks_a_capped_pool_and_keeps_the_precise_match(kb, mode, tenant):
    snippets = Snippet.objects.bulk_create([Snippet(key=f"common_{i}") for i in range(400)])
    SnippetVersion.objects.bulk_create([
        SnippetVersion(snippet=s, key=s.key, version=1, title="Treatment", body=f"A relaxing treatment number {i}.",
                       is_active=True, token_count=8) for i, s in enumerate(snippets)])
    kb(key="treatment_aftercare", title="Aftercare", body="After your treatment avoid a hot shower.", embed=False)
    where, params = sql.eligibility_sql(channel="chat", today=tenant_today(), filters=Filters())
    query = QueryText(or_text="treatment or aftercare", and_text="treatment aftercare", content_text="")
    rows, pool = sql.keyword_candidates(where=where, params=params, query=query, limit=10, pool_cap=50)
    # One pool, of the rows with the rarer word: "treatment" (401 rows, over the cap) does not fill it.
    assert pool == 1
    assert rows[0][0] == SnippetVersion.objects.get(key="treatment_aftercare").pk
    common_only = QueryText(or_text="treatment", and_text="treatment", content_text="")
    rows, pool = sql.keyword_candidates(where=where, params=params, query=common_only, limit=10, pool_cap=50)
    # Only a word on more rows than the cap: no pool (an arbitrary sample of its rows would be noise);
    # the word still counts in each vector candidate's keyword score.
    assert (rows, pool) == ([], 0)
    mode("hybrid", fts_candidate_cap=50)
    result = fetch_snippets("other", query="treatment aftercare", channel="chat")
    assert result.debug["keyword"]["pool_ranked"] <= 50
    assert result.primary[0].key == "treatment_aftercare"


HOSTILE = ['"', '""', "&|!:*", "' OR 1=1 --", "parking & | !", "!!!", "(((", "a:*b", "-", "or or or",
           "\\", "'; DROP TABLE knowledge_snippetversion; --", "<->", "parking:* & !free", "\x00", "💆‍♀️",
           "x" * 5000]


@pytest.mark.parametrize("run_mode", ["hybrid", "inline"])
def test_operator_strings_never_break_the_search(kb, mode, run_mode):
    kb.spa()
    mode(run_mode)
    for text in HOSTILE:
        result = fetch_snippets("other", query=text, channel="chat")
        assert result.mode == run_mode
    assert SnippetVersion.objects.filter(is_active=True).count() == 6
    with connection.cursor() as cursor:
        for text in HOSTILE:
            cursor.execute("SELECT websearch_to_tsquery('english', %s)", [text.replace("\x00", "")])
