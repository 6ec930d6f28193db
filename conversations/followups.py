"""Reading a turn with the session's recent turns: elliptical follow-ups and contact details for a hand-off.

A customer's second message often only makes sense with the first: "and for an SUV?", "how much is it?",
"what about Sunday?", or a bare phone number after the bot asked for one. Two things are decided here, from
the turns already stored in the session (no model, no provider call):

- `read_with_topic`: whether a message is elliptical (it opens with a continuation such as "and" / "what
  about" / "na ... je?", or points back with "it" / "that day" and says little else), and if so the text it
  is read as: the last topic plus this message. Retrieval, facts and the extractive answer read that text;
  an LLM gets the raw message plus the recent turns as data.
- `pending_contact`: the hand-off whose contact the bot asked for in a recent turn and has not got yet, and
  `contact_in` the phone, e-mail or name a message gives for it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property

from django.db.models import Q
from django.utils import timezone

from conversations.facts import (Facts, ServiceFact, asks_duration, asks_price, content_words, kind_words,
                                 match_services, named_services, past_bounds, resolve_dates, rows_named_in, singular)
from conversations.handoffs import CONTACT_PATTERNS, extract_contacts
from conversations.i18n import detect_language
from conversations.models import HandoffRequest, HandoffStatus, Session, Turn
from knowledge.models import SnippetVersion
from knowledge.retrieval.answer_types import asks_about_the_business, asks_only_a_figure
from knowledge.retrieval.language import english_reading, stem, swahili_numerals

RECENT_TURNS = 3  # what an LLM sees of the conversation, and how far back a topic or a pending hand-off is
TOPIC_MAX_AGE = timedelta(hours=2)  # an "and on Sunday?" after a long silence starts a new topic
TOPIC_MAX_PIECES = 2  # a chain of follow-ups keeps the last two customer messages as its topic
TOPIC_ROWS = 3  # the most rows a topic's question may name for "how much?" to ask each of their prices
HISTORY_CHARS = 500  # per message in the prompt: enough to know the topic, not a transcript

# Openers that continue the previous question (English, Swahili, WhatsApp spelling).
_OPENER = re.compile(
    r"^\s*(?:and|also|or|but|plus|so|then|n|&|what about|how about|wat about|what if|same (?:for|with)"
    r"|(?:is|was|will|would) (?:it|that|this|the price) (?:be )?(?:the )?same|does (?:it|that|this) (?:also )?apply"
    r"|na|pia|au|halafu|vipi kuhusu|je kuhusu|na je)\b", re.I)
# Swahili "na ya vipande vitatu je?": a trailing "je" marks the question as a follow-up.
_TRAILING_JE = re.compile(r"\bje\s*[?!.]*\s*$", re.I)
# Words that point back to something said before.
_ANAPHORA = frozenset("""
it its they them their that this those these one ones there then same he she him her his
yake yao hiyo hicho hilo hizo huo hao hapo huyo yeye hivyo
""".split())
# Function words, question words and fillers: what is left is the message's own topic.
_FUNCTION = frozenset("""
a an the and or but so then also too as at by for from in into of on to with about over under than
is are was were be been being am do does did done have has had having will would can could should shall
may might must i me my we us our you your yr u ur what whats what's which who whom whose when where why how
much many any some no not yes if else just only really very please pls kindly thanks ok okay
get got go going come coming there here now today still same more less extra
na ya wa za la cha vya kwa ni je pia au kama sasa gani nini ngapi vipi wapi lini
""".split())
_WORD = re.compile(r"[a-zà-ÿ0-9']+", re.I)
# "Is there a discount?", "there are showers": an existential "there" points at nothing said before.
_EXISTENTIAL_THERE = re.compile(r"\b(?:is|are|was|were|isn't|aren't|will|would)\s+there\b"
                                r"|\bthere(?:\s+(?:is|are|was|were)\b|'s\b)", re.I)
# A bare message ("inauma?", "price?", "how much?") has no question of its own; "Do you do pedicures?" has.
BARE_WORDS = 2
# A Swahili verb opening the message with a subject prefix for "it", "they" (things) or "he/she" carries the
# pronoun English writes as a word: "inachukua muda gani?" is "how long does it take?", "atakuja saa ngapi?"
# "when will he come?".
_SW_SUBJECT_VERB = re.compile(r"^(?:ha)?(?:in|it|im|il|zin|zit|zim|an|at|am)[a-z]{4,}$")


@dataclass(frozen=True)
class PriorTurn:
    """One earlier turn of the session, as the follow-up rules and the prompt read it."""

    message: str
    answer: str
    intent: str
    read_as: str  # the text the turn was read as (its own message, or topic + message for a follow-up)
    refused: bool
    handoff_id: int | None  # a hand-off whose contact this turn asked for and has not got
    created_at: object = None
    cited: tuple[tuple[str, int], ...] = ()  # the snippet versions its answer cited (key, version)

    @cached_property
    def cited_texts(self) -> list[str]:
        """The title and body of each snippet version its answer cited (read once per turn, however often asked)."""
        if not self.cited:
            return []
        wanted = Q()
        for key, version in self.cited:
            wanted |= Q(key=key, version=version)
        return [f"{title}. {body}" for title, body in SnippetVersion.objects.filter(wanted)
                .values_list("title", "body")]


@dataclass(frozen=True)
class SessionContext:
    """The recent turns of a session, newest last."""

    turns: tuple[PriorTurn, ...] = ()

    @property
    def topic(self) -> PriorTurn | None:
        """The last turn that asked about something (not small talk, not a contact reply)."""
        for turn in reversed(self.turns):
            if turn.intent in ("greeting", "thanks") or turn.read_as == "":
                continue
            return turn
        return None

    def history(self) -> list[dict]:
        """The recent turns as data for a prompt: [{customer, assistant}], oldest first."""
        return [{"customer": turn.message[:HISTORY_CHARS], "assistant": turn.answer[:HISTORY_CHARS]}
                for turn in self.turns]


@dataclass(frozen=True)
class Reading:
    """How a message is read: alone, or as a follow-up of the last topic."""

    text: str  # what retrieval, facts and the extractive answer read
    followup: bool = False
    topic: str = ""  # the earlier text it was joined to
    reasons: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ContactReply:
    """What a message gives for a pending hand-off: a phone or e-mail, a name, or both."""

    contact: str = ""
    name: str = ""

    @property
    def empty(self) -> bool:
        return not self.contact and not self.name


# ----------------------------------------------------------------------------- reading the session


def session_context(*, session: Session, now=None) -> SessionContext:
    """The session's last few turns (within TOPIC_MAX_AGE of now), oldest first."""
    if session.pk is None or not session.turn_count:
        return SessionContext()
    since = (now or timezone.now()) - TOPIC_MAX_AGE
    rows = list(Turn.objects.filter(session=session, created_at__gte=since)
                .order_by("-created_at", "-id")
                .values("message", "answer", "intent", "refusal_reason", "meta", "created_at",
                        "citations")[:RECENT_TURNS])
    turns = []
    for row in reversed(rows):
        meta = row["meta"] or {}
        # A contact reply is no topic; a follow-up's topic is what it was read as, so chains stay on it.
        read_as = "" if "handoff_contact" in meta else ((meta.get("followup") or {}).get("read_as") or row["message"])
        turns.append(PriorTurn(message=row["message"], answer=row["answer"], intent=row["intent"], read_as=read_as,
                               refused=bool(row["refusal_reason"]), handoff_id=meta.get("awaiting_contact"),
                               created_at=row["created_at"], cited=_cited_snippets(row["citations"])))
    return SessionContext(turns=tuple(turns))


