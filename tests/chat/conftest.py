"""Chat tests: a small spa seeded in the test tenant (real local embeddings, real database)."""
import sys
from pathlib import Path

import pytest

# chat_kb.py / chat_http.py sit beside the tests (no package: test basenames are unique across the suite).
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def spa(tenant):
    """The test tenant with services, weekly and special hours, and six embedded snippets."""
    from chat_kb import seed_all

    seed_all()
    return tenant


@pytest.fixture
def chat(spa, api_client):
    """POST a turn as JSON: chat(message=..., **fields) -> (status, body)."""
    client, headers = api_client

    def post(path: str = "/api/v1/chat/turns/", **payload):
        response = client.post(path, data=payload, content_type="application/json", **headers)
        return response

    return post


@pytest.fixture
def llm(settings, monkeypatch):
    """Configure a provider whose HTTP goes to a FakeLlmServer: llm("anthropic"|"openai") -> server."""
    import conversations.shaping as shaping
    from conversations import services

    from chat_llm import FakeLlmServer

    def configure(name: str) -> FakeLlmServer:
        from conversations.providers.anthropic import AnthropicProvider
        from conversations.providers.openai import OpenAIProvider

        server = FakeLlmServer()
        settings.LLM_PROVIDER = name
        settings.ANTHROPIC_API_KEY = "sk-ant-test" if name == "anthropic" else ""
        settings.OPENAI_API_KEY = "sk-test" if name == "openai" else ""
        cls = AnthropicProvider if name == "anthropic" else OpenAIProvider
        answer_provider = cls(api_key="test-key", http_client=server.client(), max_retries=0)
        intent_provider = cls(api_key="test-key", http_client=server.client(), max_retries=0, max_tokens=20)
        monkeypatch.setattr(shaping, "_cached_provider", lambda requested: answer_provider)
        monkeypatch.setattr(services, "_intent_provider", lambda: intent_provider)
        return server

    return configure
