"""The one path to a hosted LLM (Anthropic or OpenAI), below `knowledge` and `conversations`.

    completion = llm.complete(LlmRequest(system=..., user=..., max_tokens=60, purpose="rewrite"))
    for item in llm.stream(request, meter=turn_meter): ...   # TextDelta..., then one Completion

One cached client per configuration (`llm.clients`), one completion call with a timeout and errors that
say whether to retry (`LlmError.retryable`), every reply priced into a Meter (`llm.meter`). No call is made
past the meter's limit (the session's hard cost ceiling) or without a meter to price it into.
"""
from __future__ import annotations

from llm.calls import complete, stream
from llm.clients import clients_clear, sdk_client
from llm.config import HOSTED, LlmConfig, config_from_settings, configured_name, has_api_key, hosted_enabled
from llm.errors import LlmCallRefused, LlmError, LlmNotConfigured
from llm.meter import Meter, MeteredCall, current_meter, metering
from llm.types import Completion, LlmRequest, TextDelta

__all__ = ["HOSTED", "Completion", "LlmCallRefused", "LlmConfig", "LlmError", "LlmNotConfigured", "LlmRequest",
           "Meter", "MeteredCall", "TextDelta", "clients_clear", "complete", "config_from_settings",
           "configured_name", "current_meter", "has_api_key", "hosted_enabled", "metering", "sdk_client", "stream"]
