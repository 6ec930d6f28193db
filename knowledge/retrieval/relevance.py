"""Answer or refuse: a calibrated logistic model over retrieval signals, fitted across many businesses.

The coefficients live in refusal_model.json, written by `bench/fit_refusal.py` from the businesses of the
choosing folds of `bench/unseen_data.py` (the development tenant, written businesses, public tenants) and
reported on businesses it never saw. Nothing here is tuned per question or per tenant: the same signals
feed one model for every business.

The signals, for one question and its candidates:
- how close the best matches are in meaning (whole snippet, title), and how far the best stands out;
- keyword evidence (rarity-weighted share of the question's words found);
- word coverage: each salient question word against the words of the best snippets, by the local model's
  word vectors (exact stems count fully). A near miss typically leaves one salient word with no
  counterpart ("Are the trays BPA-free?" against a tray-packaging snippet): the least covered word and the
  weighted share covered both see it;
- answer type: a price, time, duration or place question whose best snippets hold no price, time,
  duration or place.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from knowledge.retrieval import glossary_sw
from knowledge.retrieval.answer_types import (ABOUT_TITLE, BOOKING_TITLE, CHANGE_TITLE, EMERGENCY_TITLE, HOW_TO_TITLE,
                                             POLICY_TITLE, PREMISES_WORDS, RANKING_ONLY, REQUEST_CHANGE_TITLE,
                                             WALK_IN_ASKED, WALK_IN_TITLE, answer_types, asks_about_the_business,
                                             asks_how_to_book, asks_urgently, gives_detail, gives_type, names_method,
                                             payment_methods_asked, policies_asked, question_pieces, reach_asked)
from knowledge.retrieval.language import SUFFIXES, detect_language, is_english_stopword, stem, tokens
from knowledge.retrieval.wordvec import word_vectors

MODEL_PATH = Path(__file__).with_name("refusal_model.json")
WORD_PRIOR_PATH = Path(__file__).with_name("question_words.json")
REFUSAL_REASON = "no_relevant_context"
SPREAD_RANK = 5
COVER_TOP = 3  # word coverage is measured against this many best candidates

# Used until a fitted model file exists: answers when the best similarity is clearly topical.
_FALLBACK_MODEL = {
    "features": ["top_similarity"], "coefficients": [12.0], "intercept": -4.8, "threshold": 0.5,
    "means": [0.0], "scales": [1.0], "source": "fallback (no fitted model)",
}

FEATURES = ("top_similarity", "top_title_similarity", "margin", "top_spread", "top_coverage", "fts_hit",
            "top_heading", "word_coverage", "word_min", "word_uncovered", "type_asked", "type_missing",
            "swahili", "swahili_x_similarity", "swahili_x_uncovered")
# What the keyword-only part of the model reads (no similarity is available when it decides).
KEYWORD_FEATURES = ("top_coverage", "fts_hit", "top_heading", "word_coverage", "word_min", "word_uncovered",
                    "type_asked", "type_missing", "swahili")

# ----------------------------------------------------------------------------- answer types
# Words that say what type of answer is wanted, not what it is about: the type signals judge them.
_TYPE_WORDS = frozenset("""
how much price prices pricing cost costs costing charge charges fee fees rate rates expensive cheap afford
what time when open opening close closing late early until long duration minutes hours days weeks where
located location address directions find bei gharama pesa ngapi shilingi kiasi saa lini muda wapi mahali
mnafungua mnafunga wazi dakika siku
""".split())
# Words every request uses whatever it is about ("can I", "do you", "please"), beyond the stopword list.
_GENERIC = frozenset("""
you your we us our i me my do does did can could would should will is are was were be have has had get
there here any some anything something please tell know want need like also still just really about
okay ok hi hello thanks thank yes no sure way able allowed possible available offer offers provide
provided service services guys
""".split())

# The refusal model was fitted on word coverage that leaves "al" on ("arrival" stays whole).
_SUFFIXES = tuple(suffix for suffix in SUFFIXES if suffix != "al")


def _stem(word: str) -> str:
    return stem(word, _SUFFIXES)


@lru_cache(maxsize=1)
def _word_prior() -> tuple[dict[str, int], int]:
    try:
        data = json.loads(WORD_PRIOR_PATH.read_text())
        return data["df"], int(data["documents"])
    except (OSError, ValueError, KeyError):
        return {}, 1


def word_weight(word: str) -> float:
    """How salient a question word is: rarer in everyday requests weighs more (an IDF, at least 1)."""
    df, documents = _word_prior()
    return 1.0 + math.log((documents + 1) / (df.get(word, 0) + 1))


def salient_words(words: list[str]) -> list[str]:
    """The question words an answer must speak to: no stopwords, request words or answer-type words."""
    out = []
    for word in words:
        for piece in word.split("-"):
            if (len(piece) < 2 or piece.isdigit() or is_english_stopword(piece) or piece in _GENERIC
                    or piece in _TYPE_WORDS):
                continue
            out.append(piece)
    return list(dict.fromkeys(out))


def content_words(text: str) -> list[str]:
    """A text's words as the coverage signal compares them (hyphenated parts apart, no stopwords)."""
    return [piece for word in tokens(text) for piece in word.split("-")
            if len(piece) >= 2 and not is_english_stopword(piece)]


