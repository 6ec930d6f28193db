"""Owner-approved versions of snippets in the customer's language, for the extractive answer.

The extractive provider cannot translate, so a Swahili customer used to get Swahili framing around quoted
English. An owner can write a Swahili version of a snippet version (`SnippetVersion.translations`,
`{"sw": {"title", "body"}}`); when the customer writes in Swahili, the extractive answer quotes that
version instead, and its citation says so (`language: "sw"`, the Swahili title and excerpt). LLM providers
still read the text as written and answer in the customer's language themselves.
"""
from __future__ import annotations

from dataclasses import replace

from conversations.prompting import AssembledPrompt, Source
from knowledge.models import SnippetVersion
from telemetry.models import EventName
from telemetry.services import event_record

# Carried in Source.citation (prompting's per-source citation detail) and lifted into Citation.language.
LANGUAGE_FIELD = "language"


def approved_versions(*, keys: list[tuple[str, int]], language: str) -> dict[tuple[str, int], dict[str, str]]:
    """{(key, version): {"title", "body"}} of the given snippet versions that have a version in `language`."""
    if not keys:
        return {}
    wanted = set(keys)
    rows = (SnippetVersion.objects.filter(key__in={key for key, _ in keys}, translations__has_key=language)
            .values_list("key", "version", "translations"))
    found = {}
    for key, version, translations in rows:
        text = (translations or {}).get(language) or {}
        if (key, version) in wanted and str(text.get("body") or "").strip():
            found[(key, version)] = {"title": str(text.get("title") or "").strip(), "body": str(text["body"])}
    return found


def in_customer_language(prompt: AssembledPrompt) -> AssembledPrompt:
    """The prompt with each snippet replaced by its owner-approved version in the customer's language."""
    if prompt.language == "en":
        return prompt  # snippets are written in English; an English version is the original
    snippets = [source for source in prompt.sources if source.kind == "snippet"]
    versions = approved_versions(keys=[(s.key, s.version) for s in snippets], language=prompt.language)
    if not versions:
        return prompt
    sources: list[Source] = []
    for source in prompt.sources:
        text = versions.get((source.key, source.version)) if source.kind == "snippet" else None
        if text is None:
            sources.append(source)
            continue
        sources.append(replace(source, title=text["title"] or source.title, body=text["body"],
                               citation={**source.citation, LANGUAGE_FIELD: prompt.language}))
    return replace(prompt, sources=tuple(sources))


def record_missing_versions(answer, *, language: str) -> None:
    """Note the snippets an extractive answer quoted as written to a customer of another language (the gap
    digest lists them: an owner-approved version would be quoted next time)."""
    if language == "en":
        return
    keys = [source.key for _, source, _ in answer.cited
            if source.kind == "snippet" and source.citation.get(LANGUAGE_FIELD) != language]
    if keys:
        event_record(name=EventName.TRANSLATION_MISSING, payload={"language": language, "keys": keys})
