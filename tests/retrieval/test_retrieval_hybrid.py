"""Hybrid mode: fusion arithmetic, boost/penalty, threshold, packing, FTS fallback, related expansion, filters."""
from __future__ import annotations

import datetime as dt

import pytest
from retrieval_kb import embedder_down, kb, mode  # noqa: F401 (fixtures)
from django.utils import timezone

from knowledge.models import SnippetVersion
from knowledge.retrieval import FilterError, fetch_snippets, retrieve
from knowledge.retrieval.candidates import Candidate
from knowledge.retrieval.focus import FOCUS_WEIGHT
from knowledge.retrieval.fusion import MIN_EXCERPT_TOKENS, THRESHOLD_MARGIN, apply_threshold, pack

pytestmark = pytest.mark.django_db


def primary_keys(result):
    return [snippet.key for snippet in result.primary]


def fusion_row(result, key):
    return next(row for row in result.debug["fusion"] if row["key"] == key)


def test_fused_score_is_the_weighted_sum_plus_boost_minus_penalty(kb, mode):
    kb.spa()
    mode("hybrid")
    result = fetch_snippets("other", query="Is there parking at the spa?", channel="chat")
    assert result.mode == "hybrid"
    assert primary_keys(result)[0] == "parking"
    for row in result.debug["fusion"]:
        expected = 0.8 * row["vector_score"] + 0.1 * row["keyword_score"] + 0.0 * row["heading_score"]
        assert row["fused"] == pytest.approx(expected, abs=2e-4)
        assert row["score"] == pytest.approx(row["fused"] + row["boost"] + row["type_boost"]
                                             + FOCUS_WEIGHT * row["focus"] - row["penalty"], abs=2e-4)
    parking = fusion_row(result, "parking")
    assert parking["boost"] == 0.05  # canonical
    assert parking["keyword_score"] > 0 and parking["heading_score"] == pytest.approx(0.5)  # "parking" of park+spa
    assert result.snippets[0].score == pytest.approx(parking["score"], abs=1e-4)


def test_a_title_that_asks_the_question_lifts_the_snippet_by_its_own_vector(kb, mode):
    kb.spa()
    kb(key="own_wine", title="Can I bring my own wine?",
       body="Guests in the garden suite may bring one bottle per party. A corkage fee of KES 500 applies, "
            "glasses are provided at the bar, and spirits are not allowed on the premises. The suite is "
            "booked in three-hour slots, with a deposit of 30% taken at booking time.")
    mode("hybrid")
    result = fetch_snippets("other", query="Is it okay to bring my own wine?", channel="chat")
    assert primary_keys(result)[0] == "own_wine"
    wine = fusion_row(result, "own_wine")
    # The title alone is closer to the question than title + body, and it counts with the title weight.
    assert wine["title_similarity"] > wine["similarity"]
    for row in result.debug["fusion"]:
        expected = max(0.7 * row["similarity"] + 0.3 * row["title_similarity"], 0.0)
        assert row["vector_score"] == pytest.approx(expected, abs=2e-4)
    assert wine["vector_score"] > wine["similarity"]
    # The weight is the tenant's: at 0 the title's vector is ignored.
    mode("hybrid", title_weight=0.0)
    plain = fusion_row(fetch_snippets("other", query="Is it okay to bring my own wine?", channel="chat"), "own_wine")
    assert plain["vector_score"] == pytest.approx(plain["similarity"], abs=2e-4)
    # The answer-or-refuse signals keep the full text's similarity (the calibrated model's input).
    assert result.debug["refusal"]["signals"]["top_similarity"] == pytest.approx(
        max(row["similarity"] for row in result.debug["fusion"]), abs=2e-4)


def test_weights_come_from_the_tenants_settings(kb, mode):
    kb.spa()
    mode("hybrid", vector_weight=1.0, keyword_weight=0.0, heading_weight=0.0, canonical_boost=0.0)
    result = fetch_snippets("other", query="Is there parking?", channel="chat")
    for row in result.debug["fusion"]:
        assert row["score"] == pytest.approx(row["vector_score"] + FOCUS_WEIGHT * row["focus"], abs=2e-4)


