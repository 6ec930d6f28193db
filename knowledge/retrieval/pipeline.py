"""fetch_snippets: the one retrieval seam (docs/DESIGN.md §4), inline and hybrid modes."""
from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, replace
from time import perf_counter

from django.db import connection

from knowledge.embeddings import EmbeddingError, embed_cached, embed_query
from knowledge.retrieval import candidates as sql
from knowledge.retrieval.answer_types import answer_types, asks_how_to_book, asks_urgently, question_pieces
from knowledge.retrieval.candidates import Candidate, QueryText
from knowledge.retrieval.config import effective_mode, retrieval_settings_get, tenant_today, token_budget
from knowledge.retrieval.filters import Filters, filters_clean
from knowledge.retrieval.focus import FOCUS_WEIGHT, add_focus
from knowledge.retrieval.fusion import TRUNCATE_TOP, Weights, apply_threshold, blend, fuse, pack, rank
from knowledge.retrieval.graduation import graduation_check_after_overflow
from knowledge.retrieval.language import (Expansion, QueryLanguage, detect_language, english_reading, expand_shorthand,
                                         expand_swahili, is_swahili_text, tokens)
from knowledge.retrieval.relevance import (about_the_business, asks_where, asks_where_the_business_is, decide,
                                          emergency_titled, for_the_request, holding_the_detail, how_to_book,
                                          message_parts, place_for_a_part, policy_titled, taking_the_method,
                                          where_the_business_is)
from knowledge.retrieval.rewrite import query_rewrite
from knowledge.retrieval.spelling import corrected, corrections, is_a_word
from knowledge.retrieval.trivial import is_trivial
from knowledge.retrieval.types import Retrieval, RetrievedSnippet, retrieval_from_dict
from telemetry.models import EventName
from telemetry.services import event_record

logger = logging.getLogger(__name__)

RELATED_SEEDS = 3  # related snippets are taken from this many top results
RELATED_MAX = 3  # and at most this many are added
MAX_QUERY_CHARS = 2000
TYPO_IN_PLACE = 0.9  # "curtans" ~ "curtains" 0.93; "thika" ~ "thick", "braids" ~ "brands" 0.8 are left beside
_WORD_OF = re.compile(r"[^\W_]+(?:-[^\W_]+)*")  # a word as the spelling check reads it


@dataclass
class PreparedQuery:
    """The customer's text turned into what the searches need."""

    text: str
    language: QueryLanguage
    expansion: Expansion | None
    rewrite: str | None
    query: QueryText
    embedding_text: str
    english_words: list[str]  # the question's words in English (the glossary's rendering of Swahili, plus
    # the Swahili words it does not know)
    spelling: tuple[str, ...] = ()  # the knowledge's spelling of words the question misspelt (with_spelling)


def _focus_text(prepared: PreparedQuery) -> str:
    """The question as its sentences are compared with it: English as asked. A Swahili question's glossary reading is a
    bag of candidate words, not a sentence's (on the choosing folds it lost as many answers as it gained): none."""
    return prepared.text if prepared.expansion is None else ""


def _or_text(words: list[str]) -> str:
    # Word tokens only, joined by "or": websearch_to_tsquery then means "any of these words", and no
    # operator the customer typed (quotes, -, or, &, |, !, :*) survives to change the query's meaning.
    unique = [word for word in dict.fromkeys(words) if word != "or"]
    return " or ".join(unique)


# A question that names nothing but a place ("Where are you located?", "Mko wapi?") asks where the business is.
# Alone it is a few words the encoder places near nothing (cosine about 0.2 to an owner's "Where to find us"), so
# it is embedded with the words a place answer is written in.
_PLACE_READING = "location address directions"


def _type_only_reading(text: str, embedding_text: str, english_words: list[str]) -> str:
    """The embedded text of a question asking only for the business's place, read with the place words."""
    if not asks_where_the_business_is(text, english_words):
        return embedding_text
    return f"{embedding_text} {_PLACE_READING}"


