"""Chat tests: the small spa (root conftest's `spa`, `chat`) with real local embeddings, served over HTTP for
Chromium (`site`), and LLM providers whose HTTP goes to a stand-in (`llm`)."""
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from llm import clients
from tests.support.builders import make_user
from tests.support.live import serve
from tests.support.spa import seed_all

# chat_http.py / chat_llm.py sit beside the tests, the mocked LLM transports beside the shaping tests (no
# package: test basenames are unique across the suite).
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "shaping"))

from chat_llm import FakeLlmServer  # noqa: E402


@pytest.fixture
def site(committed):
    """The seeded spa served over real HTTP for headless Chromium, with an owner `chat-owner` who can log in."""
    seed_all()
    user = make_user("chat-owner", superuser=True, password="pw-chat-12345")
    with serve() as port:
        yield f"http://tenant.test.localhost:{port}"
    get_user_model().objects.filter(pk=user.pk).delete()


@pytest.fixture
def llm(settings, monkeypatch):
    """Configure a provider whose HTTP goes to a FakeLlmServer: llm("anthropic"|"openai") -> server.

    Only the transport is replaced: every call (intent, rewrite, answer) goes through the real `llm` path
    and the real Anthropic/OpenAI client, built once per configuration.
    """

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
