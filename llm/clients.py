"""One SDK client per configuration and process, so every call reuses one HTTP connection pool."""
from __future__ import annotations

import threading

import httpx2

from llm.config import LlmConfig

_lock = threading.Lock()
_clients: dict[tuple, object] = {}


def default_http_client(config: LlmConfig) -> httpx2.Client | None:
    """The HTTP client for a configuration that brings none: None lets the SDK build its own pool."""
    return None


def _build(config: LlmConfig):
    # Imported on demand: the SDKs are only loaded where an LLM is configured.
    http_client = config.http_client or default_http_client(config)
    if config.provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(api_key=config.api_key, base_url=config.base_url, timeout=config.timeout,
                                   max_retries=config.max_retries, http_client=http_client)
    import openai

    return openai.OpenAI(api_key=config.api_key, base_url=config.base_url, timeout=config.timeout,
                         max_retries=config.max_retries, http_client=http_client)


def sdk_client(config: LlmConfig):
    """The cached Anthropic or OpenAI client for this configuration (built once)."""
    key = config.client_key
    client = _clients.get(key)
    if client is None:
        with _lock:  # two first turns at once must not build two pools
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = _build(config)
    return client


def clients_clear() -> None:
    """Forget every cached client (tests, and after settings change at runtime)."""
    with _lock:
        _clients.clear()


def clients_count() -> int:
    return len(_clients)