# ----------------------------------------------------------------------------- signals
@dataclass(frozen=True)
class Signals:
    """What the refusal decision looks at, for one query's candidates."""

    top_similarity: float
    top_title_similarity: float
    margin: float
    top_spread: float  # best similarity minus the fifth best: how far the best match stands out
    top_coverage: float
    fts_hit: float
    top_heading: float
    word_coverage: float  # salience-weighted share of the question's words the best snippet covers
    word_min: float  # the least covered salient word's coverage (1 when there is none)
    word_uncovered: float  # salience weight of the words under WORD_COVERED, as a share
    type_asked: float  # the question asks for a price / time / duration / place
    type_missing: float  # ...and none of the best snippets holds one
    swahili: float
    swahili_x_similarity: float
    swahili_x_uncovered: float  # a Swahili question's words the glossary could not match in the snippets

    def as_dict(self) -> dict[str, float]:
        return {name: round(getattr(self, name), 4) for name in FEATURES}


WORD_COVERED = 0.6  # a word at least this close to one of the snippet's words counts as covered


def _coverage(candidate) -> float:
    # Document chunks carry plain word coverage (their search has no IDF weights), as in fusion.
    return candidate.idf_coverage if candidate.source == "snippet" else candidate.coverage


def _best_by_words(candidates: list):
    """The keyword match covering most of the question (None when keyword search found nothing); among equal
    coverage the closest by meaning, then the first key, so the decision never depends on the pool's order."""
    return min((c for c in candidates if c.keyword_rank > 0), default=None,
               key=lambda c: (-_coverage(c), -(c.similarity or 0.0), c.key))


def _word_cover(question: list[str], documents: list[list[str]], vectors) -> tuple[float, float, float]:
    """(weighted coverage, least coverage, uncovered share) of the best-covering document (its words)."""
    if not question or not documents:
        return 1.0, 1.0, 0.0
    weights = np.array([word_weight(word) for word in question])
    q_matrix = np.stack([vectors[word] for word in question])
    q_stems = [_stem(word) for word in question]
    best = None
    for words in documents:
        if not words:
            continue
        stems = {_stem(word) for word in words}
        d_matrix = np.stack([vectors[word] for word in words])
        cover = (q_matrix @ d_matrix.T).max(axis=1)
        cover = np.where([s in stems for s in q_stems], 1.0, np.clip(cover, 0.0, 1.0))
        weighted = float((weights * cover).sum() / weights.sum())
        uncovered = float((weights * (cover < WORD_COVERED)).sum() / weights.sum())
        row = (weighted, float(cover.min()), uncovered)
        if best is None or row[0] > best[0]:
            best = row
    return best or (0.0, 0.0, 1.0)


