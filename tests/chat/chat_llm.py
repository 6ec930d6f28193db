"""Mocked Anthropic / OpenAI HTTP transports speaking the real wire formats, driven through the real clients."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx2


@dataclass
class FakeLlmServer:
    """Answers each request with the next queued reply; records requests; fails loudly on an extra one."""

    replies: list = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected LLM request {request.method} {request.url}")
        return self.replies.pop(0)

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))

    def body(self, index: int) -> dict:
        return json.loads(self.requests[index].content)


def anthropic_message(text: str, *, input_tokens: int = 1200, output_tokens: int = 60) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})


def anthropic_error(status: int, error_type: str, message: str = "boom") -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": error_type, "message": message}})


def openai_completion(text: str, *, prompt_tokens: int = 1100, completion_tokens: int = 50) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": {"cached_tokens": 0}}})


def openai_stream(pieces: list[str], *, prompt_tokens: int = 900, completion_tokens: int = 30) -> httpx2.Response:
    def chunk(delta: dict, finish_reason=None, usage=None, choices=True) -> dict:
        return {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1767225600,
                "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_1",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
                if choices else [], "usage": usage}

    events = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": piece}) for piece in pieces]
    events += [chunk({}, finish_reason="stop"),
               chunk({}, choices=False, usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                               "total_tokens": prompt_tokens + completion_tokens,
                                               "prompt_tokens_details": {"cached_tokens": 0}})]
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


def openai_error(status: int, message: str = "boom", code: str = "server_error") -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": code, "param": None, "code": code}})


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