def prepare_query(text: str) -> PreparedQuery:
    """Detect the language, expand Swahili with the glossary (and the hosted LLM when configured)."""
    # NUL bytes cannot reach Postgres text parameters; other control characters carry no meaning.
    text = "".join(ch if ch.isprintable() or ch in " \n\t" else " " for ch in (text or "")[:MAX_QUERY_CHARS])
    language = detect_language(text)
    # WhatsApp shorthand ("do u pik up frm ...") is read written out, by the encoder and by keyword search.
    text = expand_shorthand(text)
    words = tokens(text)
    if language.language == "sw" or language.mixed:
        expansion = expand_swahili(text)
        rewrite = query_rewrite(query=text, language="sw")
        english = expansion.text if rewrite is None else f"{rewrite} {expansion.text}"
        english_words = tokens(english)
        content = " ".join([*english_words, *expansion.unknown])
        query = QueryText(or_text=_or_text([*words, *english_words]), and_text=" ".join(english_words or words),
                          content_text=content or text)
        embedding_text = english if english_words else text
        if language.language == "en":
            # Mostly English with a few words the detector reads as Swahili (a place name, "mpesa", a typo):
            # the sentence itself carries the meaning ("Where is your salon in Nakuru?" is not "salon").
            added = [word for word in english_words if word not in words]
            embedding_text = " ".join([text, *added])
        # Words the glossary does not know stay: an answer must speak to them too.
        english_words = [*english_words, *expansion.unknown]
        return PreparedQuery(text=text, language=language, expansion=expansion, rewrite=rewrite, query=query,
                             embedding_text=_type_only_reading(text, embedding_text, english_words),
                             english_words=english_words)
    query = QueryText(or_text=_or_text([*words, *_swahili_equivalents(words)]), and_text=" ".join(words),
                      content_text=text)
    return PreparedQuery(text=text, language=language, expansion=None, rewrite=None, query=query,
                         embedding_text=_type_only_reading(text, text, words), english_words=words)


def with_spelling(prepared: PreparedQuery, *, cursor=None) -> PreparedQuery:
    """The question read with the knowledge's spelling of the words it misspells ("do u clean curtans" -> "do you
    clean curtains"): the searches and the refusal decision read that text (knowledge.retrieval.spelling)."""
    if prepared.expansion is None:
        fixes = corrected(prepared.english_words, cursor=cursor)
        if not fixes:
            return prepared
        # A typo is read as the knowledge's word in its place: left in, it is a word of the question no snippet
        # holds, and the refusal decision read "do u clean curtans" as a question the curtains snippet half answers.
        # The knowledge's word goes beside the customer's instead when theirs is a real word it does not use
        # ("braids" near "brands"), a name ("Thika" near "thick": only a typo this close is replaced), the same word
        # with or without a hyphen ("call-out", "callout"), or the start of it ("insure" of "insured", "parkin" of
        # "parking"): the searches already count a word's start as the word.
        typos = {word: fix for word, fix in fixes.items()
                 if not is_a_word(word) and word.replace("-", "") != fix.replace("-", "")
                 and not fix.startswith(word) and not word.startswith(fix)
                 and difflib.SequenceMatcher(None, word, fix).ratio() >= TYPO_IN_PLACE}
        text = _WORD_OF.sub(lambda match: typos.get(match.group(0).lower(), match.group(0)), prepared.text)
        beside = [fix for word, fix in fixes.items() if word not in typos]
        text = " ".join([text, *dict.fromkeys(beside)])
        return replace(prepare_query(text), spelling=tuple(dict.fromkeys(fixes.values())))
    # A Swahili or mixed question: only the words the glossary left untranslated can be the knowledge's words.
    # The read is extended in place of a second prepare_query, which would ask a hosted rewrite again.
    fixes = corrections([*prepared.expansion.kept, *prepared.expansion.unknown], cursor=cursor)
    if not fixes:
        return prepared
    added = " ".join(fixes)
    query = replace(prepared.query, or_text=_or_text([*prepared.query.or_text.split(" or "), *fixes]),
                    content_text=f"{prepared.query.content_text} {added}")
    return replace(prepared, text=f"{prepared.text} {added}", query=query,
                   embedding_text=f"{prepared.embedding_text} {added}",
                   english_words=[*prepared.english_words, *fixes], spelling=tuple(fixes))


