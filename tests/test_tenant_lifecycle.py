"""Tenant creation and deletion with real commits (no test transaction around them)."""
import pytest
from django.db import connection
from django_tenants.utils import schema_context

from knowledge.models import Snippet
from ratiba.models import Tenant
from ratiba.services import tenant_create, tenant_delete


def test_two_brand_new_tenants_in_a_row_can_store_and_search_vectors(tenants, django_db_blocker):
    """Regression guard: the vector extension must not land in the first tenant's schema."""
    created = []
    with django_db_blocker.unblock():
        try:
            for schema in ("fresh_one", "fresh_two"):
                connection.set_schema_to_public()
                tenant, _ = tenant_create(schema=schema, name=schema, domain=f"{schema}.localhost")
                created.append(tenant)
                with schema_context(schema):
                    with connection.cursor() as cursor:
                        cursor.execute("select '[1,0,0]'::vector <=> '[0,1,0]'::vector")
                        assert cursor.fetchone()[0] == pytest.approx(1.0)
                    Snippet.objects.create(key="k")
                    assert Snippet.objects.count() == 1
        finally:
            connection.set_schema_to_public()
            for tenant in created:
                tenant_delete(tenant=tenant)
            assert not Tenant.objects.filter(schema_name__startswith="fresh_").exists()


def test_export_then_delete_tenant_commands_take_everything_and_leave_others(tenants, django_db_blocker, tmp_path):
    import json

    from django.core.management import call_command

    from ratiba.services import api_key_issue

    with django_db_blocker.unblock():
        connection.set_schema_to_public()
        leftover = Tenant.objects.filter(schema_name="doomed").first()
        if leftover:  # from an interrupted earlier run with --reuse-db
            tenant_delete(tenant=leftover)
        doomed, _ = tenant_create(schema="doomed", name="Doomed Cafe", domain="doomed.localhost")
        api_key_issue(tenant=doomed)
        with schema_context("doomed"):
            Snippet.objects.create(key="menu")
        outfile = tmp_path / "doomed.json"
        call_command("export_tenant_data", "doomed", str(outfile))
        exported = json.loads(outfile.read_text())
        assert exported["tenant"]["domains"] == ["doomed.localhost"]
        assert [row["key"] for row in exported["tables"]["knowledge.Snippet"]] == ["menu"]
        call_command("purge_tenant", "doomed", "--yes")
        assert not Tenant.objects.filter(schema_name="doomed").exists()
        with connection.cursor() as cursor:
            cursor.execute("select count(*) from pg_namespace where nspname = 'doomed'")
            assert cursor.fetchone() == (0,)
        assert Tenant.objects.filter(schema_name="test_tenant").exists()


def test_delete_tenant_without_confirmation_changes_nothing(tenants, django_db_blocker):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with django_db_blocker.unblock():
        with pytest.raises(CommandError, match="--yes"):
            call_command("purge_tenant", "test_other")
        assert Tenant.objects.filter(schema_name="test_other").exists()


def test_a_domain_with_an_underscore_also_gets_a_reachable_hyphenated_alias(tenants, django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        connection.set_schema_to_public()
        leftover = Tenant.objects.filter(schema_name="under_score").first()
        if leftover:
            tenant_delete(tenant=leftover)
        tenant, _ = tenant_create(schema="under_score", name="Under Score Spa", domain="under_score.localhost")
        try:
            assert sorted(tenant.domains.values_list("domain", "is_primary")) == [
                ("under-score.localhost", False), ("under_score.localhost", True)]
            response = Client(HTTP_HOST="under-score.localhost").get("/healthz")
            assert response.json() == {"status": "ok", "schema": "under_score"}
        finally:
            tenant_delete(tenant=tenant)
