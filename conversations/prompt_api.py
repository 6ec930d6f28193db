"""POST /api/v1/prompts/assemble/: the answer-shaper prompt for clients that call their own LLM.

The prompt is the one a chat turn would send: the tenant-invariant system message (cache it on your side)
and a user message carrying the channel's guardrail/behaviour sections, the retrieved knowledge and the
structured facts as delimited data. Nothing is stored and no LLM is called. The question is decided by the
chat turn's own function (conversations.services.question_decide): when nothing relevant is found,
`refusal_reason` says so and the prompt carries no knowledge, exactly as a chat turn would refuse.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import i18n, services
from conversations.api import ApiKeyRateThrottle
from conversations.services import CHANNELS, LANGUAGES, MAX_MESSAGE_CHARS
from conversations.shaping import prepare_prompt
from knowledge.serializers import FiltersField

INTENTS = ["auto", "services", "hours", "other"]


class PromptAssembleInput(serializers.Serializer):
    channel = serializers.ChoiceField(choices=CHANNELS, help_text="chat | whatsapp | email: selects the rules.")
    message = serializers.CharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=True,
                                    help_text=f"The customer's message (1-{MAX_MESSAGE_CHARS} characters).")
    language = serializers.ChoiceField(choices=LANGUAGES, default="auto", required=False,
                                       help_text="Answer language; `auto` detects English or Swahili.")
    intent = serializers.ChoiceField(choices=INTENTS, default="auto", required=False,
                                     help_text="services | hours add structured facts; `auto` classifies offline.")
    filters = FiltersField(required=False, allow_null=True)


class PromptMessageOutput(serializers.Serializer):
    role = serializers.CharField()
    content = serializers.CharField()


class PromptOutput(serializers.Serializer):
    version = serializers.CharField(help_text="Version of conversations/prompts/answer_shaper.yaml.")
    cache_eligible = serializers.BooleanField(help_text="The system message is identical for every business.")
    system = serializers.CharField(help_text="The system message (Anthropic: one system block with "
                                             "`cache_control: {type: ephemeral}`; OpenAI: the first message).")
    messages = PromptMessageOutput(many=True)


class RetrievedSectionOutput(serializers.Serializer):
    ref = serializers.IntegerField(help_text="The number the prompt gives this section; answers cite it as [n].")
    key = serializers.CharField()
    version = serializers.IntegerField()
    title = serializers.CharField()
    category = serializers.CharField()
    score = serializers.FloatField()
    match_type = serializers.CharField()
    tokens = serializers.IntegerField()


class CoreSectionOutput(serializers.Serializer):
    key = serializers.CharField()
    version = serializers.IntegerField()
    role = serializers.CharField(help_text="guardrail | behaviour")


class PromptAssembleOutput(serializers.Serializer):
    prompt = PromptOutput()
    token_estimate = serializers.IntegerField(help_text="Estimated input tokens of system + user message.")
    retrieved_sections = RetrievedSectionOutput(many=True)
    core_sections = CoreSectionOutput(many=True, help_text="Guardrail and behaviour sections, in prompt order.")
    intent = serializers.CharField()
    language = serializers.CharField()
    mode = serializers.CharField(help_text="Retrieval mode: inline | hybrid.")
    refusal_reason = serializers.CharField(allow_null=True, help_text="Set when nothing relevant was found.")


_EXAMPLE_OUTPUT = {
    "prompt": {"version": "1.0.0", "cache_eligible": True, "system": "You are the customer assistant of ...",
               "messages": [{"role": "user", "content": "<business_rules channel=\"whatsapp\">\n...\n"
                                                        "</business_rules>\n\n<raw_data_json>\n{...}\n"
                                                        "</raw_data_json>\n\n<customer_message ...>\nIs there "
                                                        "parking?\n</customer_message>\n\nAnswer ..."}]},
    "token_estimate": 1184,
    "retrieved_sections": [{"ref": 1, "key": "parking", "version": 3, "title": "Parking", "category": "facility",
                            "score": 0.71, "match_type": "hybrid", "tokens": 64}],
    "core_sections": [{"key": "guardrail_prices_and_promises", "version": 1, "role": "guardrail"}],
    "intent": "other", "language": "en", "mode": "hybrid", "refusal_reason": None,
}


class PromptAssembleApi(APIView):
    """POST /api/v1/prompts/assemble/: build the answer-shaper prompt for a message, without answering it."""

    throttle_classes = [ApiKeyRateThrottle]

    @extend_schema(
        operation_id="prompt_assemble", tags=["prompts"], request=PromptAssembleInput,
        responses={200: PromptAssembleOutput,
                   400: OpenApiResponse(description="Invalid fields: `{error: {code: invalid_request, fields}}`."),
                   401: OpenApiResponse(description="Missing or invalid API key."),
                   413: OpenApiResponse(description="Request body too large."),
                   429: OpenApiResponse(description="Rate limited; see the `Retry-After` header.")},
        examples=[OpenApiExample("Request", request_only=True,
                                 value={"channel": "whatsapp", "message": "Is there parking?"}),
                  OpenApiExample("Assembled prompt", response_only=True, status_codes=["200"],
                                 value=_EXAMPLE_OUTPUT)],
        description="The system message is identical for every business; knowledge, facts and rules ride in "
                    "the user message as delimited data. Send `system` + `messages` to your own LLM.")
    def post(self, request):
        serializer = PromptAssembleInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        message, channel = data["message"], data["channel"]
        language = data.get("language") or "auto"
        language = language if language in i18n.SUPPORTED_LANGUAGES else i18n.detect_language(message)
        intent = data.get("intent") or "auto"
        if intent == "auto":
            # A turn's offline classifier: assembling a prompt must not spend on an LLM call.
            classified, _ms = services.intent_classify_offline(message, language=language)
            intent = classified.intent if classified.intent in ("services", "hours") else "other"
        decision = services.question_decide(intent=intent, message=message, channel=channel,
                                            filters=data.get("filters"))
        snippets = decision.knowledge
        prompt = prepare_prompt(question=message, language=language, channel=channel, intent=intent,
                                snippets=snippets, facts=decision.facts)
        by_key = {(s.key, s.version): s for s in snippets}
        return Response({
            "prompt": prompt.to_dict(),
            "token_estimate": prompt.token_estimate,
            "retrieved_sections": [
                {"ref": source.ref, "key": source.key, "version": source.version, "title": source.title,
                 "category": source.category, "score": round(source.score, 4),
                 "match_type": by_key[(source.key, source.version)].match_type,
                 "tokens": by_key[(source.key, source.version)].token_count}
                for source in prompt.knowledge_sources],
            "core_sections": [{"key": s.key, "version": s.version, "role": s.role} for s in prompt.core_sections],
            "intent": intent, "language": prompt.language, "mode": decision.retrieval.mode,
            "refusal_reason": decision.refusal_reason,
        }, status=status.HTTP_200_OK)
