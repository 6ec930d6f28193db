"""Tenancy: schemas, routing by host, API keys and isolation."""
import pytest
from django.core.management import call_command
from django.db import connection
from django_tenants.utils import schema_context

from knowledge.models import Snippet
from ratiba.models import ApiKey, Tenant
from ratiba.services import PlatformError, api_key_authenticate, api_key_issue, api_key_revoke, tenant_create

pytestmark = pytest.mark.django_db


def test_vector_extension_lives_in_public(tenant):
    with connection.cursor() as cursor:
        cursor.execute("select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace "
                       "where e.extname = 'vector'")
        assert cursor.fetchone() == ("public",)


def test_two_tenants_created_one_after_the_other_both_have_vector_tables(tenants):
    first, second = tenants
    for tenant in (first, second):
        with schema_context(tenant.schema_name):
            with connection.cursor() as cursor:
                cursor.execute("select format_type(atttypid, atttypmod) from pg_attribute "
                               "where attrelid = 'knowledge_snippetversion'::regclass and attname = 'embedding'")
                assert cursor.fetchone() == ("vector(384)",)
            Snippet.objects.create(key=f"probe-{tenant.schema_name}")
            assert list(Snippet.objects.values_list("key", flat=True)) == [f"probe-{tenant.schema_name}"]


def test_a_row_written_in_one_tenant_is_invisible_in_the_other(tenants):
    first, second = tenants
    with schema_context(first.schema_name):
        Snippet.objects.create(key="only-in-first")
    with schema_context(second.schema_name):
        assert not Snippet.objects.filter(key="only-in-first").exists()
    with schema_context(first.schema_name):
        assert Snippet.objects.filter(key="only-in-first").count() == 1


def test_unknown_host_gets_404_not_another_tenants_page(client_for, tenants):
    response = client_for("nobody.localhost").get("/")
    assert response.status_code == 404
    assert b"Test Spa" not in response.content


def test_unknown_host_on_api_gets_json_404(client_for, tenants):
    response = client_for("nobody.localhost").get("/api/v1/whoami/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_public_landing_lists_businesses(client_for, tenants):
    response = client_for("localhost").get("/")
    assert response.status_code == 200
    assert b"Test Spa" in response.content and b"Other Salon" in response.content


def test_tenant_home_shows_its_own_name_only(tenant_client):
    response = tenant_client.get("/")
    assert response.status_code == 200
    assert b"Test Spa" in response.content
    assert b"Other Salon" not in response.content


def test_tenant_home_counts_live_and_pending_snippets(tenant, tenant_client):
    from knowledge.services import snippet_version_create

    snippet_version_create(key="parking", title="Parking", body="Free parking behind the building.",
                           category="facility", role="retrieved")
    status = tenant_client.get("/").context["status"]
    assert (status.live_snippets, status.awaiting_review, status.retrieval_mode) == (1, 0, "inline")


def test_api_key_is_stored_hashed_and_works_on_its_own_host(tenant, client_for):
    issued = api_key_issue(tenant=tenant, label="widget")
    stored = ApiKey.objects.get(pk=issued.api_key.pk)
    assert issued.raw not in (stored.key_hash, stored.prefix)
    assert len(stored.key_hash) == 64
    response = client_for(tenant).get("/api/v1/whoami/", HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    assert response.status_code == 200
    assert response.json() == {"tenant": tenant.schema_name, "key_label": "widget"}
    stored.refresh_from_db()
    assert stored.last_used_at is not None


def test_a_tenants_key_is_rejected_on_another_tenants_host(tenant, other_tenant, client_for):
    issued = api_key_issue(tenant=tenant)
    response = client_for(other_tenant).get("/api/v1/whoami/", HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize("header", ["", "Bearer", "Bearer nonsense", "Token abc", "Bearer rk_000000000000_" + "x" * 43])
def test_missing_or_wrong_keys_are_rejected(tenant, client_for, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client_for(tenant).get("/api/v1/whoami/", **extra)
    assert response.status_code == 401
    assert "error" in response.json()


def test_a_revoked_key_stops_working(tenant):
    issued = api_key_issue(tenant=tenant)
    assert api_key_authenticate(raw=issued.raw, tenant=tenant) == issued.api_key
    api_key_revoke(api_key=issued.api_key)
    assert api_key_authenticate(raw=issued.raw, tenant=tenant) is None


def test_a_tampered_key_with_a_real_prefix_is_rejected(tenant):
    issued = api_key_issue(tenant=tenant)
    tampered = issued.raw[:-3] + ("aaa" if not issued.raw.endswith("aaa") else "bbb")
    assert api_key_authenticate(raw=tampered, tenant=tenant) is None


def test_tenant_create_is_idempotent_and_refuses_a_taken_domain(tenants):
    first, _ = tenants
    again, created = tenant_create(schema=first.schema_name, name="Test Spa", domain="tenant.test.localhost")
    assert (again.pk, created) == (first.pk, False)
    with pytest.raises(PlatformError, match="already belongs"):
        tenant_create(schema="brand_new", name="Thief", domain="tenant.test.localhost")
    assert not Tenant.objects.filter(schema_name="brand_new").exists()


@pytest.mark.parametrize("schema", ["public", "Bad-Name", "1abc", "pg_catalog", "a"])
def test_tenant_create_rejects_bad_schema_names(schema, tenants):
    with pytest.raises(PlatformError, match="Invalid schema name"):
        tenant_create(schema=schema, name="x", domain=f"x{abs(hash(schema))}.localhost")


def test_issue_api_key_command_prints_the_key_last(tenant, capsys):
    call_command("issue_api_key", tenant.schema_name, "--label", "cli")
    last_line = capsys.readouterr().out.strip().splitlines()[-1]
    assert api_key_authenticate(raw=last_line, tenant=tenant).label == "cli"


def test_issue_api_key_for_unknown_tenant_fails_clearly(tenants):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No tenant with schema 'ghost'"):
        call_command("issue_api_key", "ghost")


def test_add_tenant_command_is_idempotent(tenants, capsys):
    call_command("add_tenant", "test_tenant", "--name", "Test Spa", "--domain", "tenant.test.localhost")
    assert "Already exists" in capsys.readouterr().out



def test_openapi_schema_and_offline_docs_are_served_on_the_tenant_host(tenant_client):
    schema = tenant_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert schema.json()["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    docs = tenant_client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()
    assert b"/static/drf_spectacular_sidecar/" in docs.content
