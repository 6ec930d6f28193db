"""Owners see only their own tenant's knowledge in the admin."""
from __future__ import annotations

import pytest
from django_tenants.utils import schema_context

from tests.support.builders import make_user, make_version as snippet

pytestmark = pytest.mark.usefixtures("tenant")


def test_an_owner_of_another_tenant_sees_only_their_own_snippets(tenant, other_tenant, client_for):
    mine = snippet("parking", title="Parking at Test Spa", body="Free parking behind the spa.")
    with schema_context(other_tenant.schema_name):
        snippet("walk-ins", title="Walk-ins at Other Salon", body="Walk-ins welcome.")
        other_owner = make_user("other-owner", superuser=True)
        client = client_for(other_tenant)
        client.force_login(other_owner)
    listing = client.get("/admin/knowledge/snippet/").content.decode()
    assert "walk-ins" in listing
    assert "parking" not in listing and "Test Spa" not in listing
    search = client.get("/admin/knowledge/snippet/?q=parking").content.decode()
    assert '<span class="kn-key">' not in search
    history = client.get(f"/admin/knowledge/snippet/{mine.snippet_id}/versions/")
    assert history.status_code in (200, 404)
    assert b"Free parking behind the spa." not in history.content
    queue = client.get("/admin/knowledge/snippet/review/").content.decode()
    assert "parking" not in queue


def test_a_session_from_one_tenant_does_not_log_in_on_another(tenant, other_tenant, client_for, owner):
    snippet("parking")
    client = client_for(tenant)
    client.force_login(owner)
    assert client.get("/admin/knowledge/snippet/").status_code == 200
    # The same browser (cookie) on the other business's host is anonymous there.
    response = client.get("/admin/knowledge/snippet/", HTTP_HOST=other_tenant.get_primary_domain().domain)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_knowledge_is_not_administered_on_the_public_host(client_for, tenants):
    response = client_for("localhost").get("/admin/knowledge/snippet/")
    assert response.status_code in (302, 404)
    assert b"kn-key" not in response.content