def _swahili_equivalents(words: list[str]) -> list[str]:
    """Swahili words for English query words, so an English question also finds Swahili snippets."""
    from knowledge.retrieval.glossary_sw import WORDS
    from knowledge.retrieval.language import is_english_stopword

    wanted = {word for word in words if len(word) > 2 and not is_english_stopword(word)}
    found = [swahili for swahili, english in WORDS.items() if wanted.intersection(english.split())]
    return found[:12]


def _session_last_retrieval(session) -> Retrieval | None:
    """The session's last retrieval: `session.last_retrieval` may be a Retrieval, a dict stored with
    retrieval_to_dict, or a callable returning either (conversations owns how it is stored)."""
    if session is None:
        return None
    value = getattr(session, "last_retrieval", None)
    if callable(value):
        value = value()
    if isinstance(value, Retrieval):
        return value
    if isinstance(value, dict):
        return retrieval_from_dict(value)
    return None


def fetch_snippets(intent: str, *, query: str, channel: str, limit: int = 20, max_chars: int = 6000,
                   filters: dict | None = None, session=None, handoff: str = "") -> Retrieval:
    """Ranked knowledge for a turn: inline (whole routed KB) or hybrid (vector + keyword), per tenant mode.

    `handoff` names the request a turn hands to the team (booking, cancel, reschedule): when nothing answers its
    words, the snippet the owner titled for that request is offered instead of a refusal.

    Trivial turns ("ok", "asante") skip embedding and retrieval and reuse the session's last retrieval.
    Raises FilterError for invalid filters.
    """
    if is_trivial(query):
        started = perf_counter()
        last = _session_last_retrieval(session)
        if last is not None:
            return replace(last, intent=intent, query=query, channel=channel, trivial=True, embedding_ms=0.0,
                           retrieval_ms=round((perf_counter() - started) * 1000, 3),
                           debug={"trivial": True, "reused_last_retrieval": True})
        settings_row = retrieval_settings_get()
        return Retrieval(intent=intent, query=query, channel=channel, mode=effective_mode(settings_row),
                         trivial=True, empty=True, retrieval_ms=round((perf_counter() - started) * 1000, 3),
                         debug={"trivial": True, "reused_last_retrieval": False})
    return retrieve(intent=intent, query=query, channel=channel, limit=limit, max_chars=max_chars,
                    filters=filters, session=session, handoff=handoff)


