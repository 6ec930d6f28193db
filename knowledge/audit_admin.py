"""The snippet audit log in the admin: read-only (the database refuses edits too)."""
from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from knowledge.models import SnippetAuditEntry
from ratiba.admin_scoping import TenantOnlyAdmin


@admin.register(SnippetAuditEntry)
class SnippetAuditEntryAdmin(TenantOnlyAdmin):
    list_display = ("created_at", "action", "key_col", "version", "actor", "detail")
    list_filter = ("action",)
    search_fields = ("key", "actor")
    date_hierarchy = "created_at"
    list_per_page = 100
    fields = ("created_at", "action", "key", "version", "actor", "user_id", "detail")
    readonly_fields = fields

    @admin.display(description="Key", ordering="key")
    def key_col(self, obj):
        return format_html("<code>{}</code>", obj.key)

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