def _cited_snippets(citations) -> tuple[tuple[str, int], ...]:
    """The snippet versions a stored answer cited (facts rows and document chunks are not snippets)."""
    return tuple((c["key"], c["version"]) for c in citations or () if c.get("source") == "snippet")


# ----------------------------------------------------------------------------- elliptical questions


def words_of(text: str) -> list[str]:
    return [word.strip("'") for word in _WORD.findall((text or "").lower()) if word.strip("'")]


def own_words(text: str) -> list[str]:
    """The message's content words: what is left without function words and words that point back."""
    return [word for word in words_of(text) if word not in _FUNCTION and word not in _ANAPHORA]


# How much of something a price question asks for ("how much per day?", "how much each?", "bei kwa mtu mmoja?"):
# a unit names no topic of its own.
_QUANTITY_WORDS = frozenset("""
per each every one piece pieces day days night nights hour hours week weeks month months person people head
kila moja mmoja kimoja siku usiku saa wiki mwezi mtu watu kipande
""".split())


def asks_only_for_a_unit(message: str) -> bool:
    """A price or duration question naming nothing but a unit ("how much per day?"): it asks about the topic."""
    if not (asks_price(message) or asks_duration(message)):
        return False
    own = [word for word in own_words(message) if not word.isdigit()]
    # the asking words themselves ("bei", "price") are no topic either
    rest = [word for word in own if word not in _QUANTITY_WORDS and not asks_price(word) and not asks_duration(word)]
    return any(word in _QUANTITY_WORDS for word in own) and not rest