def signals_for(candidates: list, *, language: str, question: str, words: list[str]) -> Signals:
    """Signals over the candidates (before threshold and packing, so packing never changes the decision).

    `question` is the customer's text (answer types), `words` the query's content words in English (the
    glossary's rendering of a Swahili question), whose salient ones coverage is measured for.
    """
    similarities = sorted((c.similarity for c in candidates if c.similarity is not None), reverse=True)
    # Margin and spread compare the best match with the field. A KB with fewer candidates has no one else
    # in the field: a missing competitor counts as an unrelated one (similarity 0).
    field = similarities + [0.0] * SPREAD_RANK
    top = field[0]
    # Ties broken by key: the database returns the pool in an order that changes with its statistics.
    ranked = sorted(candidates, key=lambda c: (-(c.similarity or 0.0), c.key))[:COVER_TOP]
    # The best match by words joins the best by meaning: a version still waiting for its embedding is
    # found only this way.
    by_words = _best_by_words(candidates)
    if by_words is not None and all(by_words is not c for c in ranked):
        ranked.append(by_words)
    coverage = max((_coverage(c) for c in ranked), default=0.0)
    # Keyword evidence anywhere counts too: a version without an embedding yet is found only this way.
    coverage = max(coverage, max((_coverage(c) for c in candidates if c.keyword_rank > 0), default=0.0))
    heading = max((c.heading_terms / c.query_terms for c in ranked if c.query_terms), default=0.0)
    title_top = max((c.title_similarity or 0.0 for c in candidates), default=0.0)
    question_words = salient_words(words)
    covered = (1.0, 1.0, 0.0)
    if question_words and ranked:
        documents = [list(dict.fromkeys(content_words(f"{c.title} {c.body}"))) for c in ranked]
        vocabulary = question_words + [word for words in documents for word in words]
        covered = _word_cover(question_words, documents, word_vectors(vocabulary))
    asked = answer_types(question) - RANKING_ONLY
    text = " ".join(f"{c.title} {c.body}" for c in ranked)
    missing = bool(asked) and not any(gives_type(text, name) for name in asked)
    swahili = 1.0 if language == "sw" else 0.0
    return Signals(top_similarity=top, top_title_similarity=title_top, margin=top - field[1],
                   top_spread=top - field[SPREAD_RANK - 1], top_coverage=coverage,
                   fts_hit=1.0 if any(c.keyword_rank > 0 for c in candidates) else 0.0, top_heading=heading,
                   word_coverage=covered[0], word_min=covered[1], word_uncovered=covered[2],
                   type_asked=1.0 if asked else 0.0, type_missing=1.0 if missing else 0.0,
                   swahili=swahili, swahili_x_similarity=swahili * top,
                   swahili_x_uncovered=swahili * covered[2])


# ----------------------------------------------------------------------------- the model
@lru_cache(maxsize=1)
def load_model() -> dict:
    """The fitted model (or the fallback when the file is missing or unreadable)."""
    try:
        model = json.loads(MODEL_PATH.read_text())
        if len(model["features"]) != len(model["coefficients"]):
            raise ValueError("feature/coefficient count mismatch")
        return model
    except (OSError, ValueError, KeyError):
        return _FALLBACK_MODEL


def probability(signals: Signals | dict, model: dict | None = None) -> float:
    """P(the retrieved context can answer the question)."""
    model = model or load_model()
    values = signals if isinstance(signals, dict) else signals.as_dict()
    z = model["intercept"]
    for name, coefficient, mean, scale in zip(model["features"], model["coefficients"], model["means"],
                                              model["scales"], strict=True):
        z += coefficient * (values.get(name, 0.0) - mean) / (scale or 1.0)
    return sigmoid(z)


def sigmoid(z: float) -> float:
    """1 / (1 + e^-z), with z clipped so a far-off score cannot overflow."""
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


@dataclass(frozen=True)
class Decision:
    probability: float  # the deciding stage's P(answerable): the second stage's when it ran
    threshold: float
    refusal_reason: str | None
    signals: Signals
    first_probability: float | None = None  # the first stage's, when the second stage decided
    answerability: float | None = None  # the cross-encoder's P(the best snippet answers), when it read one
    answered_by: str = "model"  # or the rule that answered what the model refused (_answering_rule): place_title,
    # reach_detail, payment_method, about_title, booking_title


_PREMISES = frozenset(_stem(word) for word in PREMISES_WORDS)


def asks_where_the_business_is(question: str, words: list[str]) -> bool:
    """Whether a question asks nothing but where the business is ("Where is your shop?", "Mko wapi?"): a place,
    and no salient word but the premises; its words as written or as the glossary reads them (Swahili function
    words say nothing of a topic)."""
    salient = salient_words([word for word in _without_the_town(words) if word not in glossary_sw.STOPWORDS])
    return "place" in answer_types(question) and not {_stem(word) for word in salient} - _PREMISES