def test_canonical_outranks_accepted_and_deprecated_is_penalised(kb, mode):
    body = "Lockers and showers are available in the changing rooms."
    kb(key="lockers_accepted", title="Lockers", body=body, status="accepted")
    kb(key="lockers_canonical", title="Lockers", body=body, status="canonical")
    kb(key="lockers_deprecated", title="Lockers", body=body, status="deprecated")
    mode("hybrid")
    result = fetch_snippets("other", query="Do you have lockers?", channel="chat")
    assert primary_keys(result) == ["lockers_canonical", "lockers_accepted", "lockers_deprecated"]
    accepted, canonical, deprecated = (fusion_row(result, key) for key in
                                       ("lockers_accepted", "lockers_canonical", "lockers_deprecated"))
    assert canonical["fused"] == pytest.approx(accepted["fused"], abs=1e-4)
    assert canonical["score"] - accepted["score"] == pytest.approx(0.05, abs=1e-4)
    assert accepted["score"] - deprecated["score"] == pytest.approx(0.15, abs=1e-4)


def test_candidates_below_the_similarity_threshold_are_dropped(kb, mode):
    kb.spa()
    mode("hybrid", similarity_threshold=0.4)
    result = fetch_snippets("other", query="Is there parking?", channel="chat")
    # A snippet is as close as its body or its title, whichever is closer.
    similarities = {row["key"]: max(row["similarity"], row["title_similarity"] or 0.0)
                    for row in result.debug["fusion"]}
    assert primary_keys(result) and all(similarities[key] >= 0.4 for key in primary_keys(result))
    dropped = {row["key"] for row in result.debug["threshold"]["dropped"]}
    assert dropped == {key for key, value in similarities.items() if value < 0.4}
    assert "cancellation" in dropped
    assert result.fallback_used is False


def test_a_snippet_whose_title_matches_is_not_dropped_for_its_long_body():
    def candidate(key, similarity, title_similarity):
        return Candidate(id=len(key), key=key, version=1, title=key, body=key, category="general",
                         status="accepted", token_count=10, similarity=similarity,
                         title_similarity=title_similarity)

    best = candidate("qualifications", 0.35, 0.31)
    booking = candidate("how_to_book", 0.19, 0.54)  # "How to book a technician" for "How do I book a plumber?"
    noise = candidate("borehole", 0.19, 0.10)
    result = apply_threshold([best, booking, noise], threshold=0.25)
    assert result.cut == pytest.approx(0.35 - THRESHOLD_MARGIN)  # the cut follows the best body similarity
    assert [c.key for c in result.kept] == ["qualifications", "how_to_book"]
    assert [c.key for c in result.dropped] == ["borehole"]


def _candidate(key: str, tokens: int) -> Candidate:
    return Candidate(id=len(key), key=key, version=1, title=key, body="word " * tokens, category="general",
                     status="accepted", token_count=tokens)


def test_packing_skips_a_snippet_that_does_not_fit_and_continues():
    ranked = [_candidate("a", 50), _candidate("bb", 120), _candidate("big", 400), _candidate("cccc", 20)]
    packing = pack(ranked, budget=200, k=8, truncate_top=3)
    # "big" is third but only 30 tokens are left (< MIN_EXCERPT_TOKENS): skipped; the smaller next one fits.
    assert 200 - 170 < MIN_EXCERPT_TOKENS
    assert [c.key for c in packing.packed] == ["a", "bb", "cccc"]
    assert [(c.key, why) for c, why in packing.skipped] == [("big", "needs 400 tokens, 30 left of 200")]
    assert packing.used_tokens == 190


