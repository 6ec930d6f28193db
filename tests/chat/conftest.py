"""Chat tests: a small spa seeded in the test tenant (real local embeddings, real database)."""
import sys
from pathlib import Path

import pytest

# chat_kb.py / chat_http.py sit beside the tests, the mocked LLM transports beside the shaping tests (no
# package: test basenames are unique across the suite).
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "shaping"))


@pytest.fixture
def spa(tenant):
    """The test tenant with services, weekly and special hours, and six embedded snippets."""
    from chat_kb import seed_all

    seed_all()
    return tenant


@pytest.fixture
def site(committed):
    """The seeded spa served over real HTTP for headless Chromium, with an owner `chat-owner` who can log in."""
    from django.contrib.auth import get_user_model

    from chat_http import serve
    from chat_kb import seed_all

    seed_all()
    user = get_user_model().objects.create_user("chat-owner", password="pw-chat-12345", is_staff=True,
                                                 is_superuser=True)
    with serve() as port:
        yield f"http://tenant.test.localhost:{port}"
    get_user_model().objects.filter(pk=user.pk).delete()


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
    """Configure a provider whose HTTP goes to a FakeLlmServer: llm("anthropic"|"openai") -> server.

    Only the transport is replaced: every call (intent, rewrite, answer) goes through the real `llm` path
    and the real Anthropic/OpenAI client, built once per configuration.
    """
    from llm import clients

    from chat_llm import FakeLlmServer

    def configure(name: str) -> FakeLlmServer:
        server = FakeLlmServer()
        settings.LLM_PROVIDER = name
        settings.ANTHROPIC_API_KEY = "sk-ant-test" if name == "anthropic" else ""
        settings.OPENAI_API_KEY = "sk-test" if name == "openai" else ""
        settings.LLM_MAX_RETRIES = 0
        monkeypatch.setattr(clients, "default_http_client", lambda config: server.client())
        clients.clients_clear()
        return server

    return configure
