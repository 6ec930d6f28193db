"""Owner's view of WhatsApp: customers (opt-out, takeover) and every message with its delivery status."""
from django.contrib import admin

from channels.models import WhatsAppContact, WhatsAppMessage
from ratiba.admin_scoping import TenantOnlyAdmin


class _ReadOnly(TenantOnlyAdmin):
    """Message records are evidence: read, never edited here (the hand-off page acts on them)."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(WhatsAppContact)
class WhatsAppContactAdmin(_ReadOnly):
    list_display = ("wa_id", "name", "language", "last_inbound_at", "opted_out_at", "paused_at", "paused_by")
    list_filter = ("language",)
    search_fields = ("wa_id", "name")


@admin.register(WhatsAppMessage)
class WhatsAppMessageAdmin(_ReadOnly):
    list_display = ("created_at", "contact", "direction", "source", "kind", "status", "short_body", "error_code",
                    "attempts")
    list_filter = ("direction", "source", "status", "kind")
    search_fields = ("wamid", "body", "contact__wa_id")
    list_select_related = ("contact",)

    @admin.display(description="Body")
    def short_body(self, obj):
        return obj.body[:80]
