"""A chat turn, end to end (docs/DESIGN.md §5): validate, session, trivial?, classify, dispatch, shape, persist.

`turn_run` returns the whole answer; `turn_stream` yields text deltas and then the same result. Both
share every step but the provider call. Nothing on this path turns an LLM problem into a 5xx: provider
errors, timeouts and grounding failures fall back to the extractive answer, and telemetry never raises.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

import llm
from conversations import costs, followups, handoffs, i18n, intents, selectors
from conversations.facts import (Facts, asks_duration, asks_price, business_words, facts_beside_knowledge, facts_for,
                                 facts_intent_for, named_services, row_the_knowledge_names,
                                 rows_the_question_mentions, services_list, variant_the_knowledge_names)
from conversations.models import HandoffKind, HandoffRequest, Session, Turn
from conversations.prompting import load_prompt_template
from conversations.shaping import AnswerDelta, ShapedAnswer
from knowledge.audit import audit_record
from knowledge.models import AuditAction, AuditSubject
from knowledge.retrieval.filters import Filters
from knowledge.retrieval.language import expand_shorthand
from knowledge.retrieval.types import Retrieval, RetrievedSnippet
from ratiba.errors import DomainError
from ratiba.redaction import stored_text

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = getattr(settings, "CHAT_MAX_MESSAGE_CHARS", 2000)
CHANNELS = ("chat", "whatsapp", "email")
LANGUAGES = ("auto", "en", "sw")
NO_PROVIDER = "none"  # small talk, refusals and bare hand-offs are answered without a provider
# Refusals that say nothing about what the knowledge lacks: kept out of the gap digest.
NOT_KNOWLEDGE_GAPS = frozenset({"empty_message", "cost_ceiling"})


class TurnError(DomainError):
    """A turn the API must reject (a 4xx), with a machine-readable code."""


class SessionNotFound(TurnError):
    status = 404

    def __init__(self, session_id: str):
        super().__init__(f"No chat session {session_id!r} here; omit session_id to start a new one.",
                         code="session_not_found", fields={"session_id": ["Unknown session."]})


class CollectionNotFound(TurnError):
    status = 404

    def __init__(self, name: str):
        super().__init__(f"No collection named {name!r}.", code="collection_not_found",
                         fields={"collection": ["Unknown collection."]})


@dataclass(frozen=True)
class TurnInput:
    message: str
    session_id: str | None = None
    channel: str = "chat"
    language: str = "auto"
    filters: dict | Filters | None = None
    api_key_prefix: str = ""
    started_by: str = ""


@dataclass
class TurnResult:
    """What the API returns, plus the rows it was stored as."""

    session_id: str
    turn_id: str
    intent: str
    answer: str
    citations: list[dict]
    refusal_reason: str | None
    meta: dict
    handoff_id: int | None = None

    def to_response(self) -> dict:
        return {"session_id": self.session_id, "turn_id": self.turn_id, "intent": self.intent,
                "answer": self.answer, "citations": self.citations, "refusal_reason": self.refusal_reason,
                "meta": self.meta}


@dataclass(frozen=True)
class Delta:
    """A piece of streamed answer text."""

    text: str


@dataclass
class _Plan:
    """Everything decided before the answer is written."""

    started: float
    session: Session
    message: str
    channel: str
    language: str
    trivial: bool
    intent: intents.IntentResult
    retrieval: Retrieval | None = None
    facts: Facts | None = None
    handoff_kind: str | None = None
    # What the hand-off records when it is more than this message (a call-back's matter), and the customer's name.
    handoff_note: str = ""
    handoff_name: str = ""
    # Set when the answer needs no provider: small talk, a refusal, a hand-off with nothing to quote.
    fixed_answer: str | None = None
    refusal_reason: str | None = None
    fallback_reason: str = ""
    retrieval_reused: bool = False
    embedding_ms: float = 0.0  # the query embedding made for intent classification
    extra_meta: dict = field(default_factory=dict)
    # The session's recent turns, how this message was read (alone or with the last topic), and the
    # contact it gives for a hand-off that asked for one.
    context: followups.SessionContext = field(default_factory=followups.SessionContext)
    reading: followups.Reading | None = None
    capture: ContactCapture | None = None
    # Every LLM call of the turn, priced; its limit is what the session may still spend.
    meter: llm.Meter = field(default_factory=llm.Meter)


@dataclass(frozen=True)
class ContactCapture:
    """A phone number or name given for a hand-off that asked for one, and what else the message says."""

    handoff: HandoffRequest
    reply: followups.ContactReply
    rest: str
    note: str = ""  # details told with the contact, for the hand-off's message (never a question answered here)


# ----------------------------------------------------------------------------- validation and session


def check_turn_input(inp: TurnInput) -> TurnInput:
    """Reject what the API must reject; return the input with the message stripped."""
    message = (inp.message or "").strip()
    errors: dict[str, list[str] | dict] = {}
    if not message:
        errors["message"] = ["This field may not be blank."]
    elif len(message) > MAX_MESSAGE_CHARS:
        errors["message"] = [f"Ensure this field has no more than {MAX_MESSAGE_CHARS} characters."]
    if inp.channel not in CHANNELS:
        errors["channel"] = [f"Must be one of: {', '.join(CHANNELS)}."]
    if inp.language not in LANGUAGES:
        errors["language"] = [f"Must be one of: {', '.join(LANGUAGES)}."]
    if inp.filters is not None:
        from knowledge.retrieval import FilterError, filters_clean

        try:
            filters_clean(inp.filters)
        except FilterError as exc:
            errors["filters"] = {name: [message] for name, message in exc.fields.items()}
    if errors:
        raise TurnError("Some fields are invalid.", fields=errors)
    return TurnInput(message=message, session_id=inp.session_id or None, channel=inp.channel,
                     language=inp.language, filters=inp.filters, api_key_prefix=inp.api_key_prefix,
                     started_by=inp.started_by)


def session_get_or_create(*, session_id: str | None, channel: str, api_key_prefix: str = "",
                          started_by: str = "") -> Session:
    """The caller's session, or a new one; an unknown id is an error, never a silent new session."""
    if session_id:
        session = Session.objects.filter(public_id=session_id).first()
        if session is None:
            raise SessionNotFound(session_id)
        return session
    return Session.objects.create(channel=channel, api_key_prefix=api_key_prefix, started_by=started_by)


