"""Prompt assembly for the answer shaper: pure functions from (question, knowledge, facts, rules) to messages.

The system message comes verbatim from `prompts/answer_shaper.yaml` and never varies by tenant, so a
provider's prompt cache can hold it. Everything about a business (its guardrail and behaviour sections,
knowledge, services, hours and personality) and about the conversation (its recent turns) rides in the
user message, inside delimited data sections: `<business_rules>`, `<raw_data_json>` (JSON),
`<recent_turns>` (JSON) and `<customer_message>`. Data is escaped so that nothing a customer or an author
writes can close a section early and pose as instructions.

`core_sections_for_channel` (the one database read here) loads the guardrail and behaviour sections;
the assembly itself takes them as an argument and touches nothing but its inputs.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from conversations.i18n import LANGUAGE_NAMES, normalize_language
from knowledge.retrieval.types import RetrievedSnippet
from knowledge.tokens import token_estimate

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
SECTION_TAGS = ("business_rules", "raw_data_json", "recent_turns", "customer_message")
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_TEMPLATE_FIELDS = {"channel", "business_rules", "raw_data_json", "recent_turns", "language_name", "intent",
                    "customer_message"}
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ORDER_TAG = re.compile(r"^order:(-?\d+)$")
_LOOKALIKE_BRACKETS = str.maketrans({"\uff1c": "<", "\uff1e": ">", "\ufe64": "<", "\ufe65": ">"})

FACT_TITLES = {"facts:services": "Services and prices", "facts:hours": "Opening hours"}


# ----------------------------------------------------------------------------- the template


@dataclass(frozen=True)
class PromptTemplate:
    """A versioned prompt file: the tenant-invariant system message and the per-turn user template."""

    name: str
    version: str
    cache_eligible: bool
    system_message: str
    user_template: str


@lru_cache(maxsize=8)
def load_prompt_template(name: str = "answer_shaper") -> PromptTemplate:
    """Read and check `conversations/prompts/<name>.yaml` (cached per process)."""
    data = yaml.safe_load((PROMPTS_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    template = PromptTemplate(name=name, version=str(data["version"]), cache_eligible=bool(data["cache_eligible"]),
                              system_message=data["system_message"].strip() + "\n",
                              user_template=data["user_template"].strip() + "\n")
    if _PLACEHOLDER.search(template.system_message):
        # A placeholder in the system message would make it vary per tenant and defeat the cache.
        raise ValueError(f"{name}.yaml: the system message must not contain placeholders")
    unknown = set(_PLACEHOLDER.findall(template.user_template)) - _TEMPLATE_FIELDS
    if unknown:
        raise ValueError(f"{name}.yaml: unknown placeholders {sorted(unknown)}")
    return template


# ----------------------------------------------------------------------------- inputs and outputs


@dataclass(frozen=True)
class CoreSection:
    """A guardrail or behaviour section: assembled into every prompt of its channels, never retrieved."""

    key: str
    version: int
    role: str  # "guardrail" | "behaviour"
    title: str
    body: str


@dataclass(frozen=True)
class Source:
    """Something an answer can cite, numbered as the prompt numbers it (`ref`)."""

    ref: int
    key: str
    version: int
    title: str
    body: str
    kind: str = "snippet"  # "snippet" | "chunk" | "facts"
    score: float = 0.0
    category: str = ""
    last_reviewed_at: str | None = None
    citation: dict = field(default_factory=dict)
    sentences: tuple[str, ...] = ()  # for facts: the ready-made sentences, in order
    part_similarities: dict = field(default_factory=dict)  # RetrievedSnippet.part_similarities


@dataclass(frozen=True)
class AssembledPrompt:
    """The rendered prompt plus the material it was built from (the extractive provider and checks use it)."""

    template_version: str
    cache_eligible: bool
    system: str
    user: str
    question: str
    language: str
    channel: str
    intent: str
    sources: tuple[Source, ...]
    core_sections: tuple[CoreSection, ...]
    facts_text: str = ""  # the services and hours data as JSON: what a grounded answer may quote
    # The conversation so far ([{customer, assistant}], oldest first): data for an LLM, never a source.
    history: tuple[dict, ...] = ()
    customer_message: str = ""  # the customer's words; `question` is what they were read as (a follow-up)

    @property
    def token_estimate(self) -> int:
        return token_estimate(self.system) + token_estimate(self.user)

    @property
    def knowledge_sources(self) -> tuple[Source, ...]:
        return tuple(source for source in self.sources if source.kind != "facts")

    def source_by_ref(self, ref: int) -> Source | None:
        for source in self.sources:
            if source.ref == ref:
                return source
        return None

    def anthropic_system(self) -> list[dict]:
        """The system block for the Messages API, marked for the prompt cache when eligible."""
        block: dict[str, Any] = {"type": "text", "text": self.system}
        if self.cache_eligible:
            block["cache_control"] = {"type": "ephemeral"}
        return [block]

    def chat_messages(self) -> list[dict]:
        """Chat Completions messages: the system message first, so providers can cache the shared prefix."""
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def to_dict(self) -> dict:
        """The prompt for a client that calls its own LLM (the /prompts/assemble/ endpoint)."""
        return {"version": self.template_version, "cache_eligible": self.cache_eligible, "system": self.system,
                "messages": [{"role": "user", "content": self.user}]}


# ----------------------------------------------------------------------------- escaping


def _ascii_brackets(text: str) -> str:
    # Fullwidth and small-form brackets read as "<" and ">" to a model (and normalise to them under NFKC),
    # so "＜/customer_message＞" could pass for a closing tag: fold them into ASCII before escaping.
    return text.translate(_LOOKALIKE_BRACKETS)


def escape_text(text: str) -> str:
    """Plain text safe inside a delimited section: no control characters, no angle brackets (or look-alikes)."""
    cleaned = _ascii_brackets(_CONTROL_CHARS.sub("", text or ""))
    return cleaned.replace("<", "&lt;").replace(">", "&gt;")


def _escape_attribute(text: str) -> str:
    return escape_text(text).replace('"', "&quot;").replace("\n", " ")


def dump_data_json(data: Any) -> str:
    """Deterministic JSON in which no character can close a tag (`<`, `>` and `&` are \\u-escaped)."""
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False, default=str)
    text = _ascii_brackets(_CONTROL_CHARS.sub("", text))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_template(template: str, values: dict[str, str]) -> str:
    """Fill `{{name}}` placeholders in one pass, so a value that contains `{{...}}` stays literal."""
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


# ----------------------------------------------------------------------------- assembly


def order_core_sections(sections: Iterable[CoreSection], *, tags: dict[str, list[str]] | None = None,
                        role_order: Sequence[str] | None = None) -> list[CoreSection]:
    """Sections in the configured order: by role (settings.PROMPT_ROLE_ORDER), then `order:N` tag, then key."""
    roles = list(role_order if role_order is not None else settings.PROMPT_ROLE_ORDER)
    tags = tags or {}

    def rank(section: CoreSection) -> tuple:
        role_rank = roles.index(section.role) if section.role in roles else len(roles)
        explicit = [int(m.group(1)) for tag in tags.get(section.key, []) if (m := _ORDER_TAG.match(tag))]
        return role_rank, explicit[0] if explicit else 1_000_000, section.key

    return sorted(sections, key=rank)


def render_business_rules(sections: Sequence[CoreSection]) -> str:
    if not sections:
        return "(none)"
    blocks = []
    for number, section in enumerate(sections, start=1):
        blocks.append(f'<rule n="{number}" role="{_escape_attribute(section.role)}" '
                      f'title="{_escape_attribute(section.title)}">\n{escape_text(section.body.strip())}\n</rule>')
    return "\n".join(blocks)


def build_sources(*, snippets: Sequence[RetrievedSnippet], facts: Any | None, language: str) -> list[Source]:
    """Number the citable material: knowledge first (in retrieval order), then the structured facts."""
    sources: list[Source] = []
    for snippet in snippets:
        sources.append(Source(ref=len(sources) + 1, key=snippet.key, version=snippet.version, title=snippet.title,
                              body=snippet.body, kind="chunk" if snippet.source == "chunk" else "snippet",
                              score=float(snippet.score), category=snippet.category,
                              last_reviewed_at=snippet.last_reviewed_at, citation=dict(snippet.citation or {}),
                              part_similarities=dict(snippet.part_similarities or {})))
    if facts is not None:
        grouped: dict[str, list[str]] = {}
        for key, sentence in facts.sentences(language=language):
            grouped.setdefault(key, []).append(sentence)
        for key, sentences in grouped.items():
            sources.append(Source(ref=len(sources) + 1, key=key, version=0, title=FACT_TITLES.get(key, key),
                                  body="\n".join(sentences), kind="facts", score=1.0,
                                  sentences=tuple(sentences)))
    return sources


def build_raw_data(*, sources: Sequence[Source], facts: Any | None, personality: dict | None) -> dict:
    """raw_data_json: {services, hours, knowledge, personality}, each fact group carrying its ref number."""
    refs = {source.key: source.ref for source in sources if source.kind == "facts"}
    knowledge = []
    for source in sources:
        if source.kind == "facts":
            continue
        entry = {"ref": source.ref, "title": source.title, "category": source.category, "body": source.body.strip()}
        if source.last_reviewed_at:
            entry["last_reviewed"] = source.last_reviewed_at
        if source.citation:
            entry["from"] = source.citation
        knowledge.append(entry)
    services: dict = {}
    hours: dict = {}
    if facts is not None:
        data = facts.to_dict()
        if data.get("services"):
            services = {"ref": refs.get("facts:services"), "currency": data.get("currency"),
                        "items": data["services"], "asked_about": data.get("matched_services", [])}
        if data.get("days_asked") or data.get("weekly_hours"):
            hours = {"ref": refs.get("facts:hours"), "timezone": data.get("timezone"), "today": data.get("today"),
                     "days_asked": data.get("days_asked", []), "weekly": data.get("weekly_hours", {})}
    return {"services": services, "hours": hours, "knowledge": knowledge, "personality": dict(personality or {})}


def render_recent_turns(history: Sequence[dict]) -> str:
    """The recent turns as escaped JSON: only the customer's and the assistant's words, oldest first."""
    return dump_data_json([{"customer": str(turn.get("customer", "")), "assistant": str(turn.get("assistant", ""))}
                           for turn in history])


def assemble_prompt(*, question: str, language: str, channel: str, intent: str = "other",
                    snippets: Sequence[RetrievedSnippet] = (), facts: Any | None = None,
                    core_sections: Sequence[CoreSection] = (), personality: dict | None = None,
                    template: PromptTemplate | None = None, history: Sequence[dict] = (),
                    read_as: str | None = None) -> AssembledPrompt:
    """Render the answer-shaper prompt; `core_sections` are used in the order given.

    `history` (the session's recent turns) goes into the user message as data; `read_as` is the text a
    follow-up was read as (topic + message), which the extractive answer reads instead of the bare message.
    """
    template = template or load_prompt_template()
    language = normalize_language(language)
    sources = build_sources(snippets=snippets, facts=facts, language=language)
    raw_data = build_raw_data(sources=sources, facts=facts, personality=personality)
    user = render_template(template.user_template, {
        "channel": _escape_attribute(channel),
        "business_rules": render_business_rules(core_sections),
        "raw_data_json": dump_data_json(raw_data),
        "recent_turns": render_recent_turns(history),
        "language_name": LANGUAGE_NAMES[language],
        "intent": _escape_attribute(intent),
        "customer_message": escape_text(question.strip()),
    })
    facts_text = json.dumps({"services": raw_data["services"], "hours": raw_data["hours"]}, ensure_ascii=False,
                            default=str)
    return AssembledPrompt(template_version=template.version, cache_eligible=template.cache_eligible,
                           system=template.system_message, user=user, question=read_as or question,
                           language=language, channel=channel, intent=intent, sources=tuple(sources),
                           core_sections=tuple(core_sections), facts_text=facts_text,
                           history=tuple(dict(turn) for turn in history), customer_message=question)


# ----------------------------------------------------------------------------- the one read


def core_sections_for_channel(*, channel: str, today: date | None = None) -> list[CoreSection]:
    """Active, released guardrail and behaviour sections for a channel, in the configured order."""
    from django.db.models import Q

    from conversations.facts import tenant_today
    from knowledge.models import Role, SnippetVersion, Status

    today = today or tenant_today()
    rows = list(SnippetVersion.objects
            .filter(is_active=True, role__in=[Role.GUARDRAIL, Role.BEHAVIOUR], channels__contains=[channel])
            # Drafts are never used; a deprecated rule is one the owner has retired.
            .exclude(status__in=[Status.DRAFT, Status.DEPRECATED])
            .filter(Q(valid_from__isnull=True) | Q(valid_from__lte=today))
            .filter(Q(valid_until__isnull=True) | Q(valid_until__gte=today))
            .values("key", "version", "role", "title", "body", "tags"))
    sections = [CoreSection(key=row["key"], version=row["version"], role=row["role"], title=row["title"],
                            body=row["body"]) for row in rows]
    return order_core_sections(sections, tags={row["key"]: list(row["tags"] or []) for row in rows})