def test_a_top_result_longer_than_the_budget_is_cut_to_a_marked_excerpt(kb, mode):
    big = kb(key="parking_long", title="Parking", status="canonical",
             body="Parking in the basement for guests. " + "The basement parking has many details. " * 40)
    small = kb(key="parking_short", title="Parking short", body="Parking is free in the basement.")
    assert big.token_count > 300 > small.token_count
    mode("hybrid", budget_chat_tokens=200, canonical_boost=0.3)  # the long canonical one ranks first
    result = fetch_snippets("other", query="parking in the basement", channel="chat")
    assert fusion_row(result, "parking_long")["score"] > fusion_row(result, "parking_short")["score"]
    first = result.primary[0]
    assert (first.key, first.truncated) == ("parking_long", True)
    assert first.body.startswith("Parking in the basement for guests.") and first.body.endswith("…")
    assert first.token_count <= 200 < big.token_count
    assert first.citation == {"truncated": True, "full_tokens": big.token_count}
    assert result.retrieved_tokens <= 200
    # The short one no longer fits beside it and too little is left for an excerpt: skipped.
    assert primary_keys(result) == ["parking_long"] and result.skipped_for_budget == 1
    # Email has its own, larger budget: the long one fits whole.
    mode("hybrid", budget_chat_tokens=200, budget_email_tokens=2000, canonical_boost=0.3)
    email = fetch_snippets("other", query="parking in the basement", channel="email")
    assert (email.primary[0].key, email.primary[0].truncated) == ("parking_long", False)


def test_below_the_threshold_the_keyword_matches_are_the_fallback_beside_the_best_matches(kb, mode):
    kb.spa()
    mode("hybrid", similarity_threshold=0.95)
    result = fetch_snippets("other", query="Rhapta Road", channel="chat")
    assert result.fallback_used is True
    cut = result.debug["threshold"]["cut"]
    best = max(row["similarity"] for row in result.debug["fusion"])
    assert cut == pytest.approx(best - THRESHOLD_MARGIN, abs=2e-4)
    assert {"location", "parking"} <= set(primary_keys(result))  # the only snippets naming Rhapta Road
    for snippet in result.primary:
        row = fusion_row(result, snippet.key)
        assert row["keyword_rank"] > 0 or row["similarity"] >= cut
    dropped = {row["key"] for row in result.debug["threshold"]["dropped"]}
    assert dropped and all(fusion_row(result, key)["similarity"] < cut for key in dropped)


def test_without_a_query_vector_keyword_search_alone_is_the_fallback(kb, mode, monkeypatch):
    kb.spa()
    mode("hybrid")
    monkeypatch.setattr("knowledge.retrieval.pipeline.embed_query", embedder_down)
    result = fetch_snippets("other", query="Rhapta Road", channel="chat")
    assert result.fallback_used is True
    assert sorted(primary_keys(result)) == ["location", "parking"]
    assert {snippet.match_type for snippet in result.primary} == {"keyword"}


def test_an_unrelated_question_is_refused_and_its_weak_matches_stay_ranked(kb, mode):
    kb.spa()
    mode("hybrid", similarity_threshold=0.95)
    result = fetch_snippets("other", query="zebra quantum", channel="chat")
    assert result.refusal_reason == "no_relevant_context" and result.fallback_used is True
    # The threshold never empties a result by itself: the refusal model decides; the ranking stays visible.
    assert result.primary and all(row["keyword_rank"] == 0 for row in result.debug["fusion"])
    scores = [snippet.score for snippet in result.primary]
    assert scores == sorted(scores, reverse=True)


def test_an_empty_knowledge_base_gives_an_empty_refused_result(tenant, mode):
    mode("hybrid")
    result = fetch_snippets("other", query="Is there parking?", channel="chat")
    assert (result.snippets, result.empty, result.refusal_reason) == ([], True, "no_relevant_context")