# ----------------------------------------------------------------------------- seams to other parts


def _is_trivial(message: str) -> bool:
    from knowledge.retrieval import is_trivial

    return is_trivial(message)


def _fetch(intent: str, *, message: str, channel: str, session: Session | None,
           filters: dict | Filters | None, handoff: str = "") -> Retrieval:
    from knowledge.retrieval import fetch_snippets

    # The session carries its ADD_KB collections: retrieval searches tenant-wide collections always and
    # session-scope ones only when this session added them.
    return fetch_snippets(intent, query=message, channel=channel, filters=filters or None, session=session,
                          handoff=handoff)


def _snapshot(retrieval: Retrieval) -> dict:
    from dataclasses import replace

    from knowledge.retrieval.types import retrieval_to_dict

    # Drop the per-stage debug detail before converting: asdict() deep-copies it, and it is not stored.
    return retrieval_to_dict(replace(retrieval, debug={}, query=stored_text(retrieval.query)))


def _restore(data: dict) -> Retrieval | None:
    from knowledge.retrieval.types import retrieval_from_dict

    return retrieval_from_dict(data)


def _event(name: str, payload: dict) -> None:
    from telemetry.services import event_record

    event_record(name=name, payload=payload)


def llm_classifier_enabled() -> bool:
    """INTENT_CLASSIFIER=auto|llm: use the configured LLM provider when it has a key."""
    if getattr(settings, "INTENT_CLASSIFIER", "auto") == "offline":
        return False
    return llm.hosted_enabled()


INTENT_MAX_TOKENS = 20  # {"intent": "reschedule"} and nothing else


def intent_classify(*, message: str, embed: bool = True, config: llm.LlmConfig | None = None,
                    meter: llm.Meter | None = None) -> intents.IntentResult:
    """The LLM classifier when a provider is configured (or given), else the offline one; never raises.

    The call is priced into `meter`, else the turn's current one, else a meter of its own (the result's
    `scores["cost_usd"]` carries it then).
    """
    if config is None and not llm_classifier_enabled():
        return intents.classify(message, embed=embed)
    meter = meter or llm.current_meter() or llm.Meter()
    try:
        request = llm.LlmRequest(system=intents.LLM_SYSTEM_PROMPT, max_tokens=INTENT_MAX_TOKENS, purpose="intent",
                                 user=f"<customer_message>\n{message}\n</customer_message>", cache_system=True)
        result = llm.complete(request, config=config, meter=meter)
        intent = intents.parse_llm_intent(result.text)
        if intent is not None:
            return intents.IntentResult(intent=intent, confidence=0.9, source="llm",
                                        scores={"cost_usd": float(result.cost_usd or 0),
                                                "input_tokens": result.input_tokens,
                                                "output_tokens": result.output_tokens})
        log.warning("LLM intent reply not understood: %r", result.text[:80])
    except Exception as exc:  # noqa: BLE001 - the offline classifier always has an answer
        log.warning("LLM intent classification failed (%s); using the offline classifier", exc)
    return intents.classify(message, embed=embed)


# ----------------------------------------------------------------------------- planning


def _embed_query(message: str) -> tuple[list[float] | None, float]:
    """The local query embedding and how long it took; (None, 0) if the embedder failed."""
    from knowledge.embeddings import embed_query

    started = time.perf_counter()
    try:
        vector = embed_query(message)
    except Exception:  # noqa: BLE001 - the rules still classify; retrieval falls back to keywords
        log.warning("query embedding failed; classifying by rules", exc_info=True)
        return None, 0.0
    return vector, round((time.perf_counter() - started) * 1000, 3)


def _language_for(inp: TurnInput, session: Session, *, trivial: bool) -> str:
    if inp.language in ("en", "sw"):
        return inp.language
    detected = i18n.detect_language(inp.message)
    if not session.turn_count or detected == session.language:
        return detected
    # "ok" says nothing about a language (English is only the guess's default): keep the conversation's. Nor
    # does "0712 345 678, Wanjiru" (a Kikuyu name reads as Swahili), read only when the guess would switch.
    if (trivial and detected == i18n.DEFAULT_LANGUAGE) or followups.gives_only_who(inp.message):
        return session.language
    return detected


def _relevant(retrieval: Retrieval | None) -> bool:
    return retrieval is not None and not retrieval.refusal_reason and bool(retrieval.snippets)


def plan_turn(inp: TurnInput) -> _Plan:
    """Validate, load the session and decide how this turn is answered (no answer call yet).

    Every LLM call the turn makes (intent, query rewrite, answer) is priced into `plan.meter`, which
    allows none once the session's spend reaches the hard ceiling.
    """
    started = time.perf_counter()
    inp = check_turn_input(inp)
    session = session_get_or_create(session_id=inp.session_id, channel=inp.channel,
                                    api_key_prefix=inp.api_key_prefix, started_by=inp.started_by)
    meter = _turn_meter(session)
    # Current while planning: retrieval's query rewrite finds it there (it returns only text).
    with llm.metering(meter):
        plan = _plan_message(inp, started=started, session=session)
    plan.meter = meter
    return plan


