"""API keys: stored as a SHA-256 digest only, compared in constant time, shown once, revocable at once (admin
action, `revoke_api_key` command), with the last-used time recorded."""
from __future__ import annotations

import hashlib
import hmac
import io
import re

import pytest
from django.core.management import CommandError, call_command

import ratiba.services
from ratiba.models import ApiKey
from ratiba.services import api_key_authenticate, api_key_issue


def _whoami(client_for, tenant, raw: str) -> int:
    return client_for(tenant).get("/api/v1/whoami/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code


def test_only_a_digest_and_a_prefix_are_stored(tenant):
    issued = api_key_issue(tenant=tenant, label="widget")
    row = ApiKey.objects.filter(pk=issued.api_key.pk).values().get()
    assert row["key_hash"] == hashlib.sha256(issued.raw.encode()).hexdigest()
    assert issued.raw.startswith(f"rk_{row['prefix']}_")
    assert not any(issued.raw in str(value) for value in row.values())


def test_the_digest_is_compared_in_constant_time(tenant, monkeypatch):
    issued = api_key_issue(tenant=tenant)
    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(ratiba.services.hmac, "compare_digest", lambda a, b: compared.append(a) or real(a, b))
    assert api_key_authenticate(raw=issued.raw, tenant=tenant) == issued.api_key
    assert api_key_authenticate(raw=issued.raw[:-2] + "zz", tenant=tenant) is None
    assert compared == [issued.api_key.key_hash, issued.api_key.key_hash]


def test_the_command_shows_the_key_once_and_nowhere_else(tenant, client_for):
    out, err = io.StringIO(), io.StringIO()
    call_command("issue_api_key", tenant.schema_name, "--label", "bridge", stdout=out, stderr=err)
    raw = out.getvalue().strip().splitlines()[-1]
    stored = ApiKey.objects.get(label="bridge")
    assert raw.startswith(f"rk_{stored.prefix}_") and raw not in err.getvalue()
    assert stored.prefix in err.getvalue()
    response = client_for(tenant).get("/api/v1/whoami/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.json() == {"tenant": tenant.schema_name, "key_label": "bridge"}
    assert raw not in response.content.decode()


def test_revoking_by_prefix_stops_the_key_at_once_and_reports_its_last_use(tenant, client_for):
    issued = api_key_issue(tenant=tenant, label="widget")
    assert _whoami(client_for, tenant, issued.raw) == 200
    issued.api_key.refresh_from_db()
    assert issued.api_key.last_used_at is not None
    out = io.StringIO()
    call_command("revoke_api_key", issued.api_key.prefix, stdout=out)
    used = f"{issued.api_key.last_used_at:%Y-%m-%d %H:%M} UTC"
    assert out.getvalue() == f"Revoked {issued.api_key.prefix} ({tenant.schema_name}, widget; last used {used}).\n"
    assert _whoami(client_for, tenant, issued.raw) == 401
    again = io.StringIO()
    call_command("revoke_api_key", issued.api_key.prefix, stdout=again)
    assert "was already revoked" in again.getvalue()


def test_a_leaked_key_can_be_pasted_whole(tenant, client_for):
    issued = api_key_issue(tenant=tenant)
    call_command("revoke_api_key", issued.raw, stdout=io.StringIO())
    assert _whoami(client_for, tenant, issued.raw) == 401


def test_revoking_every_key_of_one_business_leaves_the_others(tenant, other_tenant, client_for):
    mine = [api_key_issue(tenant=tenant, label=f"k{n}") for n in range(3)]
    theirs = api_key_issue(tenant=other_tenant, label="other")
    out = io.StringIO()
    call_command("revoke_api_key", "--tenant", tenant.schema_name, "--all", stdout=out)
    assert out.getvalue().endswith(f"3 key(s) of {tenant.schema_name} revoked.\n")
    assert [_whoami(client_for, tenant, k.raw) for k in mine] == [401, 401, 401]
    assert _whoami(client_for, other_tenant, theirs.raw) == 200


@pytest.mark.parametrize("args, message", [
    (["0123456789ab"], "No API key with prefix 0123456789ab"),
    (["not-a-key"], "neither a key prefix"),
    ([], "Give key prefixes"),
    (["--all"], "Give key prefixes"),
    (["--tenant", "nope", "--all"], "No tenant with schema 'nope'"),
])
def test_the_command_refuses_what_it_cannot_revoke(tenant, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("revoke_api_key", *args)


def _owner_client(tenant, client_for):
    from tests.support.builders import make_user

    owner = make_user("owner", superuser=True)
    client = client_for(tenant)
    client.force_login(owner)
    return client


def test_an_owner_issues_a_chat_key_in_the_admin_and_sees_it_once(tenant, client_for):
    from knowledge.models import AuditEntry

    client = _owner_client(tenant, client_for)
    form = client.get("/admin/ratiba/apikey/add/?scope=chat&label=website-widget").content.decode()
    assert 'value="website-widget"' in form and '<option value="chat" selected>' in form
    assert 'name="tenant"' not in form  # an owner issues keys for their own business only
    response = client.post("/admin/ratiba/apikey/add/", {"label": "website-widget", "scope": "chat"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    raw = re.search(r'value="(rk_[0-9a-f]{12}_[^"]+)"', response.content.decode()).group(1)
    key = ApiKey.objects.get(label="website-widget")
    assert (key.tenant_id, key.scope, raw.startswith(f"rk_{key.prefix}_")) == (tenant.pk, "chat", True)
    assert api_key_authenticate(raw=raw, tenant=tenant) == key
    listing = client.get("/admin/ratiba/apikey/").content.decode()
    assert key.prefix in listing and raw not in listing
    assert raw not in client.get(f"/admin/ratiba/apikey/{key.pk}/change/").content.decode()
    entry = AuditEntry.objects.get(subject="api_key")
    assert (entry.action, entry.key, entry.actor, entry.detail) == (
        "issued", key.prefix, "user:owner", {"label": "website-widget", "scope": "chat"})


def test_an_owner_relabels_and_revokes_their_keys_but_never_sees_another_business_keys(tenant, other_tenant,
                                                                                       client_for):
    from knowledge.models import AuditEntry

    mine = api_key_issue(tenant=tenant, label="widget", scope="chat")
    theirs = api_key_issue(tenant=other_tenant, label="their-secret-label")
    assert _whoami(client_for, tenant, api_key_issue(tenant=tenant).raw) == 200  # a used key shows its time
    client = _owner_client(tenant, client_for)
    listing = client.get("/admin/ratiba/apikey/").content.decode()
    assert mine.api_key.prefix in listing and "their-secret-label" not in listing and theirs.api_key.prefix not in listing
    assert client.get(f"/admin/ratiba/apikey/{theirs.api_key.pk}/change/").status_code == 302  # "not found"
    changed = client.post(f"/admin/ratiba/apikey/{mine.api_key.pk}/change/", {"label": "homepage", "scope": "full"})
    assert changed.status_code == 302
    mine.api_key.refresh_from_db()
    assert (mine.api_key.label, mine.api_key.scope) == ("homepage", "chat")  # the scope is never widened
    client.post("/admin/ratiba/apikey/", {"action": "revoke", "_selected_action": [mine.api_key.pk]})
    assert api_key_authenticate(raw=mine.raw, tenant=tenant) is None
    assert client.post(f"/admin/ratiba/apikey/{mine.api_key.pk}/delete/", {"post": "yes"}).status_code == 403
    entries = list(AuditEntry.objects.filter(subject="api_key", key=mine.api_key.prefix).order_by("id")
                   .values_list("action", "actor", "detail"))
    assert entries == [("issued", "system", {"label": "widget", "scope": "chat"}),
                       ("changed", "user:owner", {"label": ["widget", "homepage"]}),
                       ("revoked", "user:owner", {"label": "homepage", "scope": "chat"})]
