"""Connecting a business's WhatsApp number (secrets encrypted or hashed on the way in, never echoed)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction

from channels.registry.models import WhatsAppNumber
from channels.secrets import secret_encrypt, verify_token_hash


class ConnectError(Exception):
    """Input `whatsapp_connect` rejects, with the reason."""


@dataclass(frozen=True)
class Connected:
    number: WhatsAppNumber
    created: bool


def _digits(value: str, *, label: str, required: bool) -> str:
    cleaned = re.sub(r"[\s+()-]", "", value or "")
    if not cleaned:
        if required:
            raise ConnectError(f"{label} is required.")
        return ""
    if not cleaned.isdigit() or not 5 <= len(cleaned) <= 20:
        raise ConnectError(f"{label} must be digits only (5-20 of them), got {value!r}.")
    return cleaned


def whatsapp_number_connect(*, tenant, phone_number_id: str, access_token: str, app_secret: str | None = None,
                            verify_token: str | None = None, owner_number: str | None = None,
                            display_phone_number: str | None = None) -> Connected:
    """Link (or update) a WhatsApp number; options left as None keep what was stored before."""
    if tenant.schema_name == "public":
        raise ConnectError("Connect a number to a business, not to the platform.")
    number_id = _digits(phone_number_id, label="--phone-number-id", required=True)
    token = (access_token or "").strip()
    if not token or any(ch.isspace() for ch in token):
        raise ConnectError("--access-token is required and cannot contain spaces.")
    with transaction.atomic():
        number = WhatsAppNumber.objects.select_for_update().select_related("tenant").filter(
            phone_number_id=number_id).first()
        if number is not None and number.tenant_id != tenant.pk:
            raise ConnectError(f"Phone number id {number_id} is already connected to {number.tenant.schema_name!r}.")
        created = number is None
        number = number or WhatsAppNumber(tenant=tenant, phone_number_id=number_id)
        number.access_token_encrypted = secret_encrypt(token)
        if app_secret is not None:
            number.app_secret_encrypted = secret_encrypt(app_secret.strip())
        if verify_token is not None:
            number.verify_token_hash = verify_token_hash(verify_token.strip())
        if owner_number is not None:
            number.owner_number = _digits(owner_number, label="--owner-number", required=False)
        if display_phone_number is not None:
            number.display_phone_number = _digits(display_phone_number, label="--display-phone-number",
                                                  required=False)
        number.save()
    return Connected(number=number, created=created)
