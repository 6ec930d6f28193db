"""REST: POST /api/v1/email/drafts/ — a customer email in, a reply draft for staff out (full-scope keys)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from channels import email_drafts
from conversations.api import ApiKeyRateThrottle
from conversations.serializers import CitationOutput, TurnMetaOutput


class EmailDraftInput(serializers.Serializer):
    from_email = serializers.EmailField()
    from_name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    subject = serializers.CharField(allow_blank=True, max_length=email_drafts.MAX_SUBJECT_CHARS,
                                    trim_whitespace=True)
    body = serializers.CharField(max_length=email_drafts.MAX_BODY_CHARS, trim_whitespace=False,
                                 help_text="The email as received (quoted replies and signatures are ignored).")


class EmailDraftOutput(serializers.Serializer):
    suggested_subject = serializers.CharField()
    customer_name = serializers.CharField(allow_blank=True, help_text="From the sign-off, else the From name.")
    draft = serializers.CharField(help_text="Plain text: greeting, answer, closing; no sign-off.")
    citations = CitationOutput(many=True)
    refusal_reason = serializers.CharField(allow_null=True)
    meta = TurnMetaOutput()


class EmailDraftApi(APIView):
    """POST /api/v1/email/drafts/: draft a reply to a customer email."""

    throttle_classes = [ApiKeyRateThrottle]

    @extend_schema(
        operation_id="email_draft_create", tags=["email"], request=EmailDraftInput,
        responses={200: EmailDraftOutput, 400: OpenApiResponse(description="Invalid fields."),
                   401: OpenApiResponse(description="Missing or invalid API key."),
                   403: OpenApiResponse(description="A chat-scope key (drafts need a full key).")},
        examples=[OpenApiExample("A customer email", request_only=True, value={
            "from_email": "wanjiku@example.com", "from_name": "", "subject": "Parking?",
            "body": "Hello,\n\nIs there parking near the spa?\n\nThanks,\nWanjiku"})],
        description="A draft reply for staff to check and send: a typed refusal (HTTP 200) when the knowledge base "
                    "has no answer.")
    def post(self, request):
        serializer = EmailDraftInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        draft = email_drafts.email_draft_create(**serializer.validated_data, api_key_prefix=request.auth.prefix)
        return Response(draft.to_response(), status=status.HTTP_200_OK)