def elliptical_reasons(message: str) -> tuple[str, ...]:
    """Why a message cannot be read alone (empty when it can)."""
    if asks_about_the_business(message):
        return ()  # "and who's behind the spa?" asks about the business, whatever was asked before
    reasons = []
    if _OPENER.search(message):
        reasons.append("continues")
    if _TRAILING_JE.search(message):
        reasons.append("trailing_je")
    if asks_only_for_a_unit(message):
        reasons.append("unit_only")
    elif asks_only_a_figure(message):
        reasons.append("figure_only")
    words = words_of(_EXISTENTIAL_THERE.sub(" is ", message))
    if any(word in _ANAPHORA for word in words) and len(own_words(message)) <= 3:
        reasons.append("points_back")
    elif words and _SW_SUBJECT_VERB.match(words[0]) and len(own_words(message)) <= 3 \
            and detect_language(message) == "sw":
        reasons.append("points_back")
    return tuple(reasons)


def is_short(message: str) -> bool:
    """A bare word or two ("inauma?", "price?", "how much?"): no topic of its own (read with the last one if it
    fails).

    Two content words already make a question of their own ("email receipt?"), and so does
    a question frame around one ("Do you do pedicures?"): reading those with the last topic turned refusals
    into answers about that topic.
    """
    return len(own_words(message)) <= 1 and len(words_of(message)) <= BARE_WORDS


def asks_its_own_question(message: str) -> bool:
    """More than two content words: a follow-up that says what it asks ("can the driver come that day?").

    Its intent is its own, while its retrieval still reads the topic ("that day"); a bare "what about
    Sunday?" takes the intent of the question it follows.
    """
    return len(own_words(message)) > 2


def join_topic(topic: PriorTurn, message: str) -> str:
    """The topic's text and this message, keeping only the last TOPIC_MAX_PIECES customer messages."""
    pieces = [piece for piece in topic.read_as.split("\n") if piece.strip()][-(TOPIC_MAX_PIECES - 1):]
    return "\n".join([*pieces, message.strip()])


def read_with_topic(*, message: str, context: SessionContext) -> Reading:
    """The message read alone, or, when it is elliptical or asks about a detail of the last answer's sources,
    read with the last topic."""
    topic = context.topic
    if topic is None:
        return Reading(text=message)
    reasons = elliptical_reasons(message) or (("detail_of_topic",) if asks_a_detail(message, topic) else ())
    if not reasons:
        return Reading(text=message)
    return Reading(text=join_topic(topic, message), followup=True, topic=topic.read_as, reasons=reasons)


# A follow-up that says what it asks in a few words, every one of them in the snippets the last answer quoted
# ("Do you hire out concrete mixers?" then "what deposit do I leave?", answered from a hire snippet that names
# its deposit), asks about that: read alone, its words find a neighbour (the deposit for special orders).
DETAIL_MAX_WORDS = 3
# Verbs of asking and needing carry no topic of their own ("do I need to bring my own gloves?").
_ASKING_VERBS = frozenset("need needs want know tell give let like able allowed possible".split())