_IN_TOWN = frozenset("in at around hapa pale huko".split())
_TOWN_WORDS = frozenset("town city cbd centre center mjini".split())


def _without_the_town(words: list[str]) -> list[str]:
    """A question's words without the town it ends on ("where are you located in Nakuru?", "mko wapi hapa Nakuru
    town?"): the customer says where they are looking, not what they are looking for."""
    end = len(words) - (1 if words and words[-1] in _TOWN_WORDS else 0)
    if end >= 2 and words[end - 2] in _IN_TOWN:
        return words[:end - 2]
    return words


@lru_cache(maxsize=512)
def asks_where(text: str) -> bool:
    """asks_where_the_business_is read by the text's own words (a message, or one part of it)."""
    return asks_where_the_business_is(text, tokens(text))


@lru_cache(maxsize=256)
def message_parts(question: str) -> tuple[str, ...]:
    """The questions a message asks, as written (answer_types.question_pieces, elliptical parts apart). Cached:
    retrieval, the facts and the extractive answer all read them in one turn."""
    return tuple(question_pieces(question, join_elliptical=False))


def where_part(question: str) -> str | None:
    """The part of a message that asks only where the business is, if one does (the message itself when whole)."""
    return next((part for part in message_parts(question) if asks_where(part)), None)


def where_the_business_is(candidates: list, *, question: str, words: list[str], top: int = COVER_TOP):
    """The snippet an owner titled for the place ("Where to find us", "Our location", "Mahali tulipo"), among the
    best matches by meaning, when the question asks nothing but where the business is; else None.

    Such a question has no word for coverage to weigh, and the encoder places its few words near nothing
    (cosine about 0.2 to the owner's location snippet), so the model refuses it. The owner's title says what
    the snippet answers; a snippet that only mentions a place ("Parking: enter from Rhapta Road") does not
    answer it.
    """
    if not asks_where_the_business_is(question, words):
        return None
    ranked = sorted((c for c in candidates if c.similarity is not None), key=lambda c: (-c.similarity, c.key))
    titled = [c for c in ranked[:top] if "place" in answer_types(c.title)]
    # "Where to find our shop" before "Where we install": where the business is, not where it goes.
    return min(titled, key=lambda c: bool(_SERVED_TITLE.search(c.title or "")), default=None)


_SERVED_TITLE = re.compile(r"\b(install\w*|deliver\w*|serve|serving|cover\w*|work|visits?|areas?|zones?|tunafika)\b",
                           re.I)


def place_for_a_part(candidates: list, *, question: str):
    """For a message one part of which asks only where the business is ("How much is a minor service, and where
    are you?"): the snippet the owner titled for the place, anywhere among the candidates (the message's meaning
    is mostly its other part's); else None."""
    place = where_part(question) if len(message_parts(question)) > 1 else None
    if place is None:
        return None
    return where_the_business_is(candidates, question=place, words=tokens(place), top=len(candidates))


def _closest_first(candidate) -> tuple[float, str]:
    """A sort key: the closest by meaning first (one with no similarity last), then by key for a stable order."""
    return -(candidate.similarity if candidate.similarity is not None else -1.0), candidate.key


def holding_the_detail(candidates: list, *, question: str):
    """The snippet holding the number or address a question asks for when it asks only how to reach or pay the
    business ("What is your phone number?" -> the location snippet that says "call us on 0722 ..."): one the
    owner titled for the place or for reaching them first, then the best match by meaning; else None.

    Owners write their number inside another snippet (location, booking, payment) more often than in one of
    its own, so the encoder finds nothing close to "phone number" and the model refuses; the detail itself
    says the snippet answers. With no such detail anywhere the question stays refused.
    """
    kind = reach_asked(question)
    if kind is None:
        return None
    # The owner's main number is the one written where they say where they are or how to reach them ("Where
    # to find us", "How to book"), not the night line's.
    ranked = sorted(candidates, key=lambda c: (not answer_types(c.title) & {"place", "contact"},
                                               *_closest_first(c)))
    return next((c for c in ranked if gives_detail(f"{c.title}\n{c.body}", kind)), None)