def _turn_meter(session: Session) -> llm.Meter:
    """A meter that allows calls until the session's spend reaches the hard ceiling."""
    if llm.configured_name() not in llm.HOSTED:
        return llm.Meter()  # no LLM to call: spare the spend lookup
    state = costs.peek_cost(session=session)
    return llm.Meter(limit_usd=max(state.hard_ceiling_usd - state.spent_usd, Decimal(0)))


def _plan_message(inp: TurnInput, *, started: float, session: Session) -> _Plan:
    """Decide how this message is answered: alone, with the last topic, or as a contact for a hand-off."""
    context = followups.session_context(session=session)
    trivial = _is_trivial(inp.message)
    language = _language_for(inp, session, trivial=trivial)
    if not trivial and not any(ch.isalnum() for ch in inp.message):
        # Only punctuation, symbols or emoji ("???", "🙏"): nothing to look up, so no search and no LLM call.
        return _Plan(started=started, session=session, message=inp.message, channel=session.channel,
                     language=language, trivial=False, refusal_reason="empty_message",
                     fixed_answer=i18n.deflection("empty_message", language=language),
                     intent=intents.IntentResult(intent="other", confidence=1.0, source="rules"))
    capture = None if trivial else _contact_capture(context=context, message=inp.message, channel=session.channel)
    question = capture.rest if capture is not None else inp.message
    if capture is not None and not (followups.own_words(question) and (
            followups.asks_something(question) or set(intents.rule_scores(question)) & set(intents.ACTION_INTENTS))):
        # Only the contact (or a name), or details told with it ("It's for Mama Atieno in Kiamunyi"): acknowledged,
        # attached to the hand-off (the details to its message), nothing to look up. A question or a new request
        # sent with the number ("0712... and what time do you open", "... actually cancel it") is read as usual.
        return _Plan(started=started, session=session, message=inp.message, channel=session.channel,
                     language=language, trivial=False, context=context, capture=replace(capture, note=question),
                     fixed_answer="", intent=_handoff_intent(capture.handoff))
    unasked = None if capture is not None or trivial else followups.unasked_contact(inp.message)
    if unasked is not None:
        return _contact_only_plan(inp, unasked, started=started, session=session, context=context, language=language)
    reading = (followups.Reading(text=question) if trivial
               else followups.read_with_topic(message=question, context=context))
    common = {"started": started, "session": session, "context": context, "trivial": trivial, "language": language}
    plan = _plan_reading(inp, reading=reading, **common)
    if capture is not None and plan.refusal_reason:
        # Nothing answers what came with the number ("namba yangu ni ..."): the thanks alone, no deflection.
        return replace(plan, fixed_answer="", refusal_reason=None, retrieval=None, facts=None, capture=capture,
                       intent=_handoff_intent(capture.handoff))
    if plan.refusal_reason and not trivial and not reading.followup and plan.handoff_kind is None:
        # A message nothing answers alone ("inauma?", "how long before I get the results?") may be about the last
        # topic: read with it, and kept if what answers it speaks to what the message adds.
        second = followups.read_refused_with_topic(message=question, context=context)
        if second is not None:
            retry = _plan_reading(inp, reading=second, **common)
            if retry.refusal_reason is None and followups.answers_new_words(
                    second, question, retry.retrieval.snippets if retry.retrieval is not None else []):
                plan = retry
    if plan.reading is not None and plan.reading.followup and plan.facts is not None:
        # Looked up with the topic; keep the rows and days this message itself names ("and the 2 kg one?"), or the
        # variant the knowledge ties to its word ("and for a Prado?" after the saloon's price).
        named = list(plan.facts.matched_services)
        followups.narrow_facts(plan.facts, message=question)
        if named and plan.facts.matched_services == named and _relevant(plan.retrieval):
            _narrow_to_the_variant_the_knowledge_names(plan.facts, question, plan.retrieval, siblings=True)
    plan.capture = capture
    return plan


def _contact_only_plan(inp: TurnInput, reply: followups.ContactReply, *, started: float, session: Session,
                       context: followups.SessionContext, language: str) -> _Plan:
    """The plan for a number (and perhaps a name) sent with no hand-off waiting for it: nothing is looked up."""
    # A search would quote whatever mentions "number". The number joins this conversation's open hand-off when that
    # is the latest matter; after a question or a complaint the customer wants to hear back, so a person is asked
    # to (a call-back, with what they said); with nothing before it, we ask what it is for.
    base = {"started": started, "session": session, "message": inp.message, "channel": session.channel,
            "language": language, "trivial": False, "context": context}
    topic = context.topic
    earlier = followups.recent_handoff(session=session)
    if earlier is not None and (topic is None or topic.created_at is None or earlier.created_at >= topic.created_at):
        # Another way to reach the customer about a request they made (one that already had a contact).
        return _Plan(**base, fixed_answer="", capture=ContactCapture(handoff=earlier, reply=reply, rest=""),
                     intent=_handoff_intent(earlier))
    if topic is None:
        return _Plan(**base, fixed_answer=followups.unasked_contact_reply(reply, language=language),
                     intent=intents.IntentResult(intent="other", confidence=1.0, source="rules"))
    return _Plan(**base, handoff_kind=HandoffKind.CALLBACK, handoff_note=f"{topic.message}\n{inp.message}",
                 handoff_name=reply.name, fixed_answer="",
                 intent=intents.IntentResult(intent="other", confidence=1.0, source="context"))


def _handoff_intent(handoff: HandoffRequest) -> intents.IntentResult:
    """A contact reply's intent: its hand-off's action (a call-back is no intent of the chat contract: `other`)."""
    intent = handoff.kind if handoff.kind in intents.ACTION_INTENTS else "other"
    return intents.IntentResult(intent=intent, confidence=1.0, source="context")