def asks_a_detail(message: str, topic: PriorTurn) -> bool:
    """Whether a short message's own words all appear in what the topic's answer cited (so it asks about it)."""
    if topic.refused or not topic.cited or detect_language(message) == "sw" or asks_about_the_business(message):
        return False
    words = {singular(word) for word in own_words(message) if word not in _ASKING_VERBS and not word.isdigit()}
    if not words or len(words) > DETAIL_MAX_WORDS:
        return False
    cited = {singular(word) for text in topic.cited_texts for word in words_of(text)}
    return words <= cited


def read_refused_with_topic(*, message: str, context: SessionContext) -> Reading | None:
    """A second reading, with the last topic, for a message nothing answers alone (None without a topic).

    "Do you test borehole water?" then "how long before I get the results?": alone, "results" of what? With the
    topic it finds the testing snippet. Whether that second answer is kept is `answers_new_words`.
    """
    topic = context.topic
    if topic is None:
        return None
    return Reading(text=join_topic(topic, message), followup=True, topic=topic.read_as,
                   reasons=("short",) if is_short(message) else ("refused_alone",))


def _stems(text: str) -> set[str]:
    """The stems of a text's words, Swahili read through the glossary too."""
    words = words_of(text)
    if detect_language(text) == "sw":
        words += words_of(english_reading(text))
    return {stem(singular(word)) for word in words if len(word) > 2}


# Words that frame a question rather than say its topic ("how long before ...", "does it usually ...").
_FRAME_WORDS = frozenset("long before after usually ever".split())


def new_words(message: str, topic: str) -> set[str]:
    """The stems of the message's content words that its topic did not say: what the follow-up adds."""
    own = " ".join(word for word in own_words(message)
                    if word not in _ASKING_VERBS and word not in _FRAME_WORDS and not word.isdigit())
    return _stems(own) - _stems(topic)


def answers_new_words(reading: Reading, message: str, snippets) -> bool:
    """Whether an answer to a message read with its topic speaks to everything the message adds.

    A bare word or two ("inauma?") is about the topic by its nature. A longer message refused alone is kept only
    when the first source of its second answer says every word the message adds ("when do entries close?" after
    exam boards: a snippet saying entries close 6 weeks ahead), so a new question nothing answers ("is there a
    discount if I pay cash?" after payment methods) is not answered with the topic's snippet.
    """
    if "short" in reading.reasons:
        return True
    if not snippets:
        return False
    return new_words(message, reading.topic) <= _stems(f"{snippets[0].title}. {snippets[0].body}")


def topic_service(context: SessionContext, services: list[ServiceFact]) -> tuple[str, ...]:
    """The one service or product the customer's own question mentioned; else the one the last topic's answer,
    or the snippets it cited, name in full; else the few the question named.

    "Mnafundisha pikipiki?" is answered from the course snippet, which says "Motorcycle Course (Class A)";
    "bei yake ni ngapi?" then asks that row's price. Text naming several rows names no one topic, and
    words merely shared with a name ("week", "class") do not count: only the name as the owner wrote it.
    "Do you sell floodlights that come on at night?" answered from a lighting snippet that names no row:
    "how much is it?" asks the one row the question itself matched ("LED Floodlight 50W"), or the few it named.
    """
    topic = context.topic
    if topic is None or topic.refused or not topic.answer:
        return ()
    # One row the customer's own question mentioned is what they asked about ("Mnauza battery ya pikipiki?": the
    # battery, though the snippet that answered names the wiring diagnosis in full).
    own = match_services(topic.message, services)
    if len(own) == 1:
        return tuple(own)
    texts = [topic.answer, *topic.cited_texts]
    names = rows_named_in(" ".join(texts), services)
    if names:
        return tuple(names) if len(names) == 1 else ()
    # Nothing names a row in full, but the snippet that answered may describe one ("glasses bought elsewhere...
    # screw tightening and new nose pads... KES 300": the Frame Repair row, not every row saying "glasses").
    described = row_described(topic.cited_texts, services)
    if described:
        return (described,)
    # The customer's own words may name a few rows of one kind ("Do you sell boxes?": the moving box and the
    # wardrobe box): "how much?" asks each of their prices.
    return tuple(own) if len(own) <= TOPIC_ROWS else ()


