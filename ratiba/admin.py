"""Platform admin (public schema): businesses, hosts and API keys."""
from django.contrib import admin, messages

from ratiba.admin_scoping import PublicOnlyAdmin
from ratiba.models import ApiKey, Domain, Tenant
from ratiba.services import api_key_issue, api_key_revoke


class DomainInline(admin.TabularInline):
    model = Domain
    extra = 0


@admin.register(Tenant)
class TenantAdmin(PublicOnlyAdmin):
    list_display = ("name", "schema_name", "timezone", "currency", "created_at")
    search_fields = ("name", "schema_name")
    inlines = [DomainInline]

    def get_readonly_fields(self, request, obj=None):
        return ("schema_name",) if obj else ()


@admin.register(ApiKey)
class ApiKeyAdmin(PublicOnlyAdmin):
    list_display = ("prefix", "tenant", "label", "created_at", "last_used_at", "revoked_at")
    list_filter = ("tenant",)
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at", "revoked_at")
    fields = ("tenant", "label", "prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        issued = api_key_issue(tenant=obj.tenant, label=obj.label)
        obj.pk = issued.api_key.pk
        messages.warning(request, f"New key (shown once, copy it now): {issued.raw}")

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
