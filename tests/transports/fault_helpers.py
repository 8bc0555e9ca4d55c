"""The three wire formats as a misbehaving server speaks them, for the fault matrix.

Each ``WireFormat`` builds its provider's real SSE framing (OpenAI chat chunks with ``[DONE]``,
Responses ``event:``/``data:`` pairs, Anthropic's message events): a whole text turn, a whole
tool-call turn, and the pieces a fault cuts them into. Also: a clock that never waits, a strict
history check, and a snapshot of what a run could leak (tasks, descriptors, connections).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from misbehaving_server import MisbehavingServer

from tether.messages import Message
from tether.transports.anthropic import AnthropicTransport
from tether.transports.http import HttpTransport
from tether.transports.openai_chat import OpenAIChatTransport
from tether.transports.openai_responses import OpenAIResponsesTransport

__all__ = [
    "FORMATS",
    "FastClock",
    "Leaks",
    "WireFormat",
    "assert_history_valid",
    "busy_connections",
    "open_fds",
]

Frame = str | dict[str, Any]
"""One SSE event as ``sse_stream`` takes it: a dict is sent as ``data: <json>``, a str as is."""

LEAD = "Let me look."
"""What the model says before it calls the tool."""


def _named(kind: str, payload: dict[str, Any]) -> str:
    """An SSE event with an ``event:`` line naming its type, as Responses and Anthropic send."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n"


@dataclass(frozen=True)
class WireFormat:
    """One provider wire format: how to reach the server and what its turns look like.

    ``opening`` frames carry no content (no tether event); ``text_head`` and ``tool_head`` are
    the start of a turn up to a point where text (and a part of a tool call) has streamed;
    ``text_turn`` and ``tool_turn`` are whole turns; ``broken`` is one event whose JSON is cut.
    ``path`` is where the transport posts, under the server's root.
    """

    name: str
    path: str
    transport: Callable[..., HttpTransport]
    opening: Callable[[], list[Frame]]
    text_head: Callable[[Sequence[str]], list[Frame]]
    text_tail: Callable[[Sequence[str]], list[Frame]]
    tool_head: Callable[[str, str, str], list[Frame]]
    tool_tail: Callable[[str, str, str], list[Frame]]
    broken: str

    def text_turn(self, *pieces: str) -> list[Frame]:
        return [*self.text_head(pieces), *self.text_tail(pieces)]

    def tool_turn(self, call_id: str, name: str, arguments: str) -> list[Frame]:
        return [
            *self.tool_head(call_id, name, arguments),
            *self.tool_tail(call_id, name, arguments),
        ]


# --- OpenAI Chat Completions ---------------------------------------------------------------------


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-fault",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


_CHAT_USAGE = {
    "id": "chatcmpl-fault",
    "object": "chat.completion.chunk",
    "created": 1767225600,
    "model": "gpt-fault",
    "choices": [],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
}


def _chat_opening() -> list[Frame]:
    return [_chat_chunk({"role": "assistant", "content": ""})]


def _chat_text_head(pieces: Sequence[str]) -> list[Frame]:
    return [*_chat_opening(), *(_chat_chunk({"content": p}) for p in pieces)]


def _chat_text_tail(pieces: Sequence[str]) -> list[Frame]:
    return [_chat_chunk({}, "stop"), _CHAT_USAGE, "data: [DONE]\n\n"]