# A row is the one the cited text describes when it shares this many content words with it, twice as many as any
# other row does, and this many of its name's kind words.
DESCRIBED_MIN_WORDS = 3
DESCRIBED_MARGIN = 2
DESCRIBED_NAME_WORDS = 2


def row_described(texts: list[str], services: list[ServiceFact]) -> str | None:
    """The one row the texts describe: most shared content words by a clear margin, and its name's words used."""
    said = content_words(" ".join(texts))
    if not said or not services:
        return None
    scored = sorted(((len(content_words(f"{row.name} {row.description}") & said), row.name) for row in services),
                    reverse=True)
    best, name = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else 0
    if best < DESCRIBED_MIN_WORDS or best < DESCRIBED_MARGIN * runner_up:
        return None
    # ...and the text says what the row is, not only how it is sold ("per event", "staff included"): two of
    # the words of its name that name a kind of thing ("screw", "nose pads" for the Frame Repair row).
    return name if len(kind_words(name) & said) >= DESCRIBED_NAME_WORDS else None


def variant_asked(message: str, topic_names: tuple[str, ...], services: list[ServiceFact], *,
                  common: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The rows a follow-up's own words name that are of the topic row's kind: "and a 12 kg box?" after the price of
    "Upcountry Parcel 2 to 10 kg" asks the 10-to-20 kg one's, "na za varifocal je?" after photochromic lenses the
    varifocal ones'. Empty when its words name no such row (it asks about the topic's). `common`: the business's
    own words (facts.business_words), which say nothing of a row's kind."""
    if not topic_names:
        return ()
    # The business's own words name no kind ("water" at a water seller: tank cleaning and bowser delivery differ),
    # unless the topic's name has no other ("Upcountry Parcel" at a courier sending upcountry parcels).
    kinds = frozenset().union(*(kind_words(name) for name in topic_names))
    kinds = (kinds - common) or kinds
    return tuple(name for name in named_services(message, services, common=common)
                 if name not in topic_names and kind_words(name) & kinds)


# ----------------------------------------------------------------------------- narrowing facts to this turn

_RANGE = re.compile(r"\b(\d+(?:[.,]\d+)*)\s*(?:to|-|–)\s*(\d+(?:[.,]\d+)*)\b")


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _name_overlap(name: str, words: set[str], numbers: list[float]) -> int:
    name_words = {singular(word) for word in words_of(name)}
    overlap = len(name_words & words)
    # "iPhone 13" is in "iPhone 12 to 15": a number inside a range the name gives counts as a match.
    for low, high in ((_number(a), _number(b)) for a, b in _RANGE.findall(name)):
        if low is not None and high is not None and any(low <= n <= high for n in numbers):
            overlap += 1
    return overlap


def narrow_to_message(names: list[str], *, message: str, descriptions: dict[str, str] | None = None) -> list[str]:
    """Of the services matched for topic + message, those this message's own words pick out (all if none do).

    Swahili numbers count as figures: "na ya vipande vitatu je?" picks the 3-piece row. Among rows the name's words
    tie, a description's words pick (`descriptions`: name -> description): "and a 5x6 one?" picks the row "for a
    4x6, 5x6 or 6x6 mattress".
    """
    if detect_language(message) == "sw":
        message = swahili_numerals(message)
    message = past_bounds(message)  # "and beyond 200?" asks the 201-300 row
    words = {singular(word) for word in own_words(message)}  # "and the chairs?" picks "Plastic Chair"
    if not names or not words:
        return names
    numbers = [n for n in (_number(w) for w in words if w[:1].isdigit()) if n is not None]
    # The name's words first; among rows they tie, the description's (a size it lists: "3.5x6" is one size).
    asked = content_words(message) - _FUNCTION - _ANAPHORA
    scores = {name: (_name_overlap(name, words, numbers),
                     len(asked & content_words((descriptions or {}).get(name, "")))) for name in names}
    best = max(scores.values())
    if best == (0, 0):
        return names
    return [name for name in names if scores[name] == best]


