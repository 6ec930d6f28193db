"""The audit log in the admin: every owner-visible change, read-only (the database refuses edits too)."""
from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from knowledge.models import AuditEntry
from ratiba.admin_scoping import TenantOnlyAdmin


@admin.register(AuditEntry)
class AuditEntryAdmin(TenantOnlyAdmin):
    list_display = ("created_at", "subject", "action", "key_col", "version", "actor", "changes")
    list_filter = ("subject", "action")
    search_fields = ("key", "actor")
    date_hierarchy = "created_at"
    list_per_page = 100
    fields = ("created_at", "subject", "action", "key", "version", "actor", "user_id", "detail")
    readonly_fields = fields

    @admin.display(description="What", ordering="key")
    def key_col(self, obj):
        return format_html("<code>{}</code>", obj.key)

    @admin.display(description="Change")
    def changes(self, obj):
        # {field: [before, after]} reads as "price: 1500.00 → 1800.00"; other details are shown as they are.
        pairs = [(name, value) for name, value in (obj.detail or {}).items()
                 if isinstance(value, list) and len(value) == 2]
        if not pairs:
            return ", ".join(f"{name}: {value}" for name, value in (obj.detail or {}).items())
        return format_html_join(mark_safe("<br>"), "{}: {} → {}",
                                ((name, _shown(before), _shown(after)) for name, (before, after) in pairs))

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def _shown(value) -> str:
    return "—" if value in (None, "") else str(value)