def retrieve(*, intent: str, query: str, channel: str, limit: int = 20, max_chars: int = 6000,
             filters: dict | Filters | None = None, session=None, k: int | None = None,
             mode: str | None = None, record: bool = True, handoff: str = "") -> Retrieval:
    """Run retrieval without the trivial-turn shortcut (the API and the admin's test page call this).
    `k` overrides the number of primary results; `mode` forces "inline" or "hybrid"; `record=False`
    (the owner's test page) records no overflow event and never changes the mode."""
    cleaned = filters_clean(filters)
    # One cursor for every statement of the retrieval: django-tenants sets the search path once per cursor.
    with connection.cursor() as cursor:
        settings_row = retrieval_settings_get(cursor=cursor)
        run_mode = mode or effective_mode(settings_row)
        started = perf_counter()
        prepared = with_spelling(prepare_query(query), cursor=cursor)
        vector, embedding_ms, embed_error = _embed(prepared.embedding_text)
        prepared.query.vector = vector
        db_started = perf_counter()
        result = Retrieval(intent=intent, query=query, channel=channel, mode=run_mode,
                           language=prepared.language.language)
        result.debug["query"] = {
            "text": prepared.text, "language": prepared.language.language,
            "swahili_share": prepared.language.swahili_share, "mixed": prepared.language.mixed,
            "glossary": prepared.expansion.text if prepared.expansion else "",
            "unknown_words": prepared.expansion.unknown if prepared.expansion else [],
            "rewrite": prepared.rewrite, "keyword_query": prepared.query.or_text,
            "embedded_text": prepared.embedding_text, "embedding_error": embed_error,
            "filters": cleaned.as_dict(), "spelling": list(prepared.spelling),
        }
        weights = Weights.from_settings(settings_row)
        if run_mode == "inline":
            pool = _inline(result, settings_row=settings_row, intent=intent, channel=channel, limit=limit,
                           max_chars=max_chars, filters=cleaned, prepared=prepared, weights=weights,
                           session=session, record=record, cursor=cursor)
        else:
            pool = _hybrid(result, settings_row=settings_row, channel=channel,
                           k=k or min(limit, settings_row.top_k), filters=cleaned, prepared=prepared,
                           weights=weights, embed_failed=vector is None, session=session, cursor=cursor)
    decision = decide(pool, language=prepared.language.language, question=prepared.text,
                      words=prepared.english_words, read_text=prepared.embedding_text)
    result.relevance = round(decision.probability, 4)
    result.refusal_reason = decision.refusal_reason if not result.empty else "no_relevant_context"
    result.debug["refusal"] = {"probability": round(decision.probability, 4), "threshold": decision.threshold,
                               "signals": decision.signals.as_dict(), "refusal_reason": result.refusal_reason,
                               "answered_by": decision.answered_by}
    if result.refusal_reason is None:
        _lead_with(result, holding_the_detail(pool, question=prepared.text), why="detail_lead")
        _lead_with(result, taking_the_method(pool, question=prepared.text), why="payment_lead")
        _lead_when_first(result, emergency_titled(pool, question=prepared.text), question=prepared.text,
                         asks=asks_urgently, why="emergency")
        _lead_with(result, about_the_business(pool, question=prepared.text), why="about_lead")
        _lead_with(result, policy_titled(pool, question=prepared.text), why="policy_lead")
        _lead_when_first(result, how_to_book(pool, question=prepared.text), question=prepared.text,
                         asks=asks_how_to_book, why="booking")
        _lead_with_place(result, pool, question=prepared.text, alone=decision.answered_by == "place_title")
    elif handoff and (request := for_the_request(pool, request=handoff, question=prepared.text)) is not None:
        # A cancellation, change or urgent booking goes to the team whatever the knowledge says; the snippet the
        # owner wrote for it (the cancellation terms, the emergency line) is what the customer needs meanwhile.
        result.refusal_reason = None
        result.debug["refusal"]["answered_by"] = "request_title"
        _set_snippets(result, [_snippet(request)], why="request_lead", key=request.key)
    if decision.answerability is not None:
        result.debug["refusal"]["first_probability"] = round(decision.first_probability, 4)
        result.debug["refusal"]["answerability"] = round(decision.answerability, 4)
    result.embedding_ms = round(embedding_ms, 3)
    result.retrieval_ms = round((perf_counter() - db_started) * 1000, 3)
    result.debug["total_ms"] = round((perf_counter() - started) * 1000, 3)
    if record and result.overflowed and settings_row.mode == "auto" and run_mode == "inline" and mode is None:
        graduated = graduation_check_after_overflow(settings_row)
        if graduated == "exceeds_caps":
            # The knowledge no longer fits: this turn too is answered from all of it, not from what was cut.
            result = retrieve(intent=intent, query=query, channel=channel, limit=limit, max_chars=max_chars,
                              filters=filters, session=session, k=k, mode="hybrid", record=record,
                              handoff=handoff)
        if graduated:
            result.debug["graduated"] = True
    return result


def _lead_with_place(result: Retrieval, pool: list[Candidate], *, question: str, alone: bool) -> None:
    """A message one part of which asks only where the business is: the snippet the owner titled for the place
    leads when that part is asked first ("Where are you, and what time do you open on Saturday?"), and is among
    the retrieved otherwise, and alone when only the place rule answered (`alone`). The whole message's meaning
    is mostly the other part's, and that part shares no word with an address."""
    parts = message_parts(question)
    if len(parts) < 2:
        # "Where is your shop?": the snippet titled for the place, before one that says "shop"; anywhere in the
        # pool, as for a part ("Where is the college located?" sits nearer the college's story by meaning)
        if asks_where(question):
            _lead_with(result, where_the_business_is(pool, question=question, words=tokens(question),
                                                     top=len(pool)), why="place_lead")
        return
    holder = place_for_a_part(pool, question=question)
    if holder is None:
        return
    if alone:
        # The model refused the message; only its place part is answered ("Do you sell tyres, and where are you?").
        _set_snippets(result, [_snippet(holder)], why="place_lead", key=holder.key)
    elif asks_where(parts[0]):
        _lead_with(result, holder, why="place_lead")
    elif all(snippet.key != holder.key for snippet in result.snippets):
        # asked later: quoted at its part (providers/extractive.py), so it must be among what was retrieved
        _set_snippets(result, [*result.snippets, _snippet(holder)], why="place_added", key=holder.key)


