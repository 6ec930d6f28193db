"""Read-only admin views of a tenant's telemetry (the dashboards are the main view; this is for digging)."""
from django.contrib import admin

from ratiba.admin_scoping import TenantOnlyAdmin
from telemetry.models import Digest, Event, GapGroup, RetrievalLog


class _ReadOnly(TenantOnlyAdmin):
    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(RetrievalLog)
class RetrievalLogAdmin(_ReadOnly):
    list_display = ("created_at", "channel", "intent", "message_preview", "returned_count", "retrieved_tokens",
                    "prompt_tokens", "empty_retrieval", "fallback_used", "trivial", "refusal_reason", "mode", "provider")
    list_filter = ("channel", "intent", "mode", "provider", "empty_retrieval", "fallback_used", "trivial", "refused",
                   "language")
    search_fields = ("message_preview", "session_id", "turn_id")
    date_hierarchy = "created_at"
    show_full_result_count = False  # an exact count over a large log is the slowest part of a page


@admin.register(Event)
class EventAdmin(_ReadOnly):
    list_display = ("created_at", "name", "payload")
    list_filter = ("name",)
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(GapGroup)
class GapGroupAdmin(_ReadOnly):
    list_display = ("label", "count", "status", "first_seen", "last_seen")
    list_filter = ("status",)
    search_fields = ("label",)
    exclude = ("centroid",)


@admin.register(Digest)
class DigestAdmin(_ReadOnly):
    list_display = ("day", "subject", "sent_at")
