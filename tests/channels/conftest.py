"""Channel tests: a connected WhatsApp number, a stand-in Graph API (httpx MockTransport), signed deliveries."""
import sys
from pathlib import Path

import pytest

# channels_support.py sits beside the tests (unique basenames across the suite).
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def graph_api(settings):
    """A stand-in Graph API: queue responses with .respond(status, body); every request is kept in .requests."""
    from channels.whatsapp import graph

    from channels_support import FakeGraph

    settings.WHATSAPP_RETRY_BASE_SECONDS = 0
    settings.WHATSAPP_GRAPH_URL = "https://graph.test"
    settings.WHATSAPP_GRAPH_VERSION = "v23.0"
    fake = FakeGraph()
    graph.use_transport(fake.transport())
    yield fake
    graph.use_transport(None)


@pytest.fixture
def wa_number(tenant):
    """The test tenant's connected number (phone number id of the documented payloads)."""
    from channels.registry.services import whatsapp_number_connect

    from channels_support import APP_SECRET, PHONE_NUMBER_ID, TOKEN, VERIFY_TOKEN

    return whatsapp_number_connect(tenant=tenant, phone_number_id=PHONE_NUMBER_ID, access_token=TOKEN,
                                   app_secret=APP_SECRET, verify_token=VERIFY_TOKEN,
                                   display_phone_number="254711000111").number


@pytest.fixture
def spa(spa, wa_number):
    """The small spa of tests/support/spa.py as the test tenant's knowledge, with its WhatsApp number connected."""
    return spa


@pytest.fixture
def deliver(client_for, django_capture_on_commit_callbacks):
    """POST a signed delivery to the platform host, running what it queues on commit: deliver(body) -> response."""
    from channels_support import post_delivery

    def send(body, *, secret=None, signature=None):
        with django_capture_on_commit_callbacks(execute=True):
            return post_delivery(client_for("localhost"), body, secret=secret, signature=signature)

    return send