def _lead_when_first(result: Retrieval, holder: Candidate | None, *, question: str, asks, why: str) -> None:
    """A titled snippet leads when the message's first part `asks` for it, and is among the retrieved when a later
    part does ("What time windows do you have, and how do I book?", "Do you fix geysers, and is a burst pipe an
    emergency?"): the extractive answer quotes it at its part."""
    if holder is None:
        return
    if asks(message_parts(question)[0]):
        _lead_with(result, holder, why=f"{why}_lead")
    elif all(snippet.key != holder.key for snippet in result.snippets):
        _set_snippets(result, [*result.snippets, _snippet(holder)], why=f"{why}_added", key=holder.key)


def _lead_with(result: Retrieval, holder: Candidate | None, *, why: str) -> None:
    """The holder first among the retrieved snippets (added when retrieval did not pack it)."""
    if holder is None or (result.snippets and result.snippets[0].key == holder.key):
        return
    rest = [snippet for snippet in result.snippets if snippet.key != holder.key]
    _set_snippets(result, [_snippet(holder), *rest], why=why, key=holder.key)


def _set_snippets(result: Retrieval, snippets: list[RetrievedSnippet], *, why: str, key: str) -> None:
    result.snippets = snippets
    result.returned_count = len(snippets)
    result.debug[why] = key


def add_native(pool: list[Candidate], *, prepared: PreparedQuery, cursor=None) -> None:
    """For a Swahili question read through the glossary, also compare the question as written with the
    Swahili snippets of the pool (fusion.NATIVE_OFFSET); the refusal decision still reads the English."""
    if prepared.language.language != "sw" or prepared.embedding_text == prepared.text:
        return
    swahili = _swahili_snippets(pool)
    if not swahili:
        return
    vector, _ms, _error = _embed(prepared.text)
    if vector is None:
        return
    found = sql.native_similarities(ids=[c.id for c in swahili], vector=vector, cursor=cursor)
    for candidate in swahili:
        if candidate.id in found:
            candidate.native_similarity, candidate.native_title_similarity = found[candidate.id]


def _swahili_snippets(pool: list[Candidate]) -> list[Candidate]:
    """The pool's snippets an owner wrote in Swahili (embedded ones: the others have no similarity to lift)."""
    return [c for c in pool if c.source == "snippet" and c.similarity is not None
            and is_swahili_text(f"{c.title}. {c.body}")]


def add_readings(pool: list[Candidate], *, prepared: PreparedQuery) -> None:
    """Compare the query vector with the glossary's English reading of each Swahili snippet of the pool
    (fusion.READING_OFFSET): the encoder reads English, and an owner may write a snippet only in Swahili."""
    vector = prepared.query.vector
    if vector is None:
        return
    readings = [(c, english_reading(f"{c.title}. {c.body}", question=False), english_reading(c.title, question=False))
                for c in _swahili_snippets(pool)]
    readings = [(c, whole, title) for c, whole, title in readings if whole]
    if not readings:
        return
    texts = [whole for _c, whole, _t in readings] + [title for _c, _w, title in readings if title]
    try:
        vectors = iter(embed_cached(texts))
    except EmbeddingError as exc:
        logger.warning("reading embedding failed, Swahili snippets keep their stored vectors: %s", exc)
        return
    whole_vectors = [next(vectors) for _ in readings]
    for (candidate, _whole, title), whole_vector in zip(readings, whole_vectors, strict=True):
        candidate.reading_similarity = _cosine(vector, whole_vector)
        if title:
            candidate.reading_title_similarity = _cosine(vector, next(vectors))