def test_related_snippets_of_the_top_results_are_added_once(kb, mode):
    kb.spa()
    mode("hybrid")
    result = retrieve(intent="other", query="Is there parking?", channel="chat", k=1)
    assert [(s.key, s.match_type) for s in result.snippets] == [("parking", "hybrid"), ("location", "related")]
    assert result.debug["related"]["seeds"] == ["parking"]


def test_a_related_key_that_is_not_eligible_is_not_added(kb, mode):
    kb(key="parking", title="Parking", body="Free parking in the basement.", related=["valet"])
    kb(key="valet", title="Valet", body="Valet parking service.", status="draft")
    mode("hybrid")
    result = retrieve(intent="other", query="parking", channel="chat", k=1)
    assert [(s.key, s.match_type) for s in result.snippets] == [("parking", "hybrid")]
    assert result.debug["related"]["not_eligible"] == ["valet"]


def test_a_version_still_waiting_for_its_embedding_is_found_by_keyword(kb, mode):
    kb.spa()
    pending = kb(key="sauna", title="Sauna", body="Our sauna is mixed and swimwear is required.", embed=False)
    assert pending.embedding_state == "pending"
    mode("hybrid")
    result = fetch_snippets("other", query="Do you have a sauna?", channel="chat")
    sauna = next(snippet for snippet in result.snippets if snippet.key == "sauna")
    assert (sauna.match_type, sauna.similarity) == ("keyword", None)
    assert fusion_row(result, "sauna")["pending"] is True


@pytest.mark.parametrize("filters, expected", [
    ({"category": "facility"}, ["location", "parking"]),
    ({"category": ["facility", "policy"]}, ["cancellation", "location", "parking"]),
    ({"tags": ["cars"]}, ["parking"]),
    ({"keys": ["location", "gift_vouchers"]}, ["gift_vouchers", "location"]),
    ({"channel": "email"}, ["cancellation"]),
    ({"collection": "brochures"}, []),
])
def test_each_filter_restricts_the_candidates(kb, mode, filters, expected):
    kb.spa()
    SnippetVersion.objects.filter(key="parking").update(tags=["cars", "basement"])
    SnippetVersion.objects.exclude(key="cancellation").update(channels=["chat", "whatsapp"])
    mode("hybrid", similarity_threshold=0.0)
    result = fetch_snippets("other", query="parking location cancellation vouchers", channel="chat",
                            filters=filters)
    assert sorted(primary_keys(result)) == expected


def test_updated_since_filter(kb, mode):
    kb.spa()
    old = timezone.now() - dt.timedelta(days=30)
    SnippetVersion.objects.exclude(key="parking").update(updated_at=old)
    mode("hybrid", similarity_threshold=0.0)
    since = (timezone.now() - dt.timedelta(days=1)).date().isoformat()
    result = fetch_snippets("other", query="parking location", channel="chat", filters={"updated_since": since})
    assert primary_keys(result) == ["parking"]


def test_invalid_filters_raise_with_the_field_named(tenant):
    with pytest.raises(FilterError) as caught:
        fetch_snippets("other", query="parking", channel="chat",
                       filters={"category": "spaceships", "updated_since": "yesterday", "colour": "red"})
    assert set(caught.value.fields) == {"category", "updated_since", "colour"}


def test_the_result_carries_what_the_retrieval_log_needs(kb, mode):
    kb.spa()
    mode("hybrid")
    result = fetch_snippets("other", query="Is there parking?", channel="whatsapp")
    assert result.channel == "whatsapp" and result.intent == "other" and result.language == "en"
    assert result.candidate_count == len(result.debug["fusion"]) >= result.returned_count == len(result.snippets)
    assert result.retrieved_tokens == sum(snippet.token_count for snippet in result.snippets)
    assert result.embedding_ms > 0 and result.retrieval_ms > 0
    assert result.empty is False and result.refusal_reason is None
    assert 0.0 <= result.relevance <= 1.0


