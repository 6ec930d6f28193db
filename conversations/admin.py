"""Owner's view of conversations: sessions and turns (read-only) and hand-off requests to follow up."""
from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from conversations import services
from conversations.models import HandoffRequest, HandoffStatus, Session, Turn
from ratiba.admin_scoping import TenantOnlyAdmin


class ReadOnlyAdmin(TenantOnlyAdmin):
    """Conversation records are evidence: owners read them, nobody edits them."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self._in_scope() and request.user.is_superuser


class TurnInline(admin.TabularInline):
    model = Turn
    fields = ("created_at", "message", "intent", "answer", "refusal_reason", "provider", "latency_ms")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "channel", "language", "turn_count", "cost_usd", "collection_names", "updated_at")
    list_filter = ("channel", "language")
    search_fields = ("public_id", "turns__message")
    date_hierarchy = "created_at"
    readonly_fields = ("public_id", "channel", "language", "collections", "cost_usd", "turn_count", "last_intent",
                       "api_key_prefix", "started_by", "created_at", "updated_at")
    exclude = ("last_retrieval",)
    inlines = [TurnInline]

    @admin.display(description="Collections")
    def collection_names(self, obj: Session) -> str:
        return ", ".join(obj.collections) or "—"


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "short_message", "intent", "refusal_reason", "provider", "latency_ms", "cost_usd",
                    "session_link")
    list_filter = ("intent", "refusal_reason", "provider", "language", "channel", "trivial")
    search_fields = ("message", "answer", "public_id", "session__public_id")
    date_hierarchy = "created_at"
    list_select_related = ("session",)
    readonly_fields = ("public_id", "session", "channel", "created_at", "message", "answer", "language", "intent",
                       "intent_source", "intent_confidence", "trivial", "mode", "retrieved", "cited", "provider",
                       "model", "input_tokens", "output_tokens", "cost_usd", "latency_ms", "refusal_reason", "meta")
    exclude = ("retrieval", "citations")

    @admin.display(description="Message")
    def short_message(self, obj: Turn) -> str:
        return obj.message[:80]

    @admin.display(description="Session")
    def session_link(self, obj: Turn):
        return format_html('<a href="../session/{}/change/">{}</a>', obj.session_id, obj.session.public_id[:12])

    @admin.display(description="Retrieved")
    def retrieved(self, obj: Turn):
        if not obj.retrieval:
            return "—"
        return format_html("<ul>{}</ul>", format_html_join(
            "", "<li><code>{}</code> v{} · {} ({})</li>",
            ((r.get("key"), r.get("version"), r.get("score"), r.get("match_type")) for r in obj.retrieval)))

    @admin.display(description="Citations")
    def cited(self, obj: Turn):
        if not obj.citations:
            return "—"
        return format_html("<ol>{}</ol>", format_html_join(
            "", "<li><code>{}</code> v{}: {}</li>",
            ((c.get("key"), c.get("version"), c.get("excerpt", "")) for c in obj.citations)))


@admin.action(description="Mark as contacted")
def mark_contacted(modeladmin, request, queryset):
    for handoff in queryset:
        services.handoff_set_status(handoff=handoff, status=HandoffStatus.CONTACTED, user=request.user)


@admin.action(description="Mark as done")
def mark_done(modeladmin, request, queryset):
    for handoff in queryset:
        services.handoff_set_status(handoff=handoff, status=HandoffStatus.DONE, user=request.user)


@admin.register(HandoffRequest)
class HandoffRequestAdmin(TenantOnlyAdmin):
    list_display = ("created_at", "kind", "status", "what", "when_text", "contact", "channel", "short_message")
    list_filter = ("status", "kind", "channel")
    list_editable = ("status",)
    search_fields = ("message", "what", "contact")
    date_hierarchy = "created_at"
    actions = [mark_contacted, mark_done]
    readonly_fields = ("kind", "what", "when_text", "contact", "channel", "message", "session", "turn",
                       "created_at", "updated_at")
    fields = ("status",) + readonly_fields

    def has_add_permission(self, request, *args):
        return False

    @admin.display(description="Message")
    def short_message(self, obj: HandoffRequest) -> str:
        return obj.message[:80]

    def save_model(self, request, obj, form, change):
        # Only the status is editable; it goes through the same service the rest of the app uses.
        services.handoff_set_status(handoff=obj, status=obj.status, user=request.user)

    def delete_model(self, request, obj):
        services.handoff_delete(handoff=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for handoff in queryset:
            services.handoff_delete(handoff=handoff, user=request.user)