def add_parts(candidates: list[Candidate], *, prepared: PreparedQuery, title_weight: float, threshold: float,
              cursor=None) -> None:
    """For a message that asks several questions ("Where are you, and is there parking?"), each snippet's
    similarity to each of them (whole and title blended as ranking blends them): the extractive answer quotes
    a source for each question, which the words they share often cannot pick. A question no snippet reaches
    the similarity threshold for is left out: nothing found speaks to it."""
    if prepared.query.vector is None:
        return  # the embedder just failed on the question itself: do not wait on it again
    pieces = [piece.strip() for piece in question_pieces(prepared.text) if piece.strip()]
    ids = [c.id for c in candidates if c.source == "snippet" and c.similarity is not None]
    if len(pieces) < 2 or not ids:
        return
    swahili = prepared.expansion is not None and prepared.language.language == "sw"
    readings = [(english_reading(piece) or piece) if swahili else piece for piece in pieces]
    try:
        vectors = embed_cached(readings)
    except EmbeddingError as exc:
        logger.warning("question-part embedding failed, the answer picks sources by words: %s", exc)
        return
    by_piece: dict[str, dict[int, float]] = {}
    for piece, vector in zip(pieces, vectors, strict=True):
        found = sql.native_similarities(ids=ids, vector=vector, cursor=cursor)
        blended = {row_id: blend(whole, title, title_weight) for row_id, (whole, title) in found.items()}
        if blended and max(blended.values()) >= threshold:
            by_piece[piece] = blended
    if len(by_piece) < 2:
        return
    for candidate in candidates:
        for piece, blended in by_piece.items():
            if candidate.id in blended:
                candidate.part_similarities[piece] = round(blended[candidate.id], 4)


def _cosine(a: list[float], b: list[float]) -> float:
    # Both sides are unit vectors (the embedders normalise).
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def _embed(text: str) -> tuple[list[float] | None, float, str | None]:
    started = perf_counter()
    try:
        vector = embed_query(text)
    except EmbeddingError as exc:
        logger.warning("query embedding failed, keyword search only: %s", exc)
        return None, (perf_counter() - started) * 1000, str(exc)
    return vector, (perf_counter() - started) * 1000, None


def _snippet(candidate: Candidate) -> RetrievedSnippet:
    return RetrievedSnippet(
        key=candidate.key, version=candidate.version, title=candidate.title, body=candidate.body,
        category=candidate.category, score=round(candidate.score, 4), match_type=candidate.match_type,
        token_count=candidate.token_count, status=candidate.status,
        similarity=None if candidate.similarity is None else round(candidate.similarity, 4),
        last_reviewed_at=candidate.last_reviewed_at.isoformat() if candidate.last_reviewed_at else None,
        source=candidate.source, citation=dict(candidate.citation), truncated=candidate.truncated,
        part_similarities=dict(candidate.part_similarities))


def _fusion_row(c: Candidate, weights: Weights) -> dict:
    return {
        "key": c.key, "version": c.version, "similarity": None if c.similarity is None else round(c.similarity, 4),
        "title_similarity": None if c.title_similarity is None else round(c.title_similarity, 4),
        "vector_score": round(c.vector_score, 4), "keyword_rank": round(c.keyword_rank, 4),
        "keyword_score": round(c.keyword_score, 4), "heading_score": round(c.heading_score, 4),
        "coverage": round(c.coverage, 4), "fused": round(c.fused, 4), "boost": round(c.boost, 4),
        "type_boost": round(c.type_boost, 4), "focus": round(c.focus, 4),
        "native_similarity": None if c.native_similarity is None else round(c.native_similarity, 4),
        "reading_similarity": None if c.reading_similarity is None else round(c.reading_similarity, 4),
        "penalty": round(c.penalty, 4), "score": round(c.score, 4), "status": c.status,
        "tokens": c.token_count, "pending": c.pending, "vector_rank": c.vector_rank, "fts_rank": c.fts_rank,
        "formula": (f"{weights.vector:g}×{c.vector_score:.3f} + {weights.keyword:g}×{c.keyword_score:.3f} + "
                    f"{weights.heading:g}×{c.heading_score:.3f} = {c.fused:.3f}; "
                    f"+{c.boost:.2f} boost +{c.type_boost:.2f} answer type +{FOCUS_WEIGHT:g}×{c.focus:.2f} focus "
                    f"−{c.penalty:.2f} penalty = {c.score:.3f}"),
    }


