"""Answer providers behind one interface, chosen by settings: anthropic | openai | extractive (default).

    provider = get_provider()            # settings.LLM_PROVIDER
    result = provider.generate(prompt)   # ProviderResult, or ProviderError(retryable=...)
"""
from __future__ import annotations

from django.conf import settings

from conversations.providers.base import (Provider, ProviderError, ProviderNotConfigured, ProviderResult,
                                          TextDelta)
from conversations.providers.extractive import ExtractiveProvider

PROVIDER_NAMES = ("extractive", "anthropic", "openai")

__all__ = ["PROVIDER_NAMES", "ExtractiveProvider", "Provider", "ProviderError", "ProviderNotConfigured",
           "ProviderResult", "TextDelta", "get_provider", "has_api_key"]


def has_api_key(name: str) -> bool:
    """Whether the named provider has what it needs to run (the extractive one always has)."""
    if name == "anthropic":
        return bool(settings.ANTHROPIC_API_KEY)
    if name == "openai":
        return bool(settings.OPENAI_API_KEY)
    return name == "extractive"


def get_provider(name: str | None = None, **options) -> Provider:
    """The provider called `name` (default settings.LLM_PROVIDER); raises ProviderNotConfigured."""
    name = (name or settings.LLM_PROVIDER or "extractive").strip().lower()
    if name == "extractive":
        # LLM options (max_tokens, timeout, http_client...) mean nothing to the offline provider.
        return ExtractiveProvider(**{k: v for k, v in options.items() if k in ("similarity", "max_sentences")})
    # Imported on demand: the client libraries are only loaded where an LLM is configured.
    if name == "anthropic":
        from conversations.providers.anthropic import AnthropicProvider

        return AnthropicProvider(**options)
    if name == "openai":
        from conversations.providers.openai import OpenAIProvider

        return OpenAIProvider(**options)
    raise ProviderNotConfigured(f"Unknown LLM_PROVIDER {name!r} (expected one of {', '.join(PROVIDER_NAMES)})",
                                provider=name)
