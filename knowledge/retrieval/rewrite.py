"""Optional query rewriting by the hosted LLM: a non-English question becomes an English search query.

Only with a hosted provider configured (LLM_PROVIDER=anthropic|openai with a key), and only inside a chat
turn: the call goes down the one LLM path (`llm.complete`) under the turn's meter, so it is priced into the
turn and the session and is never made past the hard cost ceiling. Retrieval run by no turn (smoke tests,
the gap digest's re-answering, the retrieve API) has no meter and makes no call. Any failure returns None
and retrieval carries on with the offline glossary expansion: rewriting may improve a search, never break it.
"""
from __future__ import annotations

import logging

import llm

logger = logging.getLogger(__name__)

REWRITE_TIMEOUT_SECONDS = 4.0
MAX_REWRITE_CHARS = 300
MAX_QUERY_CHARS = 1000
MAX_REWRITE_TOKENS = 60
INSTRUCTION = ("Rewrite the customer's message as a short English search query for a business's FAQ. "
               "Translate Swahili or Sheng to English, keep names, products and numbers, add no facts, "
               "and reply with the query only.")


def rewrite_enabled() -> bool:
    """A hosted LLM is configured, and a turn's meter is there to price the call."""
    return llm.hosted_enabled() and llm.current_meter() is not None


def rewrite_request(query: str) -> llm.LlmRequest:
    """The rewrite call: a short reply, a tight timeout and no retry (the glossary already has an answer)."""
    return llm.LlmRequest(system=INSTRUCTION, user=query[:MAX_QUERY_CHARS], max_tokens=MAX_REWRITE_TOKENS,
                          purpose="rewrite", timeout=REWRITE_TIMEOUT_SECONDS, max_retries=0)


def query_rewrite(*, query: str, language: str) -> str | None:
    """An English search query for `query` from the hosted LLM, or None (English, no LLM or meter, ceiling, error)."""
    if language == "en" or not query.strip() or not rewrite_enabled():
        return None
    try:
        completion = llm.complete(rewrite_request(query))
    except llm.LlmError as exc:
        logger.warning("query rewrite skipped: %s (retryable=%s)", exc.code, exc.retryable)
        return None
    text = " ".join(completion.text.split())[:MAX_REWRITE_CHARS]
    return text or None
