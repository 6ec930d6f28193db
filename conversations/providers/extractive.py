"""The extractive provider: an answer made of the most relevant sentences of the knowledge and facts.

No network, no model call, deterministic: the same prompt always gives the same answer. It quotes
sentences as written (it cannot translate), frames them with a phrase in the customer's language and
cites every sentence. It only ever reads the retrieved knowledge and the structured facts: guardrail and
behaviour sections are instructions for an LLM, never content, and a sentence that repeats one of them
(or reads like an instruction to an assistant) is never quoted.

Selection: fact lines come first, all of them (conversations/facts.py hands over only the rows that answer).
Then retrieval's top-ranked source leads (its ranking uses more signals than word overlap, and letting
overlap choose the lead cited a relevant source less often in bench/shaping_quality.py): its sentences that
best cover the question's content words (rarity-weighted, lightly stemmed, prefix-matched), at most two, or
its opening when no word is shared (a Swahili question over English text). Another source joins only for
another part of a multi-part question ("..., and can I ...?") that the lead left unanswered; a single
question is answered from one source. Authoring metadata (a `Keywords:` line) is never a candidate.
Sentences keep their source's order so the answer reads naturally. An optional similarity hook (for
example embeddings) adds to the score.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from conversations.i18n import detect_language, phrase
from conversations.prompting import AssembledPrompt, Source
from conversations.providers.base import Provider, ProviderResult, TextDelta
from knowledge.retrieval.answer_types import (PREMISES_WORDS, answer_types, asks_about_the_business,
                                             asks_about_the_staff, asks_how_often, gives_detail, gives_history,
                                             gives_type, names_method, payment_methods_asked, question_pieces,
                                             reach_asked)
from knowledge.retrieval.sentences import content_terms, split_sentences, terms_match
from knowledge.retrieval.relevance import asks_where, message_parts, where_part

MODEL_NAME = "extractive-1"
SERVICES_KEY = "facts:services"  # conversations.facts.SERVICES_KEY (the provider reads no models)

# Similarity hook: (question, sentences) -> one score in [0, 1] per sentence.
Similarity = Callable[[str, list[str]], list[float]]

_INJECTION = re.compile(r"\b(ignore|disregard|forget)\b.{0,40}\b(instructions?|rules|prompt)\b|\bsystem\s+prompt\b|"
                        r"\bdeveloper\s+mode\b|\byou\s+are\s+now\b|\bas\s+an?\s+(ai|assistant|language\s+model)\b|"
                        r"\bpuuza\b.{0,40}\bmaagizo\b", re.I | re.S)

MAX_SENTENCES = 3
MAX_FACT_LINES = 8
CLOSE_TO_BEST = 0.6
# A quoted source this close by meaning to a question's best-matching source already speaks to that question.
PART_MARGIN = 0.05
# A sentence holding the kind of answer an English question asks for (an amount, a clock time, a duration) is
# lifted by this much: "how long before I get the card?" wants "takes 2 to 6 weeks", not the sentence sharing
# the most words.
TYPE_BONUS = 0.2


@dataclass(frozen=True)
class Candidate:
    source: Source
    position: int
    text: str


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    matched: frozenset[str]  # the question's content words (stemmed) this sentence contains
    coverage: float  # their rarity-weighted share of the question
    score: float  # coverage plus the optional similarity


def _reading_order(item: Scored) -> tuple:
    """Facts first, then sources in retrieval order, sentences in their own order."""
    candidate = item.candidate
    return candidate.source.kind != "facts", candidate.source.ref, candidate.position


@dataclass
class ExtractiveAnswer:
    """The composed text and which sources each citation number stands for."""

    text: str
    cited: list[tuple[int, Source, list[str]]] = field(default_factory=list)  # (number in text, source, quoted)


# ----------------------------------------------------------------------------- text helpers


@lru_cache(maxsize=256)
def _typed_asked(question: str) -> frozenset[str]:
    """The precise kinds of answer an English question asks for (an amount, a clock time, a duration, how often).
    Cached: scoring and picking the sentences both ask it in one turn."""
    if detect_language(question) != "en":
        return frozenset()
    typed = answer_types(question) & {"price", "time", "duration"}
    # "How long have you been in this trade?" asks since when, which "stop for up to 20 minutes" does not say.
    if asks_about_the_business(question):
        typed -= {"duration"}
    return frozenset(typed | ({"frequency"} if asks_how_often(question) else set()))


@lru_cache(maxsize=1)
def _premise_terms() -> frozenset[str]:
    """Words for the business's premises ("your shop", "the pharmacy"), as the answer compares words."""
    return frozenset(content_terms(" ".join(PREMISES_WORDS)))


