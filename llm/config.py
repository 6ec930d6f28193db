"""Which hosted LLM to call and how, read from settings in one place."""
from __future__ import annotations

from dataclasses import dataclass, field

import httpx2
from django.conf import settings

from llm.errors import LlmNotConfigured

HOSTED = ("anthropic", "openai")


@dataclass(frozen=True)
class LlmConfig:
    """A hosted provider, its credentials and call defaults; equal configurations share one client."""

    provider: str
    api_key: str = field(repr=False)
    model: str
    base_url: str | None = None
    timeout: float = 20.0
    max_retries: int = 1
    max_tokens: int = 500
    # A caller-supplied HTTP client (tests: a mocked transport); None lets the SDK build its pooled one.
    http_client: httpx2.Client | None = field(default=None, repr=False)

    @property
    def client_key(self) -> tuple:
        """What the SDK client is built from (the model and output budget are per call)."""
        return (self.provider, self.api_key, self.base_url, self.timeout, self.max_retries, self.http_client)


def configured_name() -> str:
    """settings.LLM_PROVIDER, normalised (extractive when unset)."""
    return (settings.LLM_PROVIDER or "extractive").strip().lower()


def has_api_key(name: str) -> bool:
    """Whether the named provider has what it needs to run (the extractive one always has)."""
    if name == "anthropic":
        return bool(settings.ANTHROPIC_API_KEY)
    if name == "openai":
        return bool(settings.OPENAI_API_KEY)
    return name == "extractive"


def hosted_enabled() -> bool:
    """A hosted LLM is configured and has a key."""
    name = configured_name()
    return name in HOSTED and has_api_key(name)


def config_from_settings(name: str | None = None, **overrides) -> LlmConfig:
    """The configuration of `name` (default LLM_PROVIDER) from settings; raises LlmNotConfigured."""
    name = (name or configured_name()).strip().lower()
    if name not in HOSTED:
        raise LlmNotConfigured(f"Unknown LLM_PROVIDER {name!r} (expected one of extractive, {', '.join(HOSTED)})",
                               provider=name)
    prefix = name.upper()
    values = {"provider": name, "api_key": getattr(settings, f"{prefix}_API_KEY"),
              "model": getattr(settings, f"{prefix}_MODEL"), "base_url": getattr(settings, f"{prefix}_BASE_URL"),
              "timeout": float(settings.LLM_TIMEOUT_SECONDS), "max_retries": int(settings.LLM_MAX_RETRIES),
              "max_tokens": int(settings.LLM_MAX_OUTPUT_TOKENS)}
    values.update({key: value for key, value in overrides.items() if value is not None})
    if not values["api_key"]:
        raise LlmNotConfigured(f"{prefix}_API_KEY is not set", provider=name)
    return LlmConfig(**values)