def _contact_capture(*, context: followups.SessionContext, message: str, channel: str) -> ContactCapture | None:
    """The contact this message gives for a recent hand-off that asked for one, if any."""
    handoff = followups.pending_contact(context=context, channel=channel)
    if handoff is None:
        return None
    reply = followups.contact_in(message)
    if reply.empty:
        return None
    return ContactCapture(handoff=handoff, reply=reply, rest=followups.rest_of_message(message, reply))


def _plan_reading(raw: TurnInput, *, reading: followups.Reading, started: float, session: Session,
                  context: followups.SessionContext, trivial: bool, language: str) -> _Plan:
    """Classify and dispatch one reading of the message: its own words, or with the last topic."""
    inp = replace(raw, message=reading.text)  # what classification, facts and retrieval read
    channel = session.channel
    over_ceiling = _over_hard_ceiling(session)
    offline = over_ceiling or not llm_classifier_enabled()
    # "ok" / "asante" need no model (the rules know them), and past the cost ceiling no LLM is called.
    # The prototypes are English sentences: on a Swahili message they only add an embedding, so the
    # Swahili rules decide alone (retrieval embeds its own English expansion of the question).
    embed = language != "sw"
    embedding_ms = 0.0
    # A follow-up that says what it asks ("can the driver come that day?") has its own intent: only its own
    # words are classified (one classifier call, not one for the joined text too); retrieval still reads
    # the topic. A bare "what about Sunday?" takes the intent of the text joined to its topic.
    own_question = reading.followup and followups.asks_its_own_question(raw.message)
    classified = raw.message if own_question else inp.message
    if trivial:
        intent = intents.classify(inp.message, embed=False)
        if intent.intent not in intents.SMALL_TALK_INTENTS:
            # An acknowledgement the rules do not list ("bye", "haya", "shwari") is still one: never a
            # search, never a refusal.
            intent = intents.IntentResult(intent="thanks", confidence=0.6, source="trivial")
    elif offline:
        intent, embedding_ms = intent_classify_offline(classified, language=language)
    else:
        intent = intent_classify(message=classified, embed=embed)
    if reading.followup and not own_question and intent.intent in intents.ACTION_INTENTS and (
            intent.intent not in intents.rule_scores(raw.message)):
        # A booking, cancellation or reschedule is asked for in so many words, never inherited from the topic.
        intent = _own_intent(raw.message, embed=embed, offline=offline)
    plan = _Plan(started=started, session=session, message=raw.message, channel=channel, language=language,
                 trivial=trivial, intent=intent, fallback_reason="cost_ceiling" if over_ceiling else "",
                 embedding_ms=embedding_ms, context=context, reading=reading)

    if trivial:
        # The SOP's trivial turn: no embedding, no search; the session's last retrieval is reused.
        plan.retrieval = _restore(session.last_retrieval)
        plan.retrieval_reused = plan.retrieval is not None
    if intent.intent in intents.SMALL_TALK_INTENTS:
        plan.fixed_answer = i18n.small_talk(intent.intent, language=language)
        return plan

    if intent.intent in intents.ACTION_INTENTS and not intents.asks_about_action(inp.message):
        plan.handoff_kind = intent.intent
        # A policy may apply (cancellation fees, deposits): quote it if the knowledge covers the question.
        # Retrieval is told the request: with nothing answering its words it offers the snippet titled for it.
        plan.retrieval = _fetch("other", message=inp.message, channel=channel, session=session, filters=inp.filters,
                                handoff=intent.intent)
        if not _relevant(plan.retrieval):
            plan.fixed_answer = ""  # the next-step text alone
        return plan

    # "bei yake ni ngapi?" after an answer about one service: that service's row (looked up only then).
    read = expand_shorthand(inp.message)
    asks_fact = reading.followup and (asks_price(read) or asks_duration(read))
    services = services_list() if asks_fact else None
    topic_names: tuple[str, ...] = ()
    if asks_fact:
        topic = followups.topic_service(context, services)
        # "and a 12 kg box?": the row of the topic's kind the follow-up names itself, else the topic's own row.
        topic_names = followups.variant_asked(raw.message, topic, services, common=business_words()) or topic
    decision = question_decide(intent=intent.intent, message=inp.message, channel=channel, session=session,
                               filters=inp.filters, topic_names=topic_names, services=services)
    plan.retrieval, plan.facts = decision.retrieval, decision.facts
    if decision.refusal_reason:
        _refuse(plan, decision.refusal_reason)
    return plan


def intent_classify_offline(message: str, *, language: str) -> tuple[intents.IntentResult, float]:
    """A turn's offline intent (rules, prototypes, the services table) and how long the query embedding took."""
    # No embedding for Swahili (the prototypes are English). Retrieval finds this one again in the query
    # cache, so its time is the turn's embedding latency.
    vector, embedding_ms = _embed_query(message) if language != "sw" else (None, 0.0)
    result = intents.classify(message, query_vector=vector, embed=False, names_service=_names_service(message))
    return result, embedding_ms


@dataclass(frozen=True)
class Decision:
    """How a question is answered: what retrieval found, the structured facts, or why it is refused."""

    retrieval: Retrieval
    facts: Facts | None
    refusal_reason: str | None

    @property
    def knowledge(self) -> list[RetrievedSnippet]:
        """The snippets the answer is written from (what an LLM reads)."""
        return knowledge_read(self.retrieval, self.facts)


