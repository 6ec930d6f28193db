"""Platform admin (public schema): businesses and hosts; API keys on both hosts (staff: all, an owner: their own)."""
from django.contrib import admin
from django.db import connection
from django.template.response import TemplateResponse

from ratiba.admin_scoping import PublicOnlyAdmin, on_public_schema
from ratiba.models import ApiKey, Domain, Tenant
from ratiba.services import api_key_issue, api_key_relabel, api_key_revoke


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


def _actor(request) -> dict:
    # A tenant's own user is named in its audit log as a user; platform staff (public-schema users) by name only.
    if on_public_schema():
        return {"actor": f"platform:{request.user.get_username()}"}
    return {"user": request.user}


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Issue (shown once), label and revoke keys; a key's scope is chosen when it is issued and never widened."""

    list_display = ("prefix", "label", "scope_col", "status", "last_used_at", "created_at")
    list_filter = ("scope",)
    search_fields = ("prefix", "label")
    actions = ["revoke"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request).select_related("tenant")
        # On a business's host only its own keys exist (the table lives in the public schema).
        return queryset if on_public_schema() else queryset.filter(tenant_id=connection.tenant.pk)

    def get_list_display(self, request):
        return ("tenant", *self.list_display) if on_public_schema() else self.list_display

    def get_list_filter(self, request):
        return ("tenant", *self.list_filter) if on_public_schema() else self.list_filter

    def get_fields(self, request, obj=None):
        base = ("label", "scope") if obj is None else ("label", "scope", "prefix", "created_at", "last_used_at",
                                                       "revoked_at")
        return ("tenant", *base) if on_public_schema() else base

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("tenant", "scope", "prefix", "created_at", "last_used_at", "revoked_at")

    @admin.display(description="Scope", ordering="scope")
    def scope_col(self, obj: ApiKey) -> str:
        return obj.scope  # "chat" or "full": the filter on the right explains them

    @admin.display(description="Status", ordering="revoked_at")
    def status(self, obj: ApiKey) -> str:
        return f"revoked {obj.revoked_at:%Y-%m-%d %H:%M}" if obj.revoked_at else "active"

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: the audit log and last-used times keep their meaning

    def save_model(self, request, obj, form, change):
        if change:
            # The form already wrote its values onto `obj`: the service compares with the stored row.
            api_key_relabel(api_key=ApiKey.objects.get(pk=obj.pk), label=form.cleaned_data["label"],
                            **_actor(request))
            return
        tenant = obj.tenant if on_public_schema() else connection.tenant
        issued = api_key_issue(tenant=tenant, label=form.cleaned_data["label"], scope=form.cleaned_data["scope"],
                               **_actor(request))
        obj.pk = issued.api_key.pk
        obj.prefix = issued.api_key.prefix
        # Shown on the next page only, never stored (not even in the messages cookie).
        request._issued_api_key = issued.raw

    def response_add(self, request, obj, post_url_continue=None):
        raw = getattr(request, "_issued_api_key", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        context = {**self.admin_site.each_context(request), "opts": self.opts, "title": "Key issued",
                   "api_key": obj, "raw": raw}
        # admin_view's never_cache already marks the page no-store.
        return TemplateResponse(request, "admin/ratiba/apikey/issued.html", context)

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for api_key in queryset:
            api_key_revoke(api_key=api_key, **_actor(request))