def _chunk_candidates(*, prepared: PreparedQuery, filters: Filters, session, limit: int) -> list[Candidate]:
    """Live document chunks the turn may read (knowledge.collections), as candidates."""
    from knowledge.collections.search import chunk_candidates

    return chunk_candidates(query=prepared.query, filters=filters, session=session, limit=limit)


def _inline(result: Retrieval, *, settings_row, intent: str, channel: str, limit: int, max_chars: int,
            filters: Filters, prepared: PreparedQuery, weights: Weights, session=None,
            record: bool = True, cursor=None) -> list[Candidate]:
    """The whole KB, newest first, cut at `limit` / `max_chars`; then ranked for citations.

    The intent does not narrow it (it once routed `services` to the service and general categories): a
    question the classifier misreads, or one a policy snippet answers, must still find its snippet.
    """
    where, params = sql.eligibility_sql(channel=channel, today=tenant_today(), filters=filters)
    rows, total = sql.inline_rows(where=where, params=params, limit=max(limit, 0), cursor=cursor)
    chosen: list[int] = []
    chars = 0
    cut_by = None
    for row_id, length in rows:
        if chars + length > max_chars:
            cut_by = "max_chars"
            break
        chosen.append(row_id)
        chars += length
    if cut_by is None and total > len(chosen):
        cut_by = "limit"
    result.overflowed = len(chosen) < total
    if result.overflowed and record:
        event_record(name=EventName.KNOWLEDGE_OVERFLOW,
                     payload={"intent": intent, "returned": len(chosen), "total": total})
    pool = sql.snippet_signals(ids=chosen, query=prepared.query, cursor=cursor) if not filters.collections else []
    add_native(pool, prepared=prepared, cursor=cursor)
    add_readings(pool, prepared=prepared)
    types = answer_types(prepared.text)
    fuse(pool, weights, types=types)
    add_focus(pool, question=_focus_text(prepared))
    for candidate in pool:
        candidate.match_type = "inline"
    # Document chunks are too many to inline: the relevant ones (above the similarity threshold) join
    # within what is left of the caps.
    chunks = _chunk_candidates(prepared=prepared, filters=filters, session=session, limit=limit)
    fuse(chunks, weights, types=types)
    room = max(limit - len(pool), 0)
    for chunk in rank([c for c in chunks if (c.similarity or 0) >= settings_row.similarity_threshold]):
        if room <= 0 or chars + len(chunk.body) > max_chars:
            break
        chunk.match_type = "inline"
        pool.append(chunk)
        chars += len(chunk.body)
        room -= 1
    ranked = rank(pool)
    add_parts(ranked, prepared=prepared, title_weight=weights.title,
              threshold=settings_row.similarity_threshold, cursor=cursor)
    result.snippets = [_snippet(candidate) for candidate in ranked]
    result.candidate_count = total
    result.returned_count = len(ranked)
    result.retrieved_tokens = sum(candidate.token_count for candidate in ranked)
    result.empty = not ranked
    result.debug["inline"] = {"total": total,
                              "returned": len(chosen), "characters": chars, "limit": limit,
                              "max_chars": max_chars, "cut_by": cut_by}
    result.debug["fusion"] = [_fusion_row(candidate, weights) for candidate in ranked]
    return pool