def _chat_tool_head(call_id: str, name: str, arguments: str) -> list[Frame]:
    start = {"index": 0, "id": call_id, "type": "function"}
    first = arguments[: len(arguments) // 2]
    return [
        *_chat_text_head([LEAD]),
        _chat_chunk({"tool_calls": [{**start, "function": {"name": name, "arguments": ""}}]}),
        _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": first}}]}),
    ]


def _chat_tool_tail(call_id: str, name: str, arguments: str) -> list[Frame]:
    rest = arguments[len(arguments) // 2 :]
    return [
        _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": rest}}]}),
        _chat_chunk({}, "tool_calls"),
        _CHAT_USAGE,
        "data: [DONE]\n\n",
    ]


# --- OpenAI Responses ----------------------------------------------------------------------------


def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": "resp_fault",
        "object": "response",
        "created_at": 1767225600,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": "gpt-fault",
        "output": output,
        "usage": {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 17,
        }
        if done
        else None,
    }


def _message_item(text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "annotations": [], "text": text}] if text else []
    return {
        "id": "msg_fault",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_item(call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": "fc_fault",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def _responses_opening() -> list[Frame]:
    return [
        _named("response.created", {"response": _response("in_progress", [])}),
        _named("response.in_progress", {"response": _response("in_progress", [])}),
    ]


def _responses_text_head(pieces: Sequence[str]) -> list[Frame]:
    where = {"item_id": "msg_fault", "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "annotations": [], "text": ""}
    return [
        *_responses_opening(),
        _named(
            "response.output_item.added",
            {"output_index": 0, "item": _message_item("", "in_progress")},
        ),
        _named("response.content_part.added", {**where, "part": part}),
        *(_named("response.output_text.delta", {**where, "delta": p}) for p in pieces),
    ]


def _responses_text_done(text: str) -> list[Frame]:
    where = {"item_id": "msg_fault", "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "annotations": [], "text": text}
    return [
        _named("response.output_text.done", {**where, "text": text}),
        _named("response.content_part.done", {**where, "part": part}),
        _named(
            "response.output_item.done",
            {"output_index": 0, "item": _message_item(text, "completed")},
        ),
    ]


def _responses_text_tail(pieces: Sequence[str]) -> list[Frame]:
    text = "".join(pieces)
    output = [_message_item(text, "completed")]
    return [
        *_responses_text_done(text),
        _named("response.completed", {"response": _response("completed", output)}),
    ]


def _responses_tool_head(call_id: str, name: str, arguments: str) -> list[Frame]:
    first = arguments[: len(arguments) // 2]
    where = {"item_id": "fc_fault", "output_index": 1}
    return [
        *_responses_text_head([LEAD]),
        *_responses_text_done(LEAD),
        _named(
            "response.output_item.added",
            {"output_index": 1, "item": _call_item(call_id, name, "", "in_progress")},
        ),
        _named("response.function_call_arguments.delta", {**where, "delta": first}),
    ]


def _responses_tool_tail(call_id: str, name: str, arguments: str) -> list[Frame]:
    rest = arguments[len(arguments) // 2 :]
    where = {"item_id": "fc_fault", "output_index": 1}
    call = _call_item(call_id, name, arguments, "completed")
    output = [_message_item(LEAD, "completed"), call]
    return [
        _named("response.function_call_arguments.delta", {**where, "delta": rest}),
        _named("response.function_call_arguments.done", {**where, "arguments": arguments}),
        _named("response.output_item.done", {"output_index": 1, "item": call}),
        _named("response.completed", {"response": _response("completed", output)}),
    ]


# --- Anthropic Messages --------------------------------------------------------------------------


def _anthropic_opening() -> list[Frame]:
    message: dict[str, Any] = {
        "id": "msg_fault",
        "type": "message",
        "role": "assistant",
        "model": "claude-fault",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        },
    }
    return [_named("message_start", {"message": message}), _named("ping", {})]


def _anthropic_text_head(pieces: Sequence[str]) -> list[Frame]:
    return [
        *_anthropic_opening(),
        _named("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        *(
            _named("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": p}})
            for p in pieces
        ),
    ]


def _anthropic_end(stop: str) -> list[Frame]:
    return [
        _named(
            "message_delta",
            {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
        ),
        _named("message_stop", {}),
    ]


def _anthropic_text_tail(pieces: Sequence[str]) -> list[Frame]:
    return [_named("content_block_stop", {"index": 0}), *_anthropic_end("end_turn")]


def _anthropic_tool_head(call_id: str, name: str, arguments: str) -> list[Frame]:
    first = arguments[: len(arguments) // 2]
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return [
        *_anthropic_text_head([LEAD]),
        _named("content_block_stop", {"index": 0}),
        _named("content_block_start", {"index": 1, "content_block": block}),
        _named(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": first}},
        ),
    ]


def _anthropic_tool_tail(call_id: str, name: str, arguments: str) -> list[Frame]:
    rest = arguments[len(arguments) // 2 :]
    return [
        _named(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": rest}},
        ),
        _named("content_block_stop", {"index": 1}),
        *_anthropic_end("tool_use"),
    ]


# --- the three ---------------------------------------------------------------------------------


def _chat(base_url: str, **options: Any) -> HttpTransport:
    return OpenAIChatTransport(
        "gpt-fault", base_url=base_url + "/v1", api_key="sk-fault", **options
    )


def _responses(base_url: str, **options: Any) -> HttpTransport:
    return OpenAIResponsesTransport(
        "gpt-fault", base_url=base_url + "/v1", api_key="sk-fault", **options
    )


def _anthropic(base_url: str, **options: Any) -> HttpTransport:
    return AnthropicTransport("claude-fault", base_url=base_url, api_key="sk-ant-fault", **options)


FORMATS: dict[str, WireFormat] = {
    "openai_chat": WireFormat(
        "openai_chat",
        "/v1/chat/completions",
        _chat,
        _chat_opening,
        _chat_text_head,
        _chat_text_tail,
        _chat_tool_head,
        _chat_tool_tail,
        'data: {"id": "chatcmpl-fault", "choices": [{"index": 0, "delta": {"cont\n\n',
    ),
    "openai_responses": WireFormat(
        "openai_responses",
        "/v1/responses",
        _responses,
        _responses_opening,
        _responses_text_head,
        _responses_text_tail,
        _responses_tool_head,
        _responses_tool_tail,
        'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "del\n\n',
    ),
    "anthropic": WireFormat(
        "anthropic",
        "/v1/messages",
        _anthropic,
        _anthropic_opening,
        _anthropic_text_head,
        _anthropic_text_tail,
        _anthropic_tool_head,
        _anthropic_tool_tail,
        'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "del\n\n',
    ),
}


# --- time, history, leaks ----------------------------------------------------------------------


@dataclass
class FastClock:
    """A ``Clock`` that records each wait and does not wait; its jitter draw is always 0."""

    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def random(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)


def assert_history_valid(messages: Sequence[Message]) -> None:
    """The history opens with the user; every tool call has exactly one result, in the message
    right after it, and no result answers a call that is not there."""
    assert messages and messages[0].role == "user", messages
    answered: set[str] = set()
    for i, m in enumerate(messages):
        calls = [u.id for u in m.tool_uses]
        assert len(set(calls)) == len(calls), f"repeated call ids in message {i}: {calls}"
        if calls:
            assert m.role == "assistant", m
            assert i + 1 < len(messages), f"tool calls {calls} have no results"
            results = [r.tool_use_id for r in messages[i + 1].tool_results]
            assert sorted(results) == sorted(calls), f"calls {calls} answered by {results}"
        results = [r.tool_use_id for r in m.tool_results]
        if results:
            before = {u.id for u in messages[i - 1].tool_uses} if i else set()
            assert set(results) <= before, f"results {results} answer no call of message {i - 1}"
            assert not answered & set(results), f"results {results} given twice"
            answered.update(results)


def open_fds() -> int:
    """How many file descriptors this process holds open."""
    return len(os.listdir("/proc/self/fd"))


def busy_connections(transport: HttpTransport) -> int:
    """Pooled connections of the transport's client still serving a response (a response left
    open holds its connection so). Reads httpx's pool, which the library keeps private."""
    pool = transport._client._transport._pool  # type: ignore[attr-defined]
    return sum(1 for c in pool.connections if not (c.is_idle() or c.is_closed()))


@dataclass
class Leaks:
    """What exists before a case, to compare with what is left after it."""

    tasks: set[asyncio.Task[Any]]
    fds: int

    @classmethod
    def snapshot(cls) -> Leaks:
        return cls(asyncio.all_tasks(), open_fds())

    def extra_tasks(self) -> set[asyncio.Task[Any]]:
        return {t for t in asyncio.all_tasks() if t not in self.tasks and not t.done()}

    async def settle(self, server: MisbehavingServer, limit: float = 5.0) -> None:
        """Give closed sockets and finishing tasks up to ``limit`` seconds to go away (the
        server notices a client's close on its own time), then stop waiting."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while loop.time() < end:
            if not server.open_connections and not self.extra_tasks() and open_fds() <= self.fds:
                return
            await asyncio.sleep(0.01)
