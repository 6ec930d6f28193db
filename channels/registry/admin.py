"""Platform staff see which numbers are connected (never their secrets)."""
from django.contrib import admin

from channels.registry.models import WhatsAppNumber
from ratiba.admin_scoping import PublicOnlyAdmin


@admin.register(WhatsAppNumber)
class WhatsAppNumberAdmin(PublicOnlyAdmin):
    list_display = ("phone_number_id", "display_phone_number", "tenant", "has_own_app_secret", "owner_number",
                    "updated_at")
    fields = ("tenant", "phone_number_id", "display_phone_number", "owner_number", "created_at", "updated_at")
    readonly_fields = fields
    search_fields = ("phone_number_id", "display_phone_number", "tenant__schema_name")

    def has_add_permission(self, request, *args):
        return False  # connect with `whatsapp_connect`: it encrypts the secrets

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(boolean=True, description="Own app secret")
    def has_own_app_secret(self, obj):
        return bool(obj.app_secret_encrypted)