@pytest.mark.parametrize("intent", ["services", "hours", "booking", "cancel", "reschedule", "other"])
def test_the_intent_never_changes_what_hybrid_returns(kb, mode, intent):
    kb.spa()
    mode("hybrid")
    result = fetch_snippets(intent, query="Is there a fee if I cancel late?", channel="chat")
    baseline = fetch_snippets("other", query="Is there a fee if I cancel late?", channel="chat")
    assert [(s.key, s.score) for s in result.snippets] == [(s.key, s.score) for s in baseline.snippets]
    assert result.snippets[0].key == "cancellation"


def _typed_candidate(key: str, body: str) -> Candidate:
    """A candidate as close as any other by meaning: only what its body gives can set it apart."""
    return Candidate(id=len(key), key=key, version=1, title=key, body=body, category="general",
                     status="accepted", token_count=10, similarity=0.40, title_similarity=None)


def test_a_candidate_holding_the_kind_of_answer_asked_for_is_lifted():
    from knowledge.retrieval.answer_types import answer_types
    from knowledge.retrieval.fusion import ANSWER_TYPE_BOOST, Weights, fuse, rank

    complaints = _typed_candidate("complaints",
                                  "Tell the manager at the counter if anything went wrong with your order.")
    location = _typed_candidate("location", "We are on Uganda Road, next to the Kenol petrol station.")
    types = answer_types("Where is your shop?")
    assert types == {"place"}
    fuse([complaints, location], Weights(), types=types)
    assert (location.type_boost, complaints.type_boost) == (ANSWER_TYPE_BOOST, 0.0)
    assert [c.key for c in rank([complaints, location])] == ["location", "complaints"]
    # A question that asks for no type of answer lifts nothing.
    fuse([complaints, location], Weights(), types=answer_types("Do you sell paint?"))
    assert location.type_boost == 0.0 and location.score == complaints.score


@pytest.mark.parametrize("question", ["How do I book a plumber?", "What's your WhatsApp number?",
                                      "Nawezaje kuweka miadi?"])
def test_a_question_on_how_to_book_lifts_the_snippet_with_the_channels(question):
    from knowledge.retrieval.answer_types import answer_types
    from knowledge.retrieval.fusion import ANSWER_TYPE_BOOST, Weights, fuse, rank

    # "plumbers" in the question's words is not what answers how to book one.
    qualifications = _typed_candidate("qualifications", "Our plumbers are trade-tested at Grade I or II.")
    channels = _typed_candidate("channels", "WhatsApp 0722 418 330 or email jobs@example.co.ke with your estate.")
    assert answer_types(question) == {"contact"}
    fuse([qualifications, channels], Weights(), types=answer_types(question))
    assert (channels.type_boost, qualifications.type_boost) == (ANSWER_TYPE_BOOST, 0.0)
    assert [c.key for c in rank([qualifications, channels])] == ["channels", "qualifications"]


@pytest.mark.parametrize("question", ["Do you deliver to Kapsoya?", "Mnaleta saruji hadi Kapsoya?"])
def test_a_question_on_a_place_served_lifts_the_snippet_with_the_areas(question):
    from knowledge.retrieval.answer_types import answer_types
    from knowledge.retrieval.fusion import ANSWER_TYPE_BOOST, Weights, fuse, rank

    lorry = _typed_candidate("lorry", "Deliveries go out on our own lorry the day after payment.")
    areas = _typed_candidate("areas", "We deliver across Eldoret town and the estates within 15 km.")
    assert "area" in answer_types(question)
    fuse([lorry, areas], Weights(), types=answer_types(question))
    assert (areas.type_boost, lorry.type_boost) == (ANSWER_TYPE_BOOST, 0.0)
    assert [c.key for c in rank([lorry, areas])] == ["areas", "lorry"]
    # "within" a time is no area.
    refunds = _typed_candidate("refunds", "Cancel free of charge within 3 working days of booking.")
    fuse([refunds], Weights(), types=answer_types(question))
    assert refunds.type_boost == 0.0
