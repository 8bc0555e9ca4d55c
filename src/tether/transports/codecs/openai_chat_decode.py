"""OpenAI Chat Completions responses, streamed or whole, as tether events (no I/O).

Streamed and whole responses give the same events: reasoning, text (a refusal is text too) and
one block per tool call, each with its own index in the order they first appear, then one
``IterationEnd`` carrying usage, the stop reason and the model name.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from ...errors import StreamInterruptedError, TransportError
from ...events import (
    IterationEnd,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from ...types import StopReason, Usage
from ..fields import (
    SHAPE_ERRORS,
    array,
    block_index,
    count,
    detail,
    malformed,
    mapping,
    string,
    string_or_empty,
    wrong,
)
from ..sse import SSEEvent
from ..status import error_from_payload

__all__ = ["ChatStreamDecoder", "parse_response"]

_loads = json.loads

_STOP_REASONS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def parse_response(body: dict[str, Any]) -> list[StreamEvent]:
    """A whole response as events: reasoning, text, each tool call, then the end."""
    if body.get("error") is not None:
        raise _provider_error(body["error"], "in its response")
    choice = _first_choice(body.get("choices"))
    if choice is None:
        raise StreamInterruptedError("the provider's response has no choices")
    message = mapping(choice.get("message") or {}, "message")
    out: list[StreamEvent] = []
    index = 0
    reasoning = _reasoning_of(message)
    if reasoning:
        out.append(ReasoningDelta(index, reasoning))
        index += 1
    said = _text_of(message.get("content"))
    refusal = string(message.get("refusal"), "refusal")
    if said or refusal:
        if said:
            out.append(TextDelta(index, said))
        if refusal:
            out.append(TextDelta(index, refusal))
        index += 1
    calls = array(message.get("tool_calls") or [], "tool_calls")
    for call in calls:
        out.extend(_call_events(index, call))
        index += 1
    raw = string(choice.get("finish_reason"), "finish_reason")
    usage = body.get("usage")
    out.append(
        IterationEnd(
            0,
            _stop_reason(raw, bool(refusal), bool(calls)),
            _usage(usage) if usage else Usage(),
            raw,
            string(body.get("model"), "model"),
        )
    )
    return out


def _call_events(index: int, call: Any) -> list[StreamEvent]:
    """One whole tool call as block ``index``: its start, then its arguments if it has any."""
    function = mapping(call.get("function") or {}, "function")
    call_id = string(call.get("id"), "tool call id") or _new_call_id()
    out: list[StreamEvent] = [
        ToolUseStart(index, call_id, string_or_empty(function.get("name"), "tool name"))
    ]
    arguments = function.get("arguments")
    if arguments is not None:
        arguments = _arguments_of(arguments)
    if arguments:
        out.append(ToolInputDelta(index, call_id, arguments))
    return out


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _first_choice(choices: Any) -> Any:
    """The choice with index 0 (the only one tether asks for), or None."""
    for choice in array(choices or [], "choices"):
        index = mapping(choice, "a choice").get("index")
        if index is None or block_index(index, "choice index") == 0:
            return choice
    return None


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text of a list of parts (some servers)."""
    if not content or type(content) is str:
        return content or ""
    return "".join(
        string_or_empty(p.get("text"), "text")
        for p in array(content, "content")
        if type(p) is dict and p.get("type") == "text"
    )


def _arguments_of(arguments: Any) -> str:
    """Tool-call arguments as JSON text (some servers send the object itself)."""
    if type(arguments) is str:
        return arguments
    return json.dumps(mapping(arguments, "arguments"), separators=(",", ":"), ensure_ascii=False)


def _reasoning_of(fields: Mapping[str, Any]) -> str:
    value = fields.get("reasoning_content")
    if value is None:
        value = fields.get("reasoning")
    return value if isinstance(value, str) else ""


def _usage(usage: Any) -> Usage:
    """``prompt_tokens`` already counts cached ones, as ``Usage.input_tokens`` does."""
    usage = mapping(usage, "usage")
    cached = detail(usage, "prompt_tokens_details", "cached_tokens")
    if not cached:  # DeepSeek's own field
        cached = count(usage.get("prompt_cache_hit_tokens"), "prompt_cache_hit_tokens")
    return Usage(
        count(usage.get("prompt_tokens"), "prompt_tokens"),
        count(usage.get("completion_tokens"), "completion_tokens"),
        cached,
        0,
        detail(usage, "completion_tokens_details", "reasoning_tokens"),
    )


def _stop_reason(raw: str | None, refused: bool, has_calls: bool) -> StopReason:
    if refused:
        return StopReason.REFUSAL
    reason = _STOP_REASONS.get(raw, StopReason.UNKNOWN) if raw else StopReason.UNKNOWN
    if has_calls:
        # Some servers finish a tool-calling turn with "stop".
        return StopReason.TOOL_USE if reason is StopReason.END_TURN else reason
    return StopReason.UNKNOWN if reason is StopReason.TOOL_USE else reason


def _provider_error(error: Any, where: str) -> TransportError:
    """The ``TransportError`` for an ``{"error": ...}`` object sent with a 200 or in a stream."""
    return error_from_payload(error, f" {where}")


class _Call:
    """One streamed tool call; ``block`` is -1 until its ``ToolUseStart`` is emitted."""

    __slots__ = ("block", "id", "name", "pending")

    def __init__(self, id: str) -> None:
        self.id = id
        self.name = ""
        self.block = -1
        self.pending: list[str] = []