_PAYMENT_TITLE = re.compile(r"\b(pay|paying|payments?|malipo|kulipa|lipa)\b", re.I)


def taking_the_method(candidates: list, *, question: str):
    """The snippet saying whether the business takes the way to pay a question asks about ("Do you take M-Pesa?"),
    when it asks nothing else: one the owner titled for paying first, then the best match by meaning, among
    those naming that way to pay; else None. "take" pulls such a question's vector away from "We accept M-Pesa
    Paybill ..." (cosine about 0.3), and the model refuses it."""
    methods = payment_methods_asked(question)
    if not methods:
        return None
    naming = [c for c in candidates if names_method(f"{c.title}\n{c.body}", methods)]
    if not naming:
        return None
    # An owner who wrote a Swahili snippet on paying beside the English one: each customer gets their own.
    language = detect_language(question).language
    return min(naming, key=lambda c: (not _PAYMENT_TITLE.search(c.title or ""),
                                      detect_language(c.body).language != language,
                                      *_closest_first(c)))


def about_the_business(candidates: list, *, question: str):
    """The snippet the owner titled "About ..." when a question asks who owns, runs or started the business or how
    long it has been going, the closest by meaning if there are several; else None. Such a question shares few
    words with the owner's story ("Who's behind the company?" against "Founded in 2009 by ..."), so the encoder
    ranks it low or the model refuses it."""
    if not asks_about_the_business(question):
        return None
    titled = [c for c in candidates if ABOUT_TITLE.search(c.title or "")]
    return min(titled, key=_closest_first, default=None)


_MONEY_OR_LATE = re.compile(r"\b(deposits?|late)\b", re.I)


def how_to_book(candidates: list, *, question: str):
    """The snippet the owner titled for booking ("How to book", "Walk-ins and booking a measuring slot") when a part
    of the question asks how to book or whether one must, the closest by meaning if there are several; else None.
    "How do I book interior detailing?" is closest to the snippet describing the service, which says nothing about
    booking it."""
    if not any(asks_how_to_book(part) for part in message_parts(question)):
        return None
    # "Do you take walk-ins?" wants the snippet titled for walk-ins, "How do I book?" one titled for booking, the
    # owner's own "How to book ..." first; one titled for cancelling, moving or a deposit answers neither, unless it
    # is titled for booking first ("Booking and moving a technician visit").
    walk_in = bool(WALK_IN_ASKED.search(question))

    def fits(title: str) -> bool:
        change, booking = CHANGE_TITLE.search(title), BOOKING_TITLE.search(title)
        if change and (not booking or change.start() < booking.start() or _MONEY_OR_LATE.search(title)):
            return False
        if walk_in:
            return bool(WALK_IN_TITLE.search(title))
        return bool(BOOKING_TITLE.search(WALK_IN_TITLE.sub("", title)))

    titled = [c for c in candidates if fits(c.title or "")]
    return min(titled, key=lambda c: (not HOW_TO_TITLE.search(c.title or ""),
                                      *_closest_first(c)), default=None)


def emergency_titled(candidates: list, *, question: str):
    """The snippet the owner titled for emergencies when a question is urgent ("Nothing at home has worked since this
    morning. How fast can someone come?" -> "Emergency call-outs"), the closest by meaning if there are several; else
    None. The question's meaning is its trouble (a leak, a dead inverter), which the emergency snippet rarely names."""
    if not asks_urgently(question):
        return None
    titled = [c for c in candidates if EMERGENCY_TITLE.search(c.title or "")]
    return min(titled, key=_closest_first, default=None)


def for_the_request(candidates: list, *, request: str, question: str):
    """For a booking, cancellation or change handed to the team, the snippet the owner titled for it: changing and
    cancelling for a cancel or reschedule ("Something came up. Can I push my Saturday polish to next Tuesday?"), the
    emergency one for an urgent booking; the closest by meaning if there are several; else None."""
    if request in ("cancel", "reschedule"):
        titled = [c for c in candidates if REQUEST_CHANGE_TITLE.search(c.title or "")]
        return min(titled, key=_closest_first, default=None)
    if request == "booking":
        return emergency_titled(candidates, question=question)
    return None


