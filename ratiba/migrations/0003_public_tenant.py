"""The platform's own tenant row for the public schema, served at TENANT_BASE_DOMAIN."""
from django.conf import settings
from django.db import migrations


def create_public_tenant(apps, schema_editor):
    Tenant = apps.get_model("ratiba", "Tenant")
    Domain = apps.get_model("ratiba", "Domain")
    tenant, _ = Tenant.objects.get_or_create(schema_name="public", defaults={"name": "Ratiba Platform"})
    for host in {settings.TENANT_BASE_DOMAIN, "127.0.0.1"}:
        Domain.objects.get_or_create(domain=host, defaults={"tenant": tenant, "is_primary": host == settings.TENANT_BASE_DOMAIN})


class Migration(migrations.Migration):
    dependencies = [("ratiba", "0002_initial")]
    operations = [migrations.RunPython(create_public_tenant, migrations.RunPython.noop)]