class ChatStreamDecoder:
    """Chat Completions chunks to tether events.

    A tool call's ``ToolUseStart`` is emitted with its first argument fragment (or when another
    call begins, or at the end), so a name sent in pieces arrives whole; repeats of the name are
    ignored. The ``IterationEnd`` comes at ``[DONE]`` (or at the end of a stream that had a
    ``finish_reason``), after the usage chunk.
    """

    __slots__ = (
        "_calls",
        "_ended",
        "_finish",
        "_last",
        "_model",
        "_next",
        "_order",
        "_reasoning",
        "_refused",
        "_text",
        "_usage",
    )

    def __init__(self) -> None:
        self._next = 0
        self._text = -1
        self._reasoning = -1
        self._calls: dict[int, _Call] = {}
        self._order: list[_Call] = []
        self._last: _Call | None = None
        self._finish: str | None = None
        self._refused = False
        self._usage = Usage()
        self._model: str | None = None
        self._ended = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        if self._ended:
            return []
        data = event.data
        try:
            chunk = _loads(data)
        except (ValueError, RecursionError) as exc:
            stripped = data.strip()
            if stripped == "[DONE]":
                return self._end()
            if not stripped:
                return []
            raise malformed("stream chunk (not JSON)", data, exc) from exc
        try:
            if type(chunk) is not dict:
                raise wrong("the chunk", chunk, "an object")
            return self._chunk(chunk, event.event)
        except SHAPE_ERRORS as exc:
            raise malformed("stream chunk", data, exc) from exc

    def _chunk(self, chunk: dict[str, Any], event: str) -> list[StreamEvent]:
        error = chunk.get("error")
        if error is not None:
            raise _provider_error(error, "in the stream")
        if event == "error":
            raise _provider_error(chunk, "in the stream")
        out: list[StreamEvent] = []
        choices = chunk.get("choices")
        if choices:
            if type(choices) is not list:
                raise wrong("choices", choices, "a list")
            choice = choices[0]
            index = choice.get("index")
            if index is not None and (index != 0 or type(index) is not int):
                choice = _first_choice(choices)
            if choice is not None:
                delta = choice.get("delta")
                if delta:
                    self._delta(delta, out)
                reason = choice.get("finish_reason")
                if reason:
                    self._finish = string(reason, "finish_reason")
                    self._start_pending(out)
        usage = chunk.get("usage")
        if usage:
            self._usage = _usage(usage)
        model = chunk.get("model")
        if model:
            if type(model) is not str:
                raise wrong("model", model, "a string")
            self._model = model
        return out

    def finish(self) -> list[StreamEvent]:
        return [] if self._ended else self._end()

    def _delta(self, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        content = delta.get("content")
        if content:
            if type(content) is not str:
                content = _text_of(content)
            if self._text < 0:
                self._text = self._next
                self._next += 1
            out.append(TextDelta(self._text, content))
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if reasoning and type(reasoning) is str:
            if self._reasoning < 0:
                self._reasoning = self._next
                self._next += 1
            out.append(ReasoningDelta(self._reasoning, reasoning))
        refusal = delta.get("refusal")
        if refusal:
            self._refused = True
            if self._text < 0:
                self._text = self._next
                self._next += 1
            out.append(TextDelta(self._text, string_or_empty(refusal, "refusal")))
        calls = delta.get("tool_calls")
        if calls:
            for call in array(calls, "tool_calls"):
                self._tool_delta(mapping(call, "a tool call"), out)

    def _tool_delta(self, part: dict[str, Any], out: list[StreamEvent]) -> None:
        key = part.get("index")
        if key is not None:
            key = block_index(key, "tool call index")
        call = self._call_of(key, string(part.get("id"), "tool call id"), out)
        self._last = call
        function = part.get("function")
        if function:
            self._function_delta(call, mapping(function, "function"), out)

    def _call_of(self, key: int | None, call_id: str | None, out: list[StreamEvent]) -> _Call:
        """The call a delta continues (by its index, else the last one), or a new call when it
        names none known or another id."""
        call = self._calls.get(key) if key is not None else self._last
        if call is None or (call_id and call.id and call_id != call.id):
            self._start_pending(out)  # an earlier call's name is complete once another begins
            call = _Call(call_id or "")
            self._calls[key if key is not None else -1 - len(self._order)] = call
            self._order.append(call)
        elif call_id and not call.id:
            call.id = call_id
        return call

    def _function_delta(
        self, call: _Call, function: dict[str, Any], out: list[StreamEvent]
    ) -> None:
        """A piece of the call's name (until it starts) and of its arguments."""
        if call.block < 0:
            name = string_or_empty(function.get("name"), "tool name")
            if name and name != call.name:
                call.name += name
        arguments = function.get("arguments")
        if arguments:
            arguments = _arguments_of(arguments)
            if call.block >= 0:
                out.append(ToolInputDelta(call.block, call.id, arguments))
            elif call.name:
                self._start(call, out)
                out.append(ToolInputDelta(call.block, call.id, arguments))
            else:  # arguments before the name: held until the call can start
                call.pending.append(arguments)

    def _start(self, call: _Call, out: list[StreamEvent]) -> None:
        if not call.id:
            call.id = _new_call_id()
        call.block = self._next
        self._next += 1
        out.append(ToolUseStart(call.block, call.id, call.name))
        for fragment in call.pending:
            out.append(ToolInputDelta(call.block, call.id, fragment))
        call.pending.clear()

    def _start_pending(self, out: list[StreamEvent]) -> None:
        for call in self._order:
            if call.block < 0:
                self._start(call, out)

    def _end(self) -> list[StreamEvent]:
        self._ended = True
        if self._finish is None and not self._refused:
            raise StreamInterruptedError(
                "the response stream ended before the response was complete "
                "(no finish_reason arrived)"
            )
        out: list[StreamEvent] = []
        self._start_pending(out)
        stop = _stop_reason(self._finish, self._refused, bool(self._order))
        out.append(IterationEnd(0, stop, self._usage, self._finish, self._model))
        return out