def policy_titled(candidates: list, *, question: str):
    """The snippet the owner titled for the policy the first part of a question asks about (returns, complaints,
    cancelling: "Can I return a tin of paint I haven't opened?" -> "Returns and exchanges"), the closest by meaning
    if there are several; else None. The product named is closer by meaning, and says nothing of the policy."""
    asked = policies_asked(message_parts(question)[0]) if message_parts(question) else frozenset()
    if "deposit" in asked and "cancel" in policies_asked(question):
        # "I need to cancel my fumigation. Will I lose my deposit?": what cancelling does to it is the cancel terms.
        asked = (asked - {"deposit"}) | {"cancel"}
    titled = [c for c in candidates if any(POLICY_TITLE[name].search(c.title or "") for name in asked)]
    return min(titled, key=_closest_first, default=None)


def _keyword_only(candidates: list) -> bool:
    """No similarity to judge by: the query embedding failed, or the best keyword match has no embedding yet."""
    if all(c.similarity is None for c in candidates):
        return True
    by_words = _best_by_words(candidates)
    return by_words is not None and by_words.similarity is None


def decide(candidates: list, *, language: str, question: str = "", words: list[str] | None = None,
           read_text: str | None = None, model: dict | None = None) -> Decision:
    """Refuse with `no_relevant_context` when the calibrated probability is below the model's threshold.

    When similarity cannot judge (see _keyword_only) the model's keyword-only part decides instead: it was
    fitted on the same questions from the word signals alone. Otherwise, when the model has a second stage
    and the cross-encoder's weights load, the cross-encoder reads the best match by meaning against
    `read_text` (the text the query was embedded as: the glossary's English for a Swahili question) and
    the second stage decides; with no weights the first stage decides alone, at its own threshold.
    """
    model = model or load_model()
    signals = signals_for(candidates, language=language, question=question,
                          words=words if words is not None else tokens(question))
    if not candidates:
        return Decision(probability=0.0, threshold=model["threshold"], refusal_reason=REFUSAL_REASON,
                        signals=signals)
    if "keyword_only" in model and _keyword_only(candidates):
        model = model["keyword_only"]
    p = probability(signals, model)
    stage = model.get("second_stage")
    if stage:
        staged = _second_stage(candidates, p, stage, read_text or question, signals)
        if staged is not None:
            return staged
    if p < model["threshold"]:
        rule = _answering_rule(candidates, question=question, words=words if words is not None else tokens(question))
        if rule is not None:
            return Decision(probability=p, threshold=model["threshold"], refusal_reason=None, signals=signals,
                            answered_by=rule)
    return Decision(probability=p, threshold=model["threshold"],
                    refusal_reason=None if p >= model["threshold"] else REFUSAL_REASON, signals=signals)


def _answering_rule(candidates: list, *, question: str, words: list[str]) -> str | None:
    """Which rule answers a question the model refused: where the business is (alone or as one part of the
    message), how to reach or pay it, whether it takes a way to pay, who runs it or how to book; None when none
    does."""
    if (where_the_business_is(candidates, question=question, words=words) is not None
            or place_for_a_part(candidates, question=question) is not None):
        return "place_title"
    if holding_the_detail(candidates, question=question) is not None:
        return "reach_detail"
    if taking_the_method(candidates, question=question) is not None:
        return "payment_method"
    if about_the_business(candidates, question=question) is not None:
        return "about_title"
    if how_to_book(candidates, question=question) is not None:
        return "booking_title"
    return None


def _second_stage(candidates: list, first: float, stage: dict, text: str, signals: Signals) -> Decision | None:
    """The cross-encoder's reading of the best match by meaning, combined with the first stage (None: no weights).

    Refused below the combined cut, or below the first stage's own veto cut when the fit kept one.
    """
    from knowledge.retrieval.answerability import answerability, best_by_meaning, second_stage

    top = best_by_meaning(candidates)  # the same snippet the stage was fitted on
    score = answerability(text, top.title, top.body)
    if score is None:
        return None
    combined = second_stage(first, score, stage)
    refused = first < stage.get("first_threshold", 0.0) or combined < stage["threshold"]
    return Decision(probability=combined, threshold=stage["threshold"],
                    refusal_reason=REFUSAL_REASON if refused else None, signals=signals,
                    first_probability=first, answerability=score)