def question_decide(*, intent: str, message: str, channel: str, session: Session | None = None,
                    filters: dict | Filters | None = None, topic_names: tuple[str, ...] = (),
                    services: list | None = None) -> Decision:
    """Retrieve for a question, add the structured facts and decide to answer or refuse (no LLM call).

    The one decision of a chat turn's question and of the prompt assembly API. For a follow-up,
    `topic_names` is the one service its topic was answered about (for a price or duration question that
    names none). `services`: the services list when the caller has read it (else read where needed).
    """
    # The facts read an English message's shorthand written out ("hw much r ur braids"), as retrieval does.
    read = expand_shorthand(message)
    # A price or duration question naming a service is answered from the facts whatever the intent.
    facts_intent = facts_intent_for(intent=intent, message=read, topic_names=topic_names, services=services)
    if facts_intent is None:
        retrieval = _fetch("other", message=message, channel=channel, session=session, filters=filters)
        facts = _facts_the_knowledge_ties(read, retrieval, services)
        if facts is None:
            return Decision(retrieval=retrieval, facts=None, refusal_reason=None if _relevant(retrieval)
                            else (retrieval.refusal_reason or "no_relevant_context"))
    else:
        facts = facts_for(intent=facts_intent, message=read, topic_names=topic_names, services=services)
        # Retrieval never narrows by intent (inline or hybrid), so a misread intent cannot hide the answer.
        retrieval = _fetch(facts_intent, message=message, channel=channel, session=session, filters=filters)
        if facts_intent == "services" and not facts.matched_services:
            facts = _facts_the_knowledge_ties(read, retrieval, services) or facts
        elif facts_intent == "services" and len(facts.matched_services) > 1 and _relevant(retrieval):
            _narrow_to_the_variant_the_knowledge_names(facts, read, retrieval)
    facts_beside_knowledge(facts, knowledge=_relevant(retrieval))
    refused = facts.is_empty and not _relevant(retrieval)
    return Decision(retrieval=retrieval, facts=facts,
                    refusal_reason=(retrieval.refusal_reason or "no_relevant_context") if refused else None)


def _facts_the_knowledge_ties(message: str, retrieval: Retrieval, services: list | None) -> Facts | None:
    """The row a price or duration question asks about in other words, tied to it by the snippet that answers: the
    one row the snippet names in full ("the motorbike course" -> "Motorcycle Course (Class A)"), else the one row
    the question mentions by a word when the snippet holds its other words and no such figure ("puppy shots");
    None when there is no such one row."""
    # Asked here as well as in the facts functions so other questions do not read the services list.
    if not _relevant(retrieval) or not retrieval.snippets or not (asks_price(message) or asks_duration(message)):
        return None
    top = retrieval.snippets[0]
    services = services if services is not None else services_list()
    row = row_the_knowledge_names(message, f"{top.title}. {top.body}", services)
    rows = (row,) if row is not None else tuple(rows_the_question_mentions(message, [top.body], services))
    if not rows:
        return None
    return facts_for(intent="services", message=message, topic_names=rows, services=services)


def _narrow_to_the_variant_the_knowledge_names(facts: Facts, message: str, retrieval: Retrieval, *,
                                               siblings: bool = False) -> None:
    """Several variants named ("a full wash for a Prado"), or one and its siblings for a follow-up: the one the
    retrieved knowledge ties to the customer's word (in place)."""
    texts = [snippet.body for snippet in retrieval.snippets]
    narrowed = variant_the_knowledge_names(message, facts.matched_services, texts, facts.services, siblings=siblings)
    if narrowed != facts.matched_services:
        facts.matched_services = narrowed
        facts.described = [name for name in facts.described if name in narrowed]


def knowledge_read(retrieval: Retrieval | None, facts: Facts | None) -> list[RetrievedSnippet]:
    """What an answer may quote: the retrieved snippets when relevant, none when the facts answer alone."""
    if not _relevant(retrieval) or (facts is not None and facts.answers_alone):
        # The matching rows are the whole answer: nothing unrelated beside them.
        return []
    return list(retrieval.snippets)


def _own_intent(message: str, *, embed: bool, offline: bool) -> intents.IntentResult:
    """A follow-up's intent read from its own words (the offline classifier past the ceiling or without an LLM)."""
    if offline:
        return intents.classify(message, embed=embed, names_service=_names_service(message))
    return intent_classify(message=message, embed=embed)


def _names_service(message: str) -> bool:
    """Whether a message names a row of the services table (a question about that service)."""
    return bool(named_services(message, services_list()))


def _refuse(plan: _Plan, reason: str | None) -> None:
    plan.refusal_reason = reason or "no_relevant_context"
    plan.fixed_answer = i18n.deflection(plan.refusal_reason, language=plan.language)


def _over_hard_ceiling(session: Session) -> bool:
    """Past the hard ceiling the free extractive provider answers (and the owner hears about it once)."""
    configured = (settings.LLM_PROVIDER or "extractive").lower()
    if configured == "extractive" or session.pk is None:
        return False
    state = costs.peek_cost(session=session)
    if not state.over_hard:
        return False
    from telemetry.models import Event

    if not Event.objects.filter(name="cost_ceiling", payload__session_id=session.public_id,
                                payload__level="hard").exists():  # once per session, not every turn
        _event("cost_ceiling", {"session_id": session.public_id, "spent_usd": str(state.spent_usd),
                                "hard_ceiling_usd": str(state.hard_ceiling_usd), "level": "hard",
                                "provider": configured})
    return True


# ----------------------------------------------------------------------------- shaping


def _shaping_kwargs(plan: _Plan) -> dict:
    snippets = knowledge_read(plan.retrieval, plan.facts)
    if not plan.meter.allows_call() and not plan.fallback_reason:
        # The turn's own calls (intent, rewrite) reached the hard ceiling: the answer is extractive too.
        plan.fallback_reason = "cost_ceiling"
    return {"question": plan.message, "language": plan.language, "channel": plan.channel,
            "intent": plan.intent.intent, "snippets": snippets, "facts": plan.facts,
            "force_extractive": plan.fallback_reason == "cost_ceiling", "force_reason": "cost_ceiling",
            "meter": plan.meter}


def _context_kwargs(plan: _Plan) -> dict:
    """The recent turns (data for an LLM) and the text a follow-up was read as."""
    read_as = plan.reading.text if plan.reading is not None and plan.reading.followup else None
    return {"history": plan.context.history(), "read_as": read_as}


