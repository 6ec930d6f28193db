"""Channel tasks: take an id, call a service, in the schema they were sent from (tenant-schemas-celery)."""
from __future__ import annotations

from channels import handoffs
from channels.retention import whatsapp_prune
from channels.whatsapp import services as whatsapp
from ratiba.celery import app
from ratiba.tasks import tenant_fan_out, tenant_schemas


@app.task(name="channels.whatsapp_handle_inbound", acks_late=True)
def whatsapp_handle_inbound(message_id: int) -> str:
    """Answer one stored customer message (a no-op when it was already handled)."""
    return whatsapp.inbound_handle(message_id=message_id)


@app.task(name="channels.whatsapp_send", acks_late=True)
def whatsapp_send(message_id: int) -> str:
    """Send one stored reply through the Graph API (a no-op unless it is due)."""
    return whatsapp.outbound_send(message_id=message_id)


@app.task(name="channels.whatsapp_sweep", acks_late=True)
def whatsapp_sweep() -> dict:
    """Queue this schema's messages and replies that no task finished."""
    return whatsapp.sweep()


@app.task(name="channels.whatsapp_sweep_all")
def whatsapp_sweep_all() -> list[str]:
    """Beat: one sweep per business that has a WhatsApp number."""
    return tenant_fan_out(whatsapp_sweep, schemas=tenant_schemas(whatsapp_numbers__isnull=False))


@app.task(name="channels.handoff_announce", acks_late=True)
def handoff_announce(handoff_id: int) -> str:
    """Tell the business about a new hand-off (mail to staff, WhatsApp to the owner); once per hand-off."""
    return handoffs.handoff_announce(handoff_id=handoff_id)


@app.task(name="channels.handoff_contact_announce", acks_late=True)
def handoff_contact_announce(handoff_id: int) -> str:
    """Tell the staff the contact a customer sent after their hand-off was announced; once per new contact."""
    return handoffs.handoff_contact_announce(handoff_id=handoff_id)


@app.task(name="channels.prune", acks_late=True)
def prune() -> dict:
    """Delete this schema's WhatsApp rows older than CONVERSATION_RETENTION_DAYS (idempotent)."""
    result = whatsapp_prune()
    return {"messages": result.messages, "statuses": result.statuses, "contacts": result.contacts,
            "names_cleared": result.names_cleared}


@app.task(name="channels.prune_all")
def prune_all() -> list[str]:
    """Beat: one prune per business, with or without a number connected now (rows outlive a disconnect)."""
    return tenant_fan_out(prune, schemas=tenant_schemas())
