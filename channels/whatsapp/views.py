"""The WhatsApp Cloud API webhook on the platform host: Meta's handshake, and signed deliveries."""
from __future__ import annotations

import logging

from django.http import HttpResponse, HttpResponseForbidden, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from channels.whatsapp import services
from channels.whatsapp.payloads import SIGNATURE_HEADER

log = logging.getLogger(__name__)


@csrf_exempt
@require_http_methods(["GET", "POST"])
def webhook(request):
    """GET: answer the verification challenge. POST: check the signature, store, answer 200 at once."""
    if request.method == "GET":
        if request.GET.get("hub.mode") == "subscribe" and services.verify_token_matches(
                request.GET.get("hub.verify_token", "")):
            return HttpResponse(request.GET.get("hub.challenge", ""), content_type="text/plain")
        return HttpResponseForbidden("Verification token mismatch.", content_type="text/plain")
    try:
        result = services.delivery_accept(raw_body=request.body, signature=request.headers.get(SIGNATURE_HEADER, ""))
    except services.SignatureInvalid:
        log.warning("whatsapp webhook: delivery with a bad signature refused")
        return HttpResponseForbidden("Invalid signature.", content_type="text/plain")
    return JsonResponse({"accepted": result.accepted, "duplicates": result.duplicates, "statuses": result.statuses})
