"""Answer providers behind one interface, chosen by settings: anthropic | openai (hosted) | extractive (default).

    provider = get_provider()                         # settings.LLM_PROVIDER
    result = provider.generate(prompt, meter=meter)   # ProviderResult, or ProviderError(retryable=...)

Hosted answers go down the one LLM path (`llm`: cached client, timeout, typed errors, pricing); the
extractive provider composes an answer offline.
"""
from __future__ import annotations

from conversations.providers.base import Provider, ProviderError, ProviderNotConfigured, ProviderResult, TextDelta
from conversations.providers.extractive import ExtractiveProvider
from conversations.providers.hosted import HostedProvider
from llm import config_from_settings, configured_name, has_api_key

PROVIDER_NAMES = ("extractive", "anthropic", "openai")

__all__ = ["PROVIDER_NAMES", "ExtractiveProvider", "HostedProvider", "Provider", "ProviderError",
           "ProviderNotConfigured", "ProviderResult", "TextDelta", "get_provider", "has_api_key"]


def get_provider(name: str | None = None, **options) -> Provider:
    """The provider called `name` (default settings.LLM_PROVIDER); raises ProviderNotConfigured.

    Options: `similarity`, `max_sentences` for the extractive provider; LlmConfig fields (model, timeout,
    max_retries, max_tokens, http_client...) for a hosted one.
    """
    name = (name or configured_name()).strip().lower()
    if name == "extractive":
        return ExtractiveProvider(**{k: v for k, v in options.items() if k in ("similarity", "max_sentences")})
    return HostedProvider(config_from_settings(name, **options))