def _shape(plan: _Plan) -> ShapedAnswer:
    from conversations.shaping import shape_answer

    kwargs = {**_shaping_kwargs(plan), **_context_kwargs(plan)}
    try:
        return shape_answer(**kwargs)
    except Exception as exc:  # noqa: BLE001 - shaping handles provider errors; this is the last line of defence
        if kwargs["force_extractive"]:
            raise
        _unexpected_shaping_error(plan, exc)
        return shape_answer(**{**kwargs, "force_extractive": True, "force_reason": "provider_error"})


def _shape_stream(plan: _Plan) -> Iterator[AnswerDelta | ShapedAnswer]:
    from conversations.shaping import shape_answer_stream

    kwargs = {**_shaping_kwargs(plan), **_context_kwargs(plan)}
    started = False
    try:
        for item in shape_answer_stream(**kwargs):
            started = True
            yield item
    except Exception as exc:  # noqa: BLE001 - before the first delta the extractive answer can still stand in
        if started or kwargs["force_extractive"]:
            raise
        _unexpected_shaping_error(plan, exc)
        yield from shape_answer_stream(**{**kwargs, "force_extractive": True, "force_reason": "provider_error"})


def _unexpected_shaping_error(plan: _Plan, exc: Exception) -> None:
    log.exception("answer shaping failed unexpectedly; answering extractively")
    _event("provider_error", {"intent": plan.intent.intent, "channel": plan.channel, "code": "unexpected",
                              "error": f"{type(exc).__name__}: {exc}"[:500], "question": plan.message[:200]})


# ----------------------------------------------------------------------------- finishing


def _citation_dicts(shaped) -> list[dict]:
    return shaped.citations_as_dicts() if shaped is not None else []


def _retrieval_rows(retrieval: Retrieval | None) -> list[dict]:
    if retrieval is None:
        return []
    return [{"key": s.key, "version": s.version, "score": round(float(s.score), 4), "match_type": s.match_type,
             "similarity": None if s.similarity is None else round(float(s.similarity), 4)}
            for s in retrieval.snippets]


def finish_turn(plan: _Plan, *, answer: str, shaped=None, aborted: bool = False) -> TurnResult:
    """Persist the turn (and a hand-off), record cost, telemetry and events; build the response."""
    session = plan.session
    retrieval = plan.retrieval
    handoff = None
    provider = getattr(shaped, "provider", None) or NO_PROVIDER
    model = getattr(shaped, "model", "") or ""
    # Every call the turn made (intent, rewrite, answer, a classification later discarded) was priced here.
    cost = plan.meter.spent_usd.quantize(Decimal("0.000001"))
    input_tokens = int(getattr(shaped, "input_tokens", 0) or 0)
    output_tokens = int(getattr(shaped, "output_tokens", 0) or 0)
    prompt_tokens = int(getattr(shaped, "prompt_tokens", 0) or input_tokens or 0)
    citations = _citation_dicts(shaped) if shaped is not None else []
    latency_ms = int((time.perf_counter() - plan.started) * 1000)
    meta = {
        "mode": (retrieval.mode if retrieval is not None else ""),
        "provider": provider,
        "model": model,
        "latency_ms": latency_ms,
        "retrieved_count": len(retrieval.snippets) if retrieval is not None else 0,
        "prompt_tokens": prompt_tokens,
        "cost_usd": float(cost),
        "language": plan.language,
        "trivial": plan.trivial,
        "prompt_version": load_prompt_template().version,
    }
    if plan.meter.calls:
        meta["llm_calls"] = [call.to_dict() for call in plan.meter.calls]
    if shaped is not None and shaped.refusal_reason:
        meta["refused_by"] = "cost_ceiling" if shaped.refusal_reason == "cost_ceiling" else "llm"
    reason = (plan.fallback_reason or shaped.fallback_reason or "") if shaped is not None else ""
    if reason:
        # Why the extractive provider answered instead of the configured LLM.
        meta["fallback_reason"] = reason
        meta["requested_provider"] = getattr(shaped, "requested_provider", "") or settings.LLM_PROVIDER
    if shaped is not None and shaped.provider_error:
        meta["provider_error"] = shaped.provider_error[:200]
    if shaped is not None and shaped.replaces_streamed_text:
        meta["replaces_streamed_text"] = True
    if aborted:
        meta["stream_aborted"] = True
    if plan.reading is not None and plan.reading.followup:
        meta["followup"] = {"read_as": stored_text(plan.reading.text), "reasons": list(plan.reading.reasons)}

    with transaction.atomic():
        # With REDACT_STORED_MESSAGES the stored copy masks phones and e-mails; the response below does not.
        turn = Turn.objects.create(
            session=session, channel=plan.channel, message=stored_text(plan.message), answer=stored_text(answer),
            language=plan.language,
            intent=plan.intent.intent, intent_source=plan.intent.source,
            intent_confidence=float(plan.intent.confidence), trivial=plan.trivial, mode=meta["mode"],
            retrieval=_retrieval_rows(retrieval), citations=citations, provider=provider, model=model,
            input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost, latency_ms=latency_ms,
            refusal_reason=plan.refusal_reason or "", meta=meta)
        if plan.handoff_kind:
            handoff = handoffs.handoff_record(kind=plan.handoff_kind, session=session, turn=turn,
                                              message=plan.handoff_note or plan.message, channel=plan.channel,
                                              name=plan.handoff_name)
            meta["handoff"] = {"id": handoff.pk, "kind": handoff.kind, "status": handoff.status}
            _await_contact(meta, handoff=handoff, channel=plan.channel)
            Turn.objects.filter(pk=turn.pk).update(meta=meta)
        if plan.capture is not None:
            captured = handoffs.handoff_contact_add(handoff=plan.capture.handoff, contact=plan.capture.reply.contact,
                                                    name=plan.capture.reply.name, note=plan.capture.note)
            meta["handoff_contact"] = {"id": captured.pk, "kind": captured.kind,
                                       "contact": bool(plan.capture.reply.contact),
                                       "name": bool(plan.capture.reply.name)}
            _await_contact(meta, handoff=captured, channel=plan.channel)
            Turn.objects.filter(pk=turn.pk).update(meta=meta)
        updates = {"turn_count": F("turn_count") + 1, "language": plan.language,
                   "last_intent": plan.intent.intent, "updated_at": timezone.now()}
        if retrieval is not None and not plan.retrieval_reused:
            updates["last_retrieval"] = _snapshot(retrieval)
        Session.objects.filter(pk=session.pk).update(**updates)
    if cost > 0:
        state = costs.record_cost(session=session, usd=cost)
        meta["session_cost_usd"] = float(state.spent_usd)
        if state.over_soft and state.spent_usd - cost < state.soft_ceiling_usd:
            _event("cost_ceiling", {"session_id": session.public_id, "spent_usd": str(state.spent_usd),
                                    "soft_ceiling_usd": str(state.soft_ceiling_usd), "level": "soft"})
    _telemetry(plan, turn=turn, meta=meta, citations=citations, shaped=shaped)
    return TurnResult(session_id=session.public_id, turn_id=turn.public_id, intent=plan.intent.intent,
                      answer=answer, citations=citations, refusal_reason=plan.refusal_reason, meta=meta,
                      handoff_id=handoff.pk if handoff else None)


