"""Anthropic's Messages API responses, streamed or whole, as tether events (no I/O).

Content blocks keep Anthropic's own ``index`` as tether's block index. Thinking blocks travel as
``ReasoningDelta`` events whose ``signature`` pieces the agent concatenates (the encoder in
``anthropic`` replays them byte-exact).
"""

from __future__ import annotations

import json
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
    malformed,
    mapping,
    quote,
    string,
    string_or_empty,
    wrong,
)
from ..sse import SSEEvent
from ..status import error_from_payload

__all__ = ["AnthropicStreamDecoder", "parse_response"]

_P = "anthropic"  # stamped on reasoning so only Anthropic gets its signatures back

_STOP = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSE_TURN,
    "model_context_window_exceeded": StopReason.CONTEXT_WINDOW_EXCEEDED,
}


def parse_response(body: dict[str, Any]) -> list[StreamEvent]:
    """A whole response as events; an error object as its ``TransportError``, another shape as
    a malformed response."""
    if body.get("type") == "error":
        raise _error(body.get("error"))
    try:
        return _events_of(body)
    except SHAPE_ERRORS as exc:
        raise malformed("response", quote(body), exc) from exc


def _usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> Usage:
    # Anthropic counts cached prompt tokens apart; tether's input_tokens includes them.
    return Usage(input_tokens + cache_read + cache_write, output_tokens, cache_read, cache_write)


def _error(err: Any) -> TransportError:
    """An in-body ``{"type": "error", "error": {...}}`` as the matching ``TransportError``."""
    return error_from_payload(err, " in the stream")


def _events_of(body: dict[str, Any]) -> list[StreamEvent]:
    """The events of a whole response's content blocks, then its ``IterationEnd``."""
    events: list[StreamEvent] = []
    for index, given in enumerate(array(body["content"], "content")):
        block = mapping(given, "a content block")
        kind = block["type"]
        if kind == "text":
            said = string_or_empty(block["text"], "text")
            if said:
                events.append(TextDelta(index, said))
        elif kind == "thinking":
            thinking = string_or_empty(block["thinking"], "thinking")
            signature = string(block.get("signature"), "signature")
            events.append(ReasoningDelta(index, thinking, signature, provider=_P))
        elif kind == "redacted_thinking":
            data = string_or_empty(block["data"], "data")
            events.append(ReasoningDelta(index, "", data, redacted=True, provider=_P))
        elif kind == "tool_use":
            tool_id, name = (
                string_or_empty(block["id"], "id"),
                string_or_empty(block["name"], "name"),
            )
            arguments = mapping(block["input"], "input")
            args = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
            events.append(ToolUseStart(index, tool_id, name))
            events.append(ToolInputDelta(index, tool_id, args))
    usage = mapping(body.get("usage") or {}, "usage")
    raw = string(body.get("stop_reason"), "stop_reason")
    events.append(
        IterationEnd(
            0,
            _STOP.get(raw, StopReason.UNKNOWN) if raw is not None else StopReason.UNKNOWN,
            _usage(
                count(usage.get("input_tokens"), "input_tokens"),
                count(usage.get("output_tokens"), "output_tokens"),
                count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens"),
                count(usage.get("cache_creation_input_tokens"), "cache_creation_input_tokens"),
            ),
            raw,
            string(body.get("model"), "model"),
        )
    )
    return events


class _ToolBlock:
    __slots__ = ("given", "id", "start_input")

    def __init__(self, id: str, start_input: str) -> None:
        self.id = id
        self.start_input = start_input
        self.given = False