@lru_cache(maxsize=1)
def _behind_terms() -> frozenset[str]:
    """"behind" as the answer compares words ("Who's behind the company?" asks who runs it)."""
    return frozenset(content_terms("behind"))


# The words that ask for a duration or a frequency: they are in every sentence saying how long something takes or
# how often ("alterations can take a day longer", "retwisting more often thins the roots"), so they pick none; what
# the answer must name is the rest of the question (the figure itself earns TYPE_BONUS).
_ASKING_WORDS = {"duration": "long take takes taking", "frequency": "often frequently regularly times"}


@lru_cache(maxsize=len(_ASKING_WORDS))
def _asking_terms(kind: str) -> frozenset[str]:
    """The words asking for that kind of answer, as the answer compares words."""
    return frozenset(content_terms(_ASKING_WORDS[kind]))


def _gives_the_place(item: Scored) -> bool:
    """A sentence giving a place, of a source the owner titled for the place ("Where to find us")."""
    return "place" in answer_types(item.candidate.source.title) and gives_type(item.candidate.text, "place")


def _with_the_kind_asked(picked: list[Scored], primary: list[Scored], typed: frozenset[str], *,
                         limit: int) -> list[Scored]:
    """The lead source's picked sentences, with its best sentence giving the kind of answer asked (a price, a
    duration, how often) when none of them gives it: "How often should a solar water heater be serviced?" is
    answered by "We recommend a service every 12 months", which shares one word with it, not by the sentences
    naming the heater twice. Only a sentence sharing a word with the question, so an unrelated price is not quoted."""
    if not typed or any(gives_type(s.candidate.text, name) for s in picked for name in typed):
        return picked
    giving = [s for s in primary if s.matched and s not in picked
              and any(gives_type(s.candidate.text, name) for name in typed)]
    if not giving:
        return picked
    found = max(giving, key=lambda s: (s.score, -s.candidate.position))
    return picked[:limit - 1] + [found] if len(picked) >= limit else picked + [found]


def matched_terms(question: set[str], terms: set[str]) -> frozenset[str]:
    """The question's terms that some term of a sentence matches."""
    return frozenset(q for q in question if q in terms or any(terms_match(q, t) for t in terms))


def _part_terms(part: set[str], weights: dict[str, float]) -> set[str]:
    """A part's own terms as matched against the whole question ("cancel" ~ "cancellation")."""
    return {q for q in weights if any(terms_match(q, t) or q == t for t in part)}


def _closest_ref(sources: Iterable[Source], piece: str) -> int:
    """The source retrieval measured closest to one question of the message (the earlier one on a tie)."""
    return max(sources, key=lambda source: (source.part_similarities.get(piece, float("-inf")), -source.ref)).ref


def question_parts(question: str) -> list[set[str]]:
    """The content terms of each question a message asks ("Where are you, and are you open on Sunday?")."""
    parts = [content_terms(piece) for piece in question_pieces(question)]
    return [part for part in parts if part]


def _normalized_words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", (text or "").lower())