def _hybrid(result: Retrieval, *, settings_row, channel: str, k: int, filters: Filters, prepared: PreparedQuery,
            weights: Weights, embed_failed: bool, session=None, cursor=None) -> list[Candidate]:
    """Vector + keyword candidates, fused, boosted, thresholded, packed; related snippets added."""
    k = max(1, k)
    per_search = k * max(1, settings_row.overretrieve_factor)
    where, params = sql.eligibility_sql(channel=channel, today=tenant_today(), filters=filters)
    # Snippets belong to no collection: a collection filter searches document chunks only.
    search_snippets = not filters.collections
    found = (sql.hybrid_candidates(where=where, params=params, query=prepared.query, limit=per_search,
                                   pool_cap=settings_row.fts_candidate_cap, exact=bool(filters.keys),
                                   cursor=cursor)
             if search_snippets else None)
    pool = list(found.candidates) if found else []
    strategy = found.strategy if found else "none"
    if found is None or found.has_collections:
        pool += _chunk_candidates(prepared=prepared, filters=filters, session=session, limit=per_search)
    add_native(pool, prepared=prepared, cursor=cursor)
    add_readings(pool, prepared=prepared)
    types = answer_types(prepared.text)
    fuse(pool, weights, types=types)
    add_focus(pool, question=_focus_text(prepared))
    threshold = apply_threshold(pool, threshold=settings_row.similarity_threshold)
    ranked = rank(threshold.kept)
    budget = token_budget(settings_row, channel)
    packing = pack(ranked, budget=budget, k=k, truncate_top=TRUNCATE_TOP)

    # 1-hop related context of the top results, packed into what is left of the budget.
    seeds = packing.packed[:RELATED_SEEDS]
    packed_keys = {c.key for c in packing.packed}
    related_keys = [key for seed in seeds for key in seed.related_keys if key not in packed_keys]
    related_keys = list(dict.fromkeys(related_keys))
    related = sql.snippet_related(keys=related_keys, exclude_ids=[c.id for c in packing.packed], where=where,
                                  params=params, query=prepared.query, cursor=cursor)
    fuse(related, weights, types=types)
    for candidate in related:
        candidate.match_type = "related"
    related_by_key = {c.key: c for c in related}
    related_ordered = [related_by_key[key] for key in related_keys if key in related_by_key]
    related_packing = pack(related_ordered, budget=budget, k=RELATED_MAX, used_tokens=packing.used_tokens)

    add_parts([*packing.packed, *related_packing.packed], prepared=prepared, title_weight=weights.title,
              threshold=settings_row.similarity_threshold, cursor=cursor)
    result.snippets = [_snippet(c) for c in packing.packed] + [_snippet(c) for c in related_packing.packed]
    result.fallback_used = threshold.fallback_used or (embed_failed and bool(packing.packed))
    result.candidate_count = len(pool)
    result.returned_count = len(result.snippets)
    result.skipped_for_budget = sum(1 for _c, why in packing.skipped if not why.startswith("beyond"))
    result.retrieved_tokens = related_packing.used_tokens
    result.empty = not packing.packed
    snippet_pool = found.candidates if found else []
    vector_hits = [c for c in snippet_pool if c.vector_rank]
    keyword_hits = [c for c in snippet_pool if c.fts_rank]
    result.debug.update({
        "vector": {"strategy": strategy, "asked": per_search,
                   "rows": [{"key": c.key, "version": c.version, "similarity": round(c.similarity or 0.0, 4),
                             "title_similarity": round(c.title_similarity or 0.0, 4),
                             "rank": c.vector_rank} for c in sorted(vector_hits, key=lambda c: c.vector_rank)]},
        "keyword": {"pool_cap": settings_row.fts_candidate_cap, "pool_ranked": found.pool_size if found else 0,
                    "asked": per_search,
                    "rows": [{"key": c.key, "version": c.version, "rank_cd": round(c.keyword_rank, 4),
                              "rank": c.fts_rank} for c in sorted(keyword_hits, key=lambda c: c.fts_rank)]},
        "fusion": [_fusion_row(c, weights) for c in rank(pool)],
        "threshold": {"threshold": settings_row.similarity_threshold, "cut": round(threshold.cut, 4),
                      "fallback_used": threshold.fallback_used,
                      "kept": [c.key for c in ranked],
                      "dropped": [{"key": c.key, "similarity": None if c.similarity is None else
                                   round(c.similarity, 4), "keyword_rank": round(c.keyword_rank, 4)}
                                  for c in rank(threshold.dropped)]},
        "packing": {"budget": budget, "k": k, "used_tokens": packing.used_tokens,
                    "packed": [{"key": c.key, "tokens": c.token_count, "score": round(c.score, 4),
                                "truncated": c.truncated} for c in packing.packed],
                    "skipped": [{"key": c.key, "tokens": c.token_count, "reason": why}
                                for c, why in packing.skipped]},
        "related": {"seeds": [c.key for c in seeds], "wanted": related_keys,
                    "packed": [{"key": c.key, "tokens": c.token_count} for c in related_packing.packed],
                    "skipped": [{"key": c.key, "reason": why} for c, why in related_packing.skipped],
                    "not_eligible": [key for key in related_keys if key not in related_by_key]},
    })
    return pool
