"""Mocked Anthropic / OpenAI HTTP transports speaking the real wire formats, driven through the real clients.

The transport and the whole replies are tests/shaping/shaping_helpers.py's; the streams are whole responses here.
"""
from __future__ import annotations

import json

import httpx2
from shaping_helpers import MockServer as FakeLlmServer  # noqa: F401 (re-exported for the chat tests)
from shaping_helpers import (anthropic_error, anthropic_message, openai_chunks, openai_completion,  # noqa: F401
                             openai_error, sse, stream_response)


def openai_stream(pieces: list[str], *, prompt_tokens: int = 900, completion_tokens: int = 30) -> httpx2.Response:
    """A Chat Completions stream carrying `pieces`, then the finish, the usage chunk and [DONE]."""
    return stream_response(sse(openai_chunks(pieces, prompt_tokens=prompt_tokens,
                                             completion_tokens=completion_tokens)))


def anthropic_stream(pieces: list[str], *, input_tokens: int = 800, output_tokens: int = 12) -> httpx2.Response:
    """A Messages API stream (server-sent events) carrying `pieces` as text deltas."""
    start = {"type": "message_start", "message": {
        "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}}
    events = [("message_start", start),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": piece}}) for piece in pieces]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": output_tokens}}),
               ("message_stop", {"type": "message_stop"})]
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())