class _Protected:
    """Word runs of the guardrail/behaviour sections, so a sentence copying six or more words is caught."""

    RUN = 6

    def __init__(self, bodies: list[str]):
        self.sections = [_normalized_words(body) for body in bodies]
        self._runs: dict[int, set[tuple[str, ...]]] = {}

    def _runs_of(self, size: int) -> set[tuple[str, ...]]:
        if size not in self._runs:
            self._runs[size] = {tuple(words[i:i + size]) for words in self.sections
                                for i in range(len(words) - size + 1)}
        return self._runs[size]

    def repeated_in(self, sentence: str) -> bool:
        words = _normalized_words(sentence)
        if not words or not self.sections:
            return False
        size = min(self.RUN, len(words))
        runs = self._runs_of(size)
        return any(tuple(words[i:i + size]) in runs for i in range(len(words) - size + 1))


# ----------------------------------------------------------------------------- the provider


class ExtractiveProvider(Provider):
    """Deterministic, offline answers quoted from the knowledge and facts, every sentence cited."""

    name = "extractive"
    model = MODEL_NAME

    def __init__(self, *, similarity: Similarity | None = None, max_sentences: int = MAX_SENTENCES):
        self.similarity = similarity
        self.max_sentences = max_sentences

    def candidates(self, prompt: AssembledPrompt) -> list[Candidate]:
        """Quotable sentences: knowledge and facts only, minus anything that echoes a core section."""
        protected = _Protected([section.body for section in prompt.core_sections])
        protected_keys = {section.key for section in prompt.core_sections}
        found: list[Candidate] = []
        seen: set[str] = set()
        for source in prompt.sources:
            if source.key in protected_keys:
                continue
            sentences = list(source.sentences) if source.kind == "facts" else split_sentences(source.body)
            for position, sentence in enumerate(sentences):
                marker = " ".join(_normalized_words(sentence))
                if not marker or marker in seen:
                    continue
                if _INJECTION.search(sentence) or protected.repeated_in(sentence):
                    continue
                if source.kind != "facts" and sentence.rstrip().endswith("?"):
                    continue  # an owner's heading ("How long will it take?") or aside ("Busy at work?") answers nothing
                seen.add(marker)
                found.append(Candidate(source=source, position=position, text=sentence))
        return found

    def score(self, prompt: AssembledPrompt, candidates: list[Candidate]) -> tuple[list[Scored], dict[str, float]]:
        """Per candidate: the question words it covers (stemmed), their rarity-weighted share of the question
        (`coverage`), and `score` = coverage + the optional similarity, rounded so ties are stable; plus each
        question word's share of the question."""
        # "Where is your pharmacy?" wants the address, not the sentence that repeats the business's name.
        # Nor does "Who are the vets at your clinic?" want the sentence naming the clinic, but the one naming the vets.
        staff = asks_about_the_staff(prompt.question)
        where = staff or asks_where(prompt.question)
        question = content_terms(prompt.question) - (_premise_terms() if where else frozenset())
        # "Who's behind the company?": "opened in 2009 by ..."; "Who are your vets?" names them instead
        history = not staff and asks_about_the_business(prompt.question)
        if history:
            question -= _behind_terms()  # who is behind it, not what stands behind a building
        typed = _typed_asked(prompt.question)
        for kind in typed & _ASKING_WORDS.keys():
            question -= _asking_terms(kind)  # "How long does it take to make a suit?": the suit must be named
        matches = [matched_terms(question, content_terms(candidate.text)) for candidate in candidates]
        # "Can I pay by card?" is answered by "Visa and Mastercard at reception": naming the way to pay asked
        # about matches the question's word for it.
        methods = payment_methods_asked(prompt.question)
        if methods:
            asked = frozenset(term for term in question if payment_methods_asked(term))
            matches = [matched | asked if names_method(candidate.text, methods) else matched
                       for matched, candidate in zip(matches, candidates)]
        total = len(candidates)
        frequency: dict[str, int] = {}
        for matched in matches:
            for term in matched:
                frequency[term] = frequency.get(term, 0) + 1
        weights = {term: math.log(1 + (total + 1) / (frequency.get(term, 0) + 0.5)) for term in question}
        question_weight = sum(weights.values()) or 1.0
        similarities = self.similarity(prompt.question, [c.text for c in candidates]) if self.similarity else None
        detail = reach_asked(prompt.question)  # "What is your phone number?" wants the sentence holding it
        scored = []
        for index, candidate in enumerate(candidates):
            matched = matches[index]
            coverage = round(sum(weights[t] for t in matched) / question_weight, 4)
            value = coverage + (0.5 * max(0.0, similarities[index]) if similarities is not None else 0.0)
            if typed and any(gives_type(candidate.text, name) for name in typed):
                value += TYPE_BONUS
            if detail and gives_detail(candidate.text, detail) or where and gives_type(candidate.text, "place"):
                value += TYPE_BONUS
            if history and gives_history(candidate.text):
                value += TYPE_BONUS
            scored.append(Scored(candidate=candidate, matched=matched, coverage=coverage, score=round(value, 4)))
        # Shares among the words the knowledge can answer at all, so a word nothing mentions does not make
        # every other word look less important when deciding whether a second source adds anything.
        answerable = {term: weight for term, weight in weights.items() if frequency.get(term)}
        answerable_weight = sum(answerable.values()) or 1.0
        return scored, {term: weight / answerable_weight for term, weight in answerable.items()}

    def select(self, prompt: AssembledPrompt) -> list[Candidate]:
        """Fact lines that match the question; then the best sentences of retrieval's top source; then one
        sentence from another source only where it covers question words the others did not."""
        candidates = self.candidates(prompt)
        if not candidates:
            return []
        scored, weights = self.score(prompt, candidates)
        facts = [s for s in scored if s.candidate.source.kind == "facts"]
        knowledge = [s for s in scored if s.candidate.source.kind != "facts"]
        chosen: list[Scored] = []
        if facts:
            # Facts arrive narrowed to the question (conversations/facts.py). Service lines are still matched
            # to its words (a caller may pass the whole list): the best ones, or all when none shares a word
            # ("what do you offer?"). Hours lines are the days asked about, or today and the week, and
            # "when are you open?" shares no word with "Monday to Friday: 09:00-17:00": all are kept.
            services = [s for s in facts if s.candidate.source.key == SERVICES_KEY]
            best = max((s.coverage for s in services), default=0)
            matching = [s for s in services if best > 0 and s.coverage >= best * CLOSE_TO_BEST] or services
            kept = matching + [s for s in facts if s.candidate.source.key != SERVICES_KEY]
            chosen += sorted(kept, key=_reading_order)[:MAX_FACT_LINES]
            # Beside the facts, knowledge only where it speaks to the question; a part asking only where the
            # business is shares no word with the address that answers it.
            place = where_part(prompt.question) is not None
            # With a place part, the facts answer the rest: a sentence repeating only their words ("we open at
            # 10:00 on public holidays" beside Saturday's hours) is not kept.
            told = frozenset().union(*(s.matched for s in chosen)) if place else frozenset()
            knowledge = [s for s in knowledge if s.matched - told or place and _gives_the_place(s)]
        room = self.max_sentences - (1 if chosen else 0)
        if knowledge and room > 0:
            # Retrieval ranked the sources with more signals than word overlap: its top source leads (letting
            # word overlap pick the lead instead cited a relevant source less often in bench/shaping_quality.py).
            top_ref = min(s.candidate.source.ref for s in knowledge)
            primary = [s for s in knowledge if s.candidate.source.ref == top_ref]
            best = max(s.score for s in primary)
            if best > 0:
                picked = sorted((s for s in primary if s.score >= best * CLOSE_TO_BEST),
                                key=lambda s: (-s.score, s.candidate.position))[:min(2, room)]
                picked = _with_the_kind_asked(picked, primary, _typed_asked(prompt.question), limit=min(2, room))
            else:
                # No word in common (often a Swahili question over English text): quote the opening.
                picked = sorted(primary, key=lambda s: s.candidate.position)[:min(2, room)]
            picked += self._other_parts(prompt, knowledge, picked, weights, room=room - len(picked),
                                        top_ref=top_ref)
            picked += self._parts_by_meaning(knowledge, picked, weights, room=room - len(picked), top_ref=top_ref)
            chosen += picked
        return [s.candidate for s in sorted(chosen, key=self._asked_order(prompt, chosen, weights))]

    @staticmethod
    def _asked_order(prompt: AssembledPrompt, chosen: list[Scored], weights: dict[str, float]):
        """The sort key that reads a multi-part answer in the order the questions were asked: facts first, then
        each quoted source at the question it answers. The lead source goes with the question it is closest
        to by meaning (retrieval's part_similarities); another source moves there only when no retrieved
        source is closer to that question, else it follows the lead (a weak match should not open the answer).
        Sources retrieval did not measure go by words. A single question keeps retrieval order."""
        quoted = {item.candidate.source.ref: item.candidate.source for item in chosen
                  if item.candidate.source.kind != "facts"}
        pieces = question_pieces(prompt.question)
        if len(quoted) < 2 or len(pieces) < 2:
            return _reading_order
        lead = min(quoted)
        measured = [source for source in prompt.sources if source.part_similarities]
        closest = {piece: _closest_ref(measured, piece) for piece in pieces
                   if any(piece in source.part_similarities for source in measured)}
        part_terms = [_part_terms(content_terms(piece), weights) for piece in pieces]
        asked: dict[int, int] = {}
        for ref, source in quoted.items():
            similarity = source.part_similarities
            if any(piece in similarity for piece in pieces):
                index = max((i for i, piece in enumerate(pieces) if piece in similarity),
                            key=lambda i: (similarity[pieces[i]], -i))
                asked[ref] = index if ref == lead or closest.get(pieces[index]) == ref else len(pieces)
                continue
            matched = frozenset().union(*(item.matched for item in chosen if item.candidate.source.ref == ref))
            overlap = [sum(weights.get(t, 0.0) for t in terms & matched) for terms in part_terms]
            asked[ref] = max(range(len(pieces)), key=lambda i: (overlap[i], -i)) if any(overlap) else len(pieces)

        def key(item: Scored) -> tuple:
            candidate = item.candidate
            if candidate.source.kind == "facts":
                return (0, 0) + _reading_order(item)
            return (1, asked[candidate.source.ref]) + _reading_order(item)
        return key

    @staticmethod
    def _other_parts(prompt: AssembledPrompt, knowledge: list[Scored], picked: list[Scored],
                     weights: dict[str, float], *, room: int, top_ref: int) -> list[Scored]:
        """For a message that asks several things, the best sentence of another source for each part the
        lead source left unanswered; a single question gets nothing more (a second source there was most
        often a sentence that does not answer it)."""
        parts = question_parts(prompt.question)
        used = {top_ref}
        extra: list[Scored] = []
        if room > 0 and len(message_parts(prompt.question)) > 1 and where_part(prompt.question) is not None:
            # "..., and where are you?" has no word to match: the place snippet's address answers it.
            found = next((s for s in knowledge if s.candidate.source.ref not in used and _gives_the_place(s)), None)
            if found is not None:
                extra.append(found)
                used.add(found.candidate.source.ref)
        if len(parts) < 2 or room <= len(extra):
            return extra
        covered = set().union(*(s.matched for s in picked)) if picked else set()
        for part in parts:
            terms = _part_terms(part, weights)
            if not terms or len(extra) >= room:
                continue
            part_weight = sum(weights[t] for t in terms)
            if sum(weights[t] for t in terms & covered) >= part_weight / 2:
                continue  # the lead source already speaks to this part
            best = None
            for item in knowledge:
                if item.candidate.source.ref in used:
                    continue
                gain = sum(weights[t] for t in (item.matched & terms) - covered)
                if gain >= part_weight / 2 and (best is None or gain > best[0]):
                    best = (gain, item)
            if best is not None:
                extra.append(best[1])
                covered |= best[1].matched
                used.add(best[1].candidate.source.ref)
        return extra

    @staticmethod
    def _parts_by_meaning(knowledge: list[Scored], picked: list[Scored], weights: dict[str, float], *, room: int,
                          top_ref: int) -> list[Scored]:
        """For each question of the message that no quoted source is close to by meaning (retrieval's
        part_similarities), the best sentence of the source closest to it. The lead source answers the
        question it is closest to."""
        # Sources retrieval measured (a document chunk or a snippet still waiting for its vector was not).
        sources = {item.candidate.source.ref: item.candidate.source for item in knowledge
                   if item.candidate.source.part_similarities}
        pieces = list(sources[top_ref].part_similarities) if top_ref in sources else []
        if len(pieces) < 2 or room <= 0:
            return []
        lead_piece = max(pieces, key=lambda piece: sources[top_ref].part_similarities[piece])
        used = {item.candidate.source.ref for item in picked}
        extra: list[Scored] = []
        for piece in pieces:
            if piece == lead_piece or len(extra) >= room:
                continue
            similarity = {ref: source.part_similarities.get(piece, 0.0) for ref, source in sources.items()}
            best_ref = _closest_ref(sources.values(), piece)
            if any(similarity.get(ref, 0.0) >= similarity[best_ref] - PART_MARGIN for ref in used):
                continue
            terms = _part_terms(content_terms(piece), weights)
            quoted = max((item for item in knowledge if item.candidate.source.ref == best_ref),
                         key=lambda item: (sum(weights[t] for t in item.matched & terms), item.score,
                                           -item.candidate.position))
            extra.append(quoted)
            used.add(best_ref)
        return extra

    def compose(self, prompt: AssembledPrompt) -> ExtractiveAnswer:
        """Build the answer text; citation numbers are renumbered 1..n in order of appearance."""
        picked = self.select(prompt)
        language = prompt.language
        if not picked:
            return ExtractiveAnswer(text=phrase("nothing_found", language=language))
        numbers: dict[int, int] = {}
        quoted: dict[int, list[str]] = {}
        lines: list[str] = []
        for candidate in picked:
            number = numbers.setdefault(candidate.source.ref, len(numbers) + 1)
            quoted.setdefault(candidate.source.ref, []).append(candidate.text)
            lines.append(f"{candidate.text.rstrip()} [{number}]")
        only_facts = all(c.source.kind == "facts" for c in picked)
        intro = phrase("found_facts" if only_facts else "found", language=language)
        if language == "sw" and any(c.source.kind != "facts" and detect_language(c.text) != "sw" for c in picked):
            intro = f"{intro} {phrase('source_language_note', language=language)}"
        if len(lines) >= 3:
            text = intro + "\n" + "\n".join(f"- {line}" for line in lines)
        else:
            text = f"{intro} " + " ".join(lines)
        by_ref = {source.ref: source for source in prompt.sources}
        cited = [(number, by_ref[ref], quoted[ref]) for ref, number in numbers.items()]
        return ExtractiveAnswer(text=text, cited=cited)

    def generate(self, prompt: AssembledPrompt, *, meter=None) -> ProviderResult:
        answer = self.compose(prompt)
        return ProviderResult(text=answer.text, provider=self.name, model=self.model, stop_reason="end")

    def stream(self, prompt: AssembledPrompt, *, meter=None) -> Iterator[TextDelta | ProviderResult]:
        result = self.generate(prompt)
        yield from (TextDelta(text=piece) for piece in chunk_text(result.text))
        yield result


def chunk_text(text: str, *, words: int = 4) -> list[str]:
    """Split text into small deltas (a few words, whitespace kept) so streaming looks like streaming."""
    pieces = re.findall(r"\S+\s*", text)
    if text[: len(text) - len(text.lstrip())]:
        pieces.insert(0, text[: len(text) - len(text.lstrip())])
    return ["".join(pieces[i:i + words]) for i in range(0, len(pieces), words)] or [text]


def embedding_similarity(question: str, sentences: Sequence[str]) -> list[float]:
    """Cosine similarity via the deployment's embedder (vectors are unit-normalised), rounded for determinism."""
    from knowledge.embeddings import embed_cached, embed_query

    if not sentences:
        return []
    query = embed_query(question)
    vectors = embed_cached(list(sentences))
    return [round(sum(a * b for a, b in zip(query, vector)), 3) for vector in vectors]
