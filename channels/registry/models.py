"""A business's WhatsApp number (public schema): one webhook serves every business, routed by phone number id."""
from django.db import models


class WhatsAppNumber(models.Model):
    """A WhatsApp Business number linked to a tenant; its secrets are stored encrypted (the verify token hashed)."""

    tenant = models.ForeignKey("ratiba.Tenant", on_delete=models.CASCADE, related_name="whatsapp_numbers")
    phone_number_id = models.CharField(max_length=64, unique=True)
    display_phone_number = models.CharField(max_length=32, blank=True)
    # Fernet tokens (channels.secrets): the access token and app secret are needed in clear to call the Graph
    # API and check signatures, so they are encrypted, never hashed; the verify token is only compared.
    access_token_encrypted = models.TextField()
    app_secret_encrypted = models.TextField(blank=True)
    verify_token_hash = models.CharField(max_length=64, blank=True, db_index=True)
    # The owner's own WhatsApp number (digits, country code first): new hand-offs are announced there.
    owner_number = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant__name", "phone_number_id"]

    def __str__(self) -> str:
        return f"{self.display_phone_number or self.phone_number_id} → {self.tenant.schema_name}"