def _await_contact(meta: dict, *, handoff: HandoffRequest, channel: str) -> None:
    # The answer asked for a phone number: the next turns look for it (WhatsApp already has the number).
    if channel != "whatsapp" and not followups.has_reachable_contact(handoff.contact):
        meta["awaiting_contact"] = handoff.pk


def _telemetry(plan: _Plan, *, turn: Turn, meta: dict, citations: list[dict], shaped) -> None:
    from telemetry.services import retrieval_log_record

    retrieval = plan.retrieval
    snippets = list(retrieval.snippets) if retrieval is not None else []
    retrieval_log_record(
        channel=plan.channel, session_id=plan.session.public_id, turn_id=turn.public_id,
        message_preview=plan.message, retrieved_sections=snippets,
        core_tokens=int(getattr(shaped, "core_tokens", 0) or 0),
        prompt_tokens=meta["prompt_tokens"] or None, trivial=plan.trivial,
        fallback_used=bool(retrieval.fallback_used) if retrieval is not None else False,
        candidate_count=retrieval.candidate_count if retrieval is not None else 0,
        skipped_for_budget_count=retrieval.skipped_for_budget if retrieval is not None else 0,
        empty_retrieval=(None if retrieval is not None else (not plan.trivial and plan.fixed_answer is None)),
        embedding_latency_ms=(0.0 if plan.retrieval_reused else
                              max(plan.embedding_ms, retrieval.embedding_ms if retrieval is not None else 0.0)),
        retrieval_latency_ms=0.0 if plan.retrieval_reused or retrieval is None else retrieval.retrieval_ms,
        mode=meta["mode"], intent=plan.intent.intent, provider=meta["provider"], model=meta["model"],
        cost_usd=meta["cost_usd"], refusal_reason=plan.refusal_reason or "", language=plan.language,
        prompt_version=meta["prompt_version"])
    if plan.refusal_reason:
        _event("refusal", {"reason": plan.refusal_reason, "intent": plan.intent.intent,
                           "question": plan.message[:500], "language": plan.language,
                           "session_id": plan.session.public_id, "turn_id": turn.public_id,
                           "channel": plan.channel})
    # Any question the knowledge should answer, whatever the classifier called it (a services question the
    # knowledge lacks is a gap too); a turn the facts answered alone is not one.
    # A message nothing was looked up for and nothing refused (a phone number) asked the knowledge nothing.
    asked = retrieval is not None or bool(plan.refusal_reason)
    if (asked and plan.intent.intent in intents.QUESTION_INTENTS and plan.refusal_reason not in NOT_KNOWLEDGE_GAPS
            and not (plan.facts is not None and plan.facts.answers_alone and plan.facts.quoted)):
        _event("knowledge_gap_candidate", {
            "question": plan.message[:500], "snippets_available": len(retrieval.snippets) if retrieval else 0,
            "refused": bool(plan.refusal_reason), "refusal_reason": plan.refusal_reason or "",
            "language": plan.language, "session_id": plan.session.public_id, "turn_id": turn.public_id,
            "cited": [c.get("key") for c in citations]})


def _compose_fixed(plan: _Plan) -> str:
    text = plan.fixed_answer or ""
    if plan.handoff_kind:
        details = handoffs.extract_details(message=plan.message)
        step = handoffs.next_step_text(kind=plan.handoff_kind, language=plan.language, contact=details.contact,
                                       channel=plan.channel, name=plan.handoff_name)
        text = f"{text}\n\n{step}".strip() if text else step
    return _with_acknowledgement(plan, text)


def _with_acknowledgement(plan: _Plan, answer: str) -> str:
    """The answer, then the thanks for a contact given for a hand-off (alone when nothing else was asked)."""
    if plan.capture is None:
        return answer
    ack = followups.acknowledgement(kind=plan.capture.handoff.kind, reply=plan.capture.reply, language=plan.language)
    return f"{answer.rstrip()}\n\n{ack}" if answer.strip() else ack


def _with_next_step(plan: _Plan, answer: str) -> str:
    answer = _with_acknowledgement(plan, answer)
    if not plan.handoff_kind:
        return answer
    details = handoffs.extract_details(message=plan.message)
    step = handoffs.next_step_text(kind=plan.handoff_kind, language=plan.language, contact=details.contact,
                                   channel=plan.channel)
    return f"{answer.rstrip()}\n\n{step}"


