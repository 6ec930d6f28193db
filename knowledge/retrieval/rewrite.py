"""Optional query rewriting by the hosted LLM: a non-English question becomes an English search query.

Only used when a hosted provider is configured (LLM_PROVIDER=anthropic|openai with a key). Any failure
returns None and retrieval carries on with the offline glossary expansion: rewriting may improve a
search, never break it.
"""
from __future__ import annotations

import logging

from django.conf import settings

logger = logging.getLogger(__name__)

REWRITE_TIMEOUT_SECONDS = 4.0
MAX_REWRITE_CHARS = 300
INSTRUCTION = ("Rewrite the customer's message as a short English search query for a business's FAQ. "
               "Translate Swahili or Sheng to English, keep names, products and numbers, add no facts, "
               "and reply with the query only.")


def rewrite_enabled() -> bool:
    provider = settings.LLM_PROVIDER
    return (provider == "anthropic" and bool(settings.ANTHROPIC_API_KEY)) or \
        (provider == "openai" and bool(settings.OPENAI_API_KEY))


def query_rewrite(*, query: str, language: str) -> str | None:
    """An English search query for `query` from the hosted LLM, or None (English input, no provider, error)."""
    if language == "en" or not rewrite_enabled() or not query.strip():
        return None
    try:
        if settings.LLM_PROVIDER == "anthropic":
            import anthropic

            client = anthropic.Anthropic(api_key=settings.ANTHROPIC_API_KEY, base_url=settings.ANTHROPIC_BASE_URL,
                                         timeout=REWRITE_TIMEOUT_SECONDS, max_retries=0)
            message = client.messages.create(model=settings.ANTHROPIC_MODEL, max_tokens=60, system=INSTRUCTION,
                                             messages=[{"role": "user", "content": query[:1000]}])
            text = "".join(getattr(block, "text", "") for block in message.content)
        else:
            import openai

            client = openai.OpenAI(api_key=settings.OPENAI_API_KEY, base_url=settings.OPENAI_BASE_URL,
                                   timeout=REWRITE_TIMEOUT_SECONDS, max_retries=0)
            completion = client.chat.completions.create(
                model=settings.OPENAI_MODEL, max_tokens=60,
                messages=[{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": query[:1000]}])
            text = completion.choices[0].message.content or ""
    except Exception as exc:  # noqa: BLE001 - any provider failure just means "no rewrite"
        logger.warning("query rewrite skipped: %s", exc.__class__.__name__)
        return None
    text = " ".join(text.split())[:MAX_REWRITE_CHARS]
    return text or None
