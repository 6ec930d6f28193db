"""Input and output shapes of the chat API (the contract in docs/DESIGN.md §7)."""
from __future__ import annotations

from rest_framework import serializers

from conversations.services import CHANNELS, LANGUAGES, MAX_MESSAGE_CHARS
from knowledge.serializers import FiltersField


class TurnInput(serializers.Serializer):
    message = serializers.CharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=True,
                                    help_text=f"The customer's message (1-{MAX_MESSAGE_CHARS} characters).")
    session_id = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=40,
                                       help_text="Continue this session; omit to start a new one.")
    channel = serializers.ChoiceField(choices=CHANNELS, default="chat", required=False)
    language = serializers.ChoiceField(choices=LANGUAGES, default="auto", required=False,
                                       help_text="Answer language; `auto` detects English or Swahili.")
    filters = FiltersField(required=False, allow_null=True)


class CitationOutput(serializers.Serializer):
    key = serializers.CharField(help_text="Snippet key (or `facts:services` / `facts:hours`, or a document chunk).")
    version = serializers.IntegerField()
    title = serializers.CharField()
    score = serializers.FloatField()
    excerpt = serializers.CharField()
    ref = serializers.IntegerField(help_text="The [n] marker in the answer.")
    last_reviewed_at = serializers.CharField(allow_null=True)
    source = serializers.CharField(help_text="snippet | chunk | facts")
    language = serializers.CharField(required=False, help_text='"" for the text as written; "sw" when the answer '
                                     "quoted the owner-approved Swahili version.")


class TurnMetaOutput(serializers.Serializer):
    mode = serializers.CharField(help_text="Retrieval mode: inline | hybrid (empty when nothing was retrieved).")
    provider = serializers.CharField(help_text="Who wrote the answer: anthropic | openai | extractive | none.")
    model = serializers.CharField()
    latency_ms = serializers.IntegerField()
    retrieved_count = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    cost_usd = serializers.FloatField()
    language = serializers.CharField(help_text="The language the answer is in (en | sw).")
    trivial = serializers.BooleanField(help_text="A trivial turn reused the last retrieval.")
    prompt_version = serializers.CharField(help_text="The answer shaper's prompt version in force for this turn "
                                                     "(conversations/prompts/answer_shaper.yaml).")
    fallback_reason = serializers.CharField(
        required=False, help_text="Why the extractive provider answered: cost_ceiling | provider_error | grounding | "
                                  "output_filter | no_api_key | not_configured.")


class TurnOutput(serializers.Serializer):
    session_id = serializers.CharField()
    turn_id = serializers.CharField()
    intent = serializers.ChoiceField(choices=["booking", "cancel", "reschedule", "services", "hours", "other",
                                              "greeting", "thanks"])
    answer = serializers.CharField()
    citations = CitationOutput(many=True)
    refusal_reason = serializers.CharField(allow_null=True, help_text=(
        "Set when the bot declined to answer (never localized): no_relevant_context (nothing relevant in the "
        "knowledge, or the LLM found no grounded answer), empty_message (no words to answer: only punctuation, "
        "symbols or emoji), cost_ceiling (the session is past its cost ceiling and the free extractive answer "
        "had nothing to quote)."))
    meta = TurnMetaOutput()


class SessionCollectionInput(serializers.Serializer):
    collection = serializers.SlugField(max_length=100)


class SessionCollectionsOutput(serializers.Serializer):
    session_id = serializers.CharField()
    collections = serializers.ListField(child=serializers.CharField())