# ----------------------------------------------------------------------------- the two entry points


def turn_run(inp: TurnInput) -> TurnResult:
    """Answer one customer message (the JSON endpoint)."""
    plan = plan_turn(inp)
    if plan.fixed_answer is not None:
        return finish_turn(plan, answer=_compose_fixed(plan))
    shaped = _ceiling_refusal(plan, _shape(plan), streamed=False)
    _take_llm_refusal(plan, shaped)
    return finish_turn(plan, answer=_with_next_step(plan, shaped.text), shaped=shaped)


def _ceiling_refusal(plan: _Plan, shaped: ShapedAnswer, *, streamed: bool) -> ShapedAnswer:
    """Past the hard ceiling the free extractive provider answers; when it has nothing to quote, the turn is a
    `cost_ceiling` refusal that says so, instead of an answer claiming the knowledge is missing."""
    if plan.fallback_reason != "cost_ceiling" or shaped.citations or shaped.refusal_reason:
        return shaped
    return replace(shaped, text=i18n.deflection("cost_ceiling", language=plan.language),
                   refusal_reason="cost_ceiling", replaces_streamed_text=streamed)


def _take_llm_refusal(plan: _Plan, shaped: ShapedAnswer | None) -> None:
    """An LLM that found no grounded answer refused: the turn is a refusal like any other (a gap)."""
    if shaped is not None and shaped.refusal_reason:
        plan.refusal_reason = shaped.refusal_reason


def turn_stream(inp: TurnInput) -> Iterator[Delta | TurnResult]:
    """Answer one customer message as it is written: Delta pieces, then exactly one TurnResult.

    Planning errors (validation, unknown session) raise before the first item, so the API can still
    answer them with a 4xx. If the consumer stops early (the client went away), the turn is stored with
    what was produced and `meta.stream_aborted`.
    """
    plan = plan_turn(inp)

    def generate() -> Iterator[Delta | TurnResult]:
        if plan.fixed_answer is not None:
            text = _compose_fixed(plan)
            finished = False
            try:
                for piece in _chunks(text):
                    yield Delta(text=piece)
                result = finish_turn(plan, answer=text)
                finished = True
                yield result
            finally:
                if not finished:
                    _finish_quietly(plan, answer=text, aborted=True)
            return
        parts: list[str] = []
        shaped = None
        finished = False
        items = _shape_stream(plan)
        try:
            for item in items:
                if isinstance(item, AnswerDelta):
                    parts.append(item.text)
                    yield Delta(text=item.text)
                else:
                    shaped = _ceiling_refusal(plan, item, streamed=True)
            answer = shaped.text if shaped is not None else "".join(parts)
            _take_llm_refusal(plan, shaped)
            full = _with_next_step(plan, answer)
            if full != answer:
                tail = full[len(answer):]
                yield Delta(text=tail)
            result = finish_turn(plan, answer=full, shaped=shaped)
            finished = True
            yield result
        finally:
            if not finished:
                # Closed here, not left to garbage collection: the LLM stream prices what it generated before
                # the turn is stored.
                close = getattr(items, "close", None)
                if close is not None:
                    close()
                _finish_quietly(plan, answer="".join(parts), aborted=True, shaped=shaped)

    return generate()


def _finish_quietly(plan: _Plan, *, answer: str, aborted: bool, shaped=None) -> None:
    try:
        finish_turn(plan, answer=answer, shaped=shaped, aborted=aborted)
    except Exception:  # noqa: BLE001 - the client is gone; nothing to report to
        log.exception("could not store an aborted streamed turn")


def _chunks(text: str, *, words: int = 4) -> list[str]:
    import re

    pieces = re.findall(r"\S+\s*", text)
    return ["".join(pieces[i:i + words]) for i in range(0, len(pieces), words)] or [text]


# ----------------------------------------------------------------------------- session knowledge bases


def session_collection_add(*, session: Session, collection: str) -> list[str]:
    """ADD_KB: search this collection in the session's turns; returns the active names."""
    if not selectors.collection_exists(name=collection):
        raise CollectionNotFound(collection)
    names = list(session.collections)
    if collection not in names:
        names.append(collection)
        session.collections = names
        session.save(update_fields=["collections", "updated_at"])
    return names


def session_collection_clear(*, session: Session, collection: str | None = None) -> list[str]:
    """CLEAR_KB: stop searching one collection, or all of them."""
    names = [] if collection is None else [name for name in session.collections if name != collection]
    if names != list(session.collections):
        session.collections = names
        session.save(update_fields=["collections", "updated_at"])
    return names


def handoff_delete(*, handoff: HandoffRequest, user=None, actor: str | None = None) -> None:
    """An owner removes a hand-off request (spam, a test); the audit log says who."""
    with transaction.atomic():
        key, status = f"#{handoff.pk} {handoff.kind}", handoff.status
        handoff.delete()
        audit_record(subject=AuditSubject.HANDOFF, action=AuditAction.DELETED, key=key, user=user, actor=actor,
                     detail={"status": [status, None]})


def handoff_set_status(*, handoff: HandoffRequest, status: str, user=None,
                       actor: str | None = None) -> HandoffRequest:
    """An owner moves a hand-off along (new -> contacted -> done, or dismissed); the audit log says who."""
    with transaction.atomic():
        # The stored status, not `handoff.status`: an admin form has already written the new value onto it.
        before = HandoffRequest.objects.select_for_update().values_list("status", flat=True).get(pk=handoff.pk)
        handoff.status = status
        if before != status:
            handoff.save(update_fields=["status", "updated_at"])
            audit_record(subject=AuditSubject.HANDOFF, action=AuditAction.CHANGED,
                         key=f"#{handoff.pk} {handoff.kind}", user=user, actor=actor,
                         detail={"status": [before, status]})
    return handoff