def narrow_facts(facts: Facts, *, message: str) -> None:
    """Facts looked up with the topic, narrowed to the rows and days this message itself names (in place)."""
    if facts.matched_services:
        facts.matched_services = narrow_to_message(facts.matched_services, message=message,
                                                   descriptions={s.name: s.description for s in facts.services})
    own_days = {day for day, _ in resolve_dates(message, today=facts.today)}
    if own_days and any(day.date in own_days for day in facts.days):
        facts.days = [day for day in facts.days if day.date in own_days]


# ----------------------------------------------------------------------------- contact for a hand-off

_NAME_CUE = re.compile(
    r"\b(?:my name is|my name's|name is|name:|i am|i'm|im|this is|it's|its|call me|jina langu ni|jina ni|naitwa"
    r"|mimi ni|ni mimi|name|jina)\s+([a-zà-ÿ'-]+(?:\s+[a-zà-ÿ'-]+){0,2})", re.I)
# How a contact is introduced ("my number is", "call me on", "namba yangu ni"): not a question of its own.
_CONTACT_CUE = re.compile(
    r"\b(?:(?:my|our) (?:phone |mobile |cell |whatsapp )?(?:number|no|contact|phone|email|e-mail)(?: is)?"
    r"|(?:call|reach|text|ring) (?:me|us)(?: on| at)?|here is|here's|you can use|namba (?:yangu|ya simu)(?: ni)?"
    r"|simu yangu(?: ni)?|nipigie(?: kwa)?|nitumie(?: kwa)?"
    r"|(?:please |pls |kindly )?call (?:me|us) back(?: asap| soon| please)?|asap|urgent|tupigie)\b", re.I)
# Words that follow "I'm" / "it's" without being a name ("I'm in Kilimani", "it's fine").
_NOT_NAMES = frozenset("""
in at from on not no going coming here there available free busy fine ok okay good sorry late away back urgent
waiting again me please pls asap
asking looking interested calling sure new a an the very so still also just only ready done home out
""".split())


def pending_contact(*, context: SessionContext, channel: str) -> HandoffRequest | None:
    """The hand-off a recent turn asked a contact for, if it still has no phone or e-mail."""
    for turn in reversed(context.turns):
        if turn.handoff_id:
            handoff = HandoffRequest.objects.filter(pk=turn.handoff_id).first()
            if handoff is not None and not has_reachable_contact(handoff.contact):
                return handoff
            return None
    return None


def recent_handoff(*, session: Session, now=None) -> HandoffRequest | None:
    """The session's latest open hand-off of the last TOPIC_MAX_AGE, if any (one staff closed is no longer open)."""
    if session.pk is None:
        return None
    since = (now or timezone.now()) - TOPIC_MAX_AGE
    return (HandoffRequest.objects.filter(session=session, created_at__gte=since,
                                          status__in=(HandoffStatus.NEW, HandoffStatus.CONTACTED))
            .order_by("-created_at").first())


def has_reachable_contact(contact: str) -> bool:
    """A phone number or an e-mail address (a name alone does not let the team call back)."""
    return bool(extract_contacts(contact or ""))


def contact_in(message: str) -> ContactReply:
    """The phone/e-mail and the name a message gives (each may be empty)."""
    contact = ", ".join(extract_contacts(message))
    name = ""
    match = _NAME_CUE.search(message)
    if match:
        words = []
        for word in match.group(1).split():
            if word.lower() in _NOT_NAMES or word.lower() in _FUNCTION:
                break
            words.append(word)
        name = " ".join(word[:1].upper() + word[1:] for word in words)
    elif "?" not in message:
        # A bare "Wanjiru Kamau" answers "what is your name?", alone or beside the number ("0712 345 678,
        # Wanjiru"): capitalised words only, no question.
        name = _bare_name(_without_contacts(message))
    return ContactReply(contact=contact[:200], name=name[:100])


def _without_contacts(text: str) -> str:
    for pattern in CONTACT_PATTERNS:
        text = pattern.sub(" ", text)
    return text


def _bare_name(text: str) -> str:
    """One to three capitalised words that are not request words ("Wanjiru Kamau"), or two such names joined
    ("Wanjiru and Kevin", "Wanjiru na Kevin": a couple writing together), else ""."""
    text = text.strip(" ,.;:!-")
    people = _JOINED_NAMES.split(text)
    if len(people) <= 2 and all(_one_name(person) for person in people):
        return " ".join(text.split())
    return ""


