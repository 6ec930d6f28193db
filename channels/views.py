"""Owner pages on the business's host: the hand-off page (/handoffs/) and the chat page's WhatsApp preview."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from channels import handoffs
from channels.whatsapp.formatting import whatsapp_text
from conversations.models import HandoffRequest, Turn
from conversations.views import owner_required


@require_GET
@login_required
@owner_required
def handoff_page(request):
    """Open hand-offs with their conversation and contact; WhatsApp ones can be taken over and replied to."""
    include_done = request.GET.get("show") == "all"
    return render(request, "channels/handoffs.html", {
        "tenant": connection.tenant, "cards": handoffs.handoff_cards(include_done=include_done),
        "include_done": include_done, "failed": handoffs.failed_replies()})


@require_POST
@login_required
@owner_required
def handoff_action(request, pk: int):
    """One button of the hand-off page: done, contacted, reopen, takeover, release, or reply."""
    handoff = get_object_or_404(HandoffRequest, pk=pk)
    try:
        done = handoffs.handoff_act(handoff=handoff, action=request.POST.get("action", ""),
                                    by=request.user.get_username(), reply=request.POST.get("reply", ""))
    except handoffs.HandoffActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return HttpResponseRedirect(f"{reverse('handoffs')}#handoff-{handoff.pk}")


@require_GET
@login_required
@owner_required
def whatsapp_preview(request, turn_id: str):
    """The exact text a WhatsApp customer would get for a chat-page turn (plain text, no Markdown)."""
    turn = Turn.objects.filter(public_id=turn_id).first()
    if turn is None:
        raise Http404("No such turn.")
    return JsonResponse({"turn_id": turn.public_id, "text": whatsapp_text(turn.answer)})
