"""Owner pages: /chat/ (try the bot, streamed), the web-widget snippet, and citation links into the admin.

The chat page talks to `chat_stream`, an internal endpoint authenticated by the owner's login session
and CSRF token: the page never holds an API key.
"""
from __future__ import annotations

import json
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required, user_passes_test
from django.db import connection
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET, require_POST

from conversations import services
from conversations.api import sse_response, turn_input_from
from conversations.serializers import TurnInput
from ratiba.api_errors import error_body, json_error
from ratiba.parsers import json_too_deep
from ratiba.ratelimit import rate_limit_hit
from ratiba.selectors import api_key_list_chat


def _is_owner(user) -> bool:
    return user.is_active and user.is_staff


owner_required = user_passes_test(_is_owner, login_url=settings.LOGIN_URL)


@require_GET
@login_required
@owner_required
def chat_page(request):
    """Try the assistant the way a customer would, with citations and refusals shown plainly."""
    return render(request, "conversations/chat.html", {"tenant": connection.tenant,
                                                       "max_chars": services.MAX_MESSAGE_CHARS})


@require_POST
@login_required
@owner_required
def chat_stream(request):
    """The chat page's turn endpoint: the same SSE stream as the API, for a signed-in owner."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > settings.API_MAX_BODY_BYTES:
        return json_error(413, f"Request body too large ({length} bytes; limit {settings.API_MAX_BODY_BYTES}).")
    decision = rate_limit_hit(bucket=f"user:{request.user.pk}", limit=settings.API_RATE_LIMIT_PER_MINUTE)
    if not decision.allowed:
        response = json_error(429, "Too many messages; wait a moment.")
        response["Retry-After"] = str(decision.retry_after)
        return response
    try:
        payload = json.loads(request.body or b"{}")
    except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
        return json_error(400, "The body must be JSON.", code="malformed_request")
    if json_too_deep(payload):
        return json_error(400, "The body is nested too deeply.", code="malformed_request")
    serializer = TurnInput(data=payload if isinstance(payload, dict) else {})
    if not serializer.is_valid():
        return JsonResponse(error_body("invalid_request", "Some fields are invalid.",
                                       json.loads(json.dumps(serializer.errors))), status=400)
    try:
        stream = services.turn_stream(turn_input_from(serializer.validated_data,
                                                      started_by=request.user.get_username()))
    except services.TurnError as exc:
        return JsonResponse(error_body(exc.code, str(exc), exc.fields or None), status=exc.status)
    return sse_response(stream)


@require_GET
@login_required
@owner_required
def widget_page(request):
    """A copy-paste snippet that puts the assistant on the business's own website."""
    origin = f"{request.scheme}://{request.get_host()}"
    return render(request, "conversations/widget.html", {
        "tenant": connection.tenant, "origin": origin,
        "allowed_origins": getattr(settings, "CHAT_WIDGET_ORIGINS", []),
        # Only chat keys: the widget's key is readable in the page source by every visitor.
        "chat_keys": api_key_list_chat(tenant=connection.tenant),
        "issue_url": reverse("admin:ratiba_apikey_add") + "?" + urlencode({"scope": "chat", "label": "website-widget"}),
        "per_visitor_limit": settings.CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE,
    })


@require_GET
@login_required
@owner_required
def citation_open(request, key: str, version: int):
    """Open what a citation points at in the admin: the snippet, the services/hours tables, or the document."""
    target = None
    try:
        if key == "facts:services":
            target = reverse("admin:knowledge_service_changelist")
        elif key == "facts:hours":
            target = reverse("admin:knowledge_openinghours_changelist")
        elif key.startswith("doc:"):
            target = reverse("admin:knowledge_document_change", args=[int(key[4:].split("#")[0])])
        else:
            from knowledge.models import Snippet

            snippet = Snippet.objects.filter(key=key).first()
            if snippet is not None:
                target = reverse("admin:knowledge_snippet_change", args=[snippet.pk])
    except (NoReverseMatch, ValueError):
        target = None
    if target is None:
        raise Http404("Nothing to open for this citation.")
    return HttpResponseRedirect(target)