_JOINED_NAMES = re.compile(r"\s+(?:and|na|&)\s+")


def _one_name(text: str) -> bool:
    """One to three capitalised words, none of them a request or function word."""
    words = text.split()
    return (1 <= len(words) <= 3 and all(re.fullmatch(r"[A-ZÀ-Þ][a-zà-ÿ'-]+", word) for word in words)
            and not any(word.lower() in _FUNCTION or word.lower() in _NOT_NAMES for word in words))


def gives_only_who(message: str) -> bool:
    """Whether a message gives nothing but a contact and a name (which say nothing of its language)."""
    reply = contact_in(message)
    return bool(reply.contact or reply.name) and not rest_of_message(message, reply)


# A question or a request for information: a question mark, a question word or an asking opener. A statement
# ("It's for my mum in Kiamunyi", "gate is blue") given with a number is a detail for the team, not a search.
_ASKS = re.compile(
    r"\?|^\W*(?:(?:and|also|so|but|pls|please|na|pia)\W+)?(what|what's|whats|how|when|where|which|who|why|whose"
    r"|do|does|did|is|are|was|were|can|could|will|would|should|shall|have you|has it|je|naweza|mnaweza|tunaweza|mna"
    r"|mko|kuna)\b|\b(nini|lini|wapi|gani|vipi|ngapi|je|how much|how long|tell me|let me know|niambie|nieleze|bei"
    r"|price|prices|cost|costs)\b", re.I)


def asks_something(text: str) -> bool:
    """Whether a text asks a question or for information (else it tells something)."""
    return bool(_ASKS.search(text or ""))


def rest_of_message(message: str, reply: ContactReply) -> str:
    """The message without the contact details and name cue: a question asked in the same breath, if any."""
    text = _without_contacts(message)
    text = _NAME_CUE.sub(" ", text) if reply.name else text
    if reply.name and _bare_name(text) == reply.name:
        text = ""  # the bare name beside the number
    text = _CONTACT_CUE.sub(" ", text)
    return " ".join(text.split()).strip(" ,.;:-")


_ACK = {
    "en": {
        "contact": "Thank you{name}. I've added {contact} to your {what}; our team will contact you shortly.",
        "name_only": "Thank you{name}. Please also share your phone number so our team can reach you about your {what}.",
        "booking": "booking request", "cancel": "cancellation request", "reschedule": "request to move your booking",
        "callback": "message",
    },
    "sw": {
        "contact": "Asante{name}. Nimeongeza {contact} kwenye {what}; wenzangu watakupigia hivi punde.",
        "name_only": "Asante{name}. Tafadhali tuma pia namba yako ya simu ili wenzangu wakufikie kuhusu {what}.",
        "booking": "ombi lako la kuweka miadi", "cancel": "ombi lako la kughairi miadi",
        "reschedule": "ombi lako la kuhamisha miadi", "callback": "ujumbe wako",
    },
}


def unasked_contact(message: str) -> ContactReply | None:
    """The phone/e-mail (and perhaps a name) of a message that gives only those; None for any other message."""
    reply = contact_in(message)
    if not reply.contact or own_words(rest_of_message(message, reply)):
        return None
    return reply


def unasked_contact_reply(reply: ContactReply, *, language: str) -> str:
    """The thanks for a contact sent with nothing before it, and a question about what it is for."""
    name = f", {reply.name}" if reply.name else ""
    if language == "sw":
        return f"Asante{name}. Ungependa tukusaidie na nini?"
    return f"Thank you{name}. What would you like us to help you with?"


def acknowledgement(*, kind: str, reply: ContactReply, language: str) -> str:
    """What the customer reads after giving a contact or only a name, in their language."""
    table = _ACK["sw" if language == "sw" else "en"]
    name = f", {reply.name}" if reply.name else ""
    what = table.get(kind, table["booking"])
    if reply.contact:
        return table["contact"].format(name=name, contact=reply.contact, what=what)
    return table["name_only"].format(name=name, what=what)