class AnthropicStreamDecoder:
    """Turns one Messages API event stream into tether events (``StreamDecoder``)."""

    __slots__ = (
        "_cache_read",
        "_cache_write",
        "_done",
        "_input",
        "_model",
        "_output",
        "_raw_stop",
        "_tools",
    )

    def __init__(self) -> None:
        self._tools: dict[int, _ToolBlock] = {}
        self._input = self._output = self._cache_read = self._cache_write = 0
        self._model: str | None = None
        self._raw_stop: str | None = None
        self._done = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError) as exc:
            raise malformed(f"{event.event!r} event (not JSON)", event.data, exc) from exc
        try:
            if type(data) is not dict:
                raise wrong("the event", data, "an object")
            kind = data["type"]
            if kind == "content_block_delta":
                index = data["index"]
                if type(index) is not int or index < 0:
                    raise wrong("index", index, "a block index")
                return self._delta(index, data["delta"])
            if kind == "content_block_start":
                return self._start(block_index(data["index"]), data["content_block"])
            if kind == "content_block_stop":
                return self._stop(block_index(data["index"]))
            if kind == "message_start":
                message = mapping(data["message"], "message")
                self._model = string(message.get("model"), "model")
                self._read_usage(message.get("usage"))
                return []
            if kind == "message_delta":
                delta = mapping(data.get("delta") or {}, "delta")
                raw = string(delta.get("stop_reason"), "stop_reason")
                if raw is not None:
                    self._raw_stop = raw
                self._read_usage(data.get("usage"))
                return []
            if kind == "message_stop":
                return self._end()
            if kind == "error":
                raise _error(data.get("error"))
        except SHAPE_ERRORS as exc:
            raise malformed(f"{event.event!r} event", event.data, exc) from exc
        return []  # ping, and event kinds added to the API later

    def finish(self) -> list[StreamEvent]:
        if not self._done:
            raise StreamInterruptedError("the response stream ended before message_stop")
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        kind = delta["type"]
        if kind == "text_delta":
            said = delta["text"]
            return [TextDelta(index, said if type(said) is str else string_or_empty(said, "text"))]
        if kind == "input_json_delta":
            partial = string_or_empty(delta["partial_json"], "partial_json")
            tool = self._tools.get(index)
            if not partial or tool is None:  # None: a server tool's block, not ours to run
                return []
            tool.given = True
            return [ToolInputDelta(index, tool.id, partial)]
        if kind == "thinking_delta":
            return [ReasoningDelta(index, string_or_empty(delta["thinking"], "thinking"))]
        if kind == "signature_delta":
            signature = string(delta["signature"], "signature")
            return [ReasoningDelta(index, "", signature, provider=_P)]
        return []  # citations_delta and later additions

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = block["type"]
        if kind == "text":
            said = string_or_empty(block.get("text"), "text")
            return [TextDelta(index, said)] if said else []
        if kind == "tool_use":
            tool_id, name = (
                string_or_empty(block["id"], "id"),
                string_or_empty(block["name"], "name"),
            )
            given = block.get("input")
            start = ""
            if given:
                start = json.dumps(
                    mapping(given, "input"), separators=(",", ":"), ensure_ascii=False
                )
            self._tools[index] = _ToolBlock(tool_id, start)
            return [ToolUseStart(index, tool_id, name)]
        if kind == "thinking":
            thinking = string_or_empty(block.get("thinking"), "thinking")
            signature = string(block.get("signature"), "signature") or None
            if thinking or signature:
                return [ReasoningDelta(index, thinking, signature, provider=_P)]
            return []
        if kind == "redacted_thinking":
            data = string_or_empty(block["data"], "data")
            return [ReasoningDelta(index, "", data, redacted=True, provider=_P)]
        return []

    def _stop(self, index: int) -> list[StreamEvent]:
        tool = self._tools.pop(index, None)
        if tool is None or tool.given:
            return []
        # A call with no input deltas (a tool without parameters) still needs JSON arguments.
        return [ToolInputDelta(index, tool.id, tool.start_input or "{}")]

    def _read_usage(self, given: Any) -> None:
        if not given:
            return
        usage = mapping(given, "usage")
        value = usage.get("input_tokens")
        if value is not None:
            self._input = count(value, "input_tokens")
        value = usage.get("output_tokens")
        if value is not None:
            self._output = count(value, "output_tokens")
        value = usage.get("cache_read_input_tokens")
        if value is not None:
            self._cache_read = count(value, "cache_read_input_tokens")
        value = usage.get("cache_creation_input_tokens")
        if value is not None:
            self._cache_write = count(value, "cache_creation_input_tokens")

    def _end(self) -> list[StreamEvent]:
        if self._done:
            return []
        self._done = True
        raw = self._raw_stop
        stop = _STOP.get(raw, StopReason.UNKNOWN) if raw is not None else StopReason.UNKNOWN
        usage = _usage(self._input, self._output, self._cache_read, self._cache_write)
        return [IterationEnd(0, stop, usage, raw, self._model)]
