"""The one way to call a hosted LLM: `complete` (whole reply) and `stream` (deltas, then one Completion).

Both resolve the configuration (settings by default), take the cached client, check the meter, bound the
call with a timeout, turn every failure into an LlmError that says whether to retry, and price the reply
into the meter. A reply that was sent is paid for even when it is then rejected (empty, cut short).
"""
from __future__ import annotations

import importlib
import time
from collections.abc import Iterable, Iterator
from types import ModuleType

from llm.clients import sdk_client
from llm.config import LlmConfig, config_from_settings
from llm.errors import LlmCallRefused, LlmError, malformed
from llm.meter import Meter, current_meter
from llm.pricing import cost_usd
from llm.types import Completion, LlmRequest, TextDelta, rough_tokens

# The client's timeout bounds each read; a stream that keeps trickling is bounded as a whole by this many.
STREAM_DEADLINE_TIMEOUTS = 2


def _prepare(request: LlmRequest, config: LlmConfig | None, meter: Meter | None):
    config = config or config_from_settings()
    meter = meter if meter is not None else current_meter()
    if meter is None:
        raise LlmCallRefused(f"No meter to price a {request.purpose} call into: not called", code="unmetered",
                             provider=config.provider)
    if not meter.allows_call():
        raise LlmCallRefused(f"Past the cost ceiling: no {request.purpose} call", code="cost_ceiling",
                             provider=config.provider)
    client = sdk_client(config)
    if request.timeout is not None or request.max_retries is not None:
        # A copy sharing the cached client's connection pool.
        client = client.with_options(timeout=request.timeout if request.timeout is not None else config.timeout,
                                     max_retries=config.max_retries if request.max_retries is None
                                     else request.max_retries)
    return config, meter, client, _backend(config.provider)


def _backend(provider: str) -> ModuleType:
    # Imported on first use: the SDKs are only loaded where an LLM is configured (llm.anthropic, llm.openai).
    return importlib.import_module(f"llm.{provider}")


def _checked(completion: Completion, backend: ModuleType) -> Completion:
    if not completion.text.strip():
        raise malformed(backend.NAME, backend.LABEL, "returned no text")
    return completion


def complete(request: LlmRequest, *, config: LlmConfig | None = None, meter: Meter | None = None) -> Completion:
    """One whole completion, priced into `meter` (or the current one); raises LlmError."""
    config, meter, client, backend = _prepare(request, config, meter)
    try:
        reply = backend.send(client, backend.arguments(config, request, stream=False))
        completion = meter.record(request.purpose, backend.read(config, request, reply))
        return _checked(completion, backend)
    except Exception as exc:  # the client's errors, transport errors and unreadable replies alike
        raise backend.error(exc) from exc


def stream(request: LlmRequest, *, config: LlmConfig | None = None,
           meter: Meter | None = None) -> Iterator[TextDelta | Completion]:
    """Text deltas as they arrive, then exactly one Completion; raises LlmError, even mid-stream.

    Closed early (the caller stopped reading) or broken after some text, the call is charged an estimate:
    the tokens were generated whether or not anyone read them.
    """
    config, meter, client, backend = _prepare(request, config, meter)
    deadline = time.monotonic() + config.timeout * STREAM_DEADLINE_TIMEOUTS
    received: list[str] = []
    priced = False
    try:
        events = backend.send(client, backend.arguments(config, request, stream=True))
        try:
            for item in backend.read_stream(config, request, _until(deadline, events, backend)):
                if isinstance(item, TextDelta):
                    received.append(item.text)
                    yield item
                else:
                    meter.record(request.purpose, item)
                    priced = True
                    yield _checked(item, backend)
        finally:
            events.close()
    except GeneratorExit:
        raise
    except Exception as exc:
        raise backend.error(exc) from exc
    finally:
        if not priced and received:
            meter.record(request.purpose, _estimate(config, request, "".join(received)), estimated=True)


def _until(deadline: float, events: Iterable, backend: ModuleType) -> Iterator:
    for event in events:
        if time.monotonic() > deadline:
            raise LlmError(f"{backend.LABEL} stream exceeded its deadline", retryable=True, provider=backend.NAME,
                           code="timeout")
        yield event


def _estimate(config: LlmConfig, request: LlmRequest, text: str) -> Completion:
    input_tokens, output_tokens = request.input_tokens_estimate, rough_tokens(text)
    return Completion(text=text, provider=config.provider, model=config.model, input_tokens=input_tokens,
                      output_tokens=output_tokens,
                      cost_usd=cost_usd(provider=config.provider, model=config.model, input_tokens=input_tokens,
                                        output_tokens=output_tokens))
