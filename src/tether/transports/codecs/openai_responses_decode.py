"""OpenAI Responses output, streamed or whole, as tether events (no I/O).

Every output item of a response is its own content block, indexed by its ``output_index``.
Reasoning items come back with their ``rs_`` id and, when asked for, their
``encrypted_content`` (kept as the block's ``signature``), which the encoder
(``openai_responses``) replays before the function calls they preceded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import ServerError, StreamInterruptedError, TransportError
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
    quote,
    string,
    string_or_empty,
    wrong,
)
from ..sse import SSEEvent
from ..status import error_from_payload

__all__ = ["PARAGRAPH", "PROVIDER", "ResponsesStreamDecoder", "parse_response"]

PROVIDER = "openai-responses"
"""Stamped on reasoning blocks, so only this format gets its reasoning items back."""
PARAGRAPH = "\n\n"  # joins instructions, and the parts of a reasoning summary
_REASONING_DELTAS = frozenset(
    ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
)
_INCOMPLETE = {
    "max_output_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def parse_response(body: Any) -> list[StreamEvent]:
    """A whole response as events; a failed one as its ``TransportError``, another shape as a
    malformed response."""
    if not isinstance(body, Mapping):
        raise StreamInterruptedError(f"the provider sent a non-object response: {body!r:.200}")
    if body.get("error") or body.get("status") == "failed":
        raise _failure(body.get("error"))
    try:
        return _events_of(body)
    except SHAPE_ERRORS as exc:
        raise malformed("response", quote(body), exc) from exc


def _events_of(body: Mapping[str, Any]) -> list[StreamEvent]:
    """The events of a whole response's output items, then its ``IterationEnd``."""
    out: list[StreamEvent] = []
    calls = refused = False
    for index, item in enumerate(array(body.get("output") or [], "output")):
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "message":
            refused = _message_events(index, item, out) or refused
        elif kind == "function_call":
            calls = True
            out.extend(_call_events(index, item, args=True))
        elif kind == "reasoning":
            out.extend(_reasoning_events(index, item))
    out.append(_end(body, calls, refused))
    return out


def _usage(data: Any) -> Usage:
    if not data:
        return Usage()
    usage = mapping(data, "usage")
    return Usage(
        input_tokens=count(usage.get("input_tokens"), "input_tokens"),
        output_tokens=count(usage.get("output_tokens"), "output_tokens"),
        cache_read_tokens=detail(usage, "input_tokens_details", "cached_tokens"),
        reasoning_tokens=detail(usage, "output_tokens_details", "reasoning_tokens"),
    )


def _end(response: Mapping[str, Any], calls: bool, refused: bool) -> IterationEnd:
    """The ``IterationEnd`` for a finished (completed or incomplete) response object."""
    status = string(response.get("status"), "status") or "completed"
    raw = status
    if status == "completed":
        stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
    elif status == "incomplete":
        details = mapping(response.get("incomplete_details") or {}, "incomplete_details")
        raw = string(details.get("reason"), "incomplete reason") or status
        stop = _INCOMPLETE.get(raw, StopReason.UNKNOWN)
    else:
        stop = StopReason.UNKNOWN
    if refused and stop is not StopReason.MAX_TOKENS:
        stop = StopReason.REFUSAL
    usage = _usage(response.get("usage"))
    return IterationEnd(0, stop, usage, raw, string(response.get("model"), "model"))


def _failure(error: Any) -> TransportError:
    """The ``TransportError`` for a ``response.failed`` error object or an ``error`` event."""
    if not isinstance(error, Mapping):
        return ServerError("the response failed with no error detail", retryable=True)
    return error_from_payload(error, " in the response")


def _message_events(index: int, item: Mapping[str, Any], out: list[StreamEvent]) -> bool:
    """Append a message item's text; True if it was a refusal."""
    refused = False
    for given in array(item.get("content") or [], "content"):
        part = mapping(given, "a content part")
        kind = part.get("type")
        if kind == "output_text":
            said = string_or_empty(part.get("text"), "text")
        elif kind == "refusal":
            said = string_or_empty(part.get("refusal"), "refusal")
            refused = True
        else:
            continue
        if said:
            out.append(TextDelta(index, said))
    return refused


def _call_id(index: int, item: Mapping[str, Any]) -> str:
    return string(item.get("call_id"), "call_id") or string(item.get("id"), "id") or f"call_{index}"


def _call_events(index: int, item: Mapping[str, Any], *, args: bool) -> list[StreamEvent]:
    call_id = _call_id(index, item)
    out: list[StreamEvent] = [
        ToolUseStart(index, call_id, string_or_empty(item.get("name"), "name"))
    ]
    arguments = string_or_empty(item.get("arguments"), "arguments") if args else ""
    if arguments:
        out.append(ToolInputDelta(index, call_id, arguments))
    return out


def _parts_text(item: Mapping[str, Any], field: str, kind: str, joiner: str) -> str:
    """The text of an item's ``field`` parts of type ``kind``, joined."""
    parts = (mapping(p, f"a {field} part") for p in array(item.get(field) or [], field))
    return joiner.join(
        string_or_empty(p.get("text"), "text") for p in parts if p.get("type") == kind
    )


def _reasoning_text(item: Mapping[str, Any]) -> str:
    summary = _parts_text(item, "summary", "summary_text", PARAGRAPH)
    return summary + _parts_text(item, "content", "reasoning_text", "")


def _reasoning_events(
    index: int, item: Mapping[str, Any], *, with_text: bool = True
) -> list[StreamEvent]:
    """A finished reasoning item: its text (unless already streamed), then its encrypted payload.

    An item with neither still gives one empty delta, so the block (and its id) is kept.
    """
    rid = string(item.get("id"), "id")
    out: list[StreamEvent] = []
    if with_text:
        said = _reasoning_text(item)
        if said:
            out.append(ReasoningDelta(index, said, id=rid))
    encrypted = string(item.get("encrypted_content"), "encrypted_content")
    if encrypted:
        out.append(ReasoningDelta(index, "", signature=encrypted, id=rid, provider=PROVIDER))
    if not out and with_text:
        out.append(ReasoningDelta(index, "", id=rid, provider=PROVIDER))
    return out


class _Call:
    __slots__ = ("id", "streamed")

    def __init__(self, id: str) -> None:
        self.id = id
        self.streamed = False  # argument text already sent as ToolInputDelta


class ResponsesStreamDecoder:
    """Turns the Responses event stream into tether events; ``finish()`` checks it completed."""

    __slots__ = ("_calls", "_done", "_ids", "_model", "_reasoning", "_refused", "_texts")

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}  # item id -> block index, for servers without output_index
        self._calls: dict[int, _Call] = {}
        self._reasoning: set[int] = set()  # reasoning items that already gave an event
        self._texts: set[int] = set()  # message items that already gave text
        self._refused = False
        self._done = False
        self._model: str | None = None

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        data = event.data
        if self._done or not data or data == "[DONE]":
            return []
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise malformed(f"{event.event!r} event (not JSON)", data, exc) from exc
        try:
            if type(payload) is not dict:
                raise wrong("the event", payload, "an object")
            kind = string(payload.get("type"), "type") or event.event
            if kind == "response.output_text.delta":
                index = self._index(payload)
                self._texts.add(index)
                return [TextDelta(index, string_or_empty(payload.get("delta"), "delta"))]
            if kind == "response.function_call_arguments.delta":
                index = self._index(payload)
                delta = string_or_empty(payload.get("delta"), "delta")
                call = self._calls.get(index)
                if call is None:  # no output_item.added announced it: nothing to attach it to
                    return []
                call.streamed = True
                return [ToolInputDelta(index, call.id, delta)]
            if kind in _REASONING_DELTAS:
                index = self._index(payload)
                self._reasoning.add(index)
                delta = string_or_empty(payload.get("delta"), "delta")
                return [ReasoningDelta(index, delta, id=string(payload.get("item_id"), "item_id"))]
            handler = _HANDLERS.get(kind)
            return handler(self, payload) if handler is not None else []
        except SHAPE_ERRORS as exc:
            raise malformed(f"{event.event!r} event", data, exc) from exc

    def _index(self, payload: dict[str, Any]) -> int:
        """The item's block index: its ``output_index``, else one per distinct item id."""
        index = payload.get("output_index")
        if index is not None:
            return block_index(index, "output_index")
        item_id = string(payload.get("item_id"), "item_id")
        if not item_id:
            item_id = string(mapping(payload.get("item") or {}, "item").get("id"), "item id")
        if not item_id:
            return 0
        found = self._ids.get(item_id)
        if found is None:
            found = self._ids[item_id] = len(self._ids)
        return found

    def finish(self) -> list[StreamEvent]:
        if not self._done:
            raise StreamInterruptedError("the response stream ended before the response completed")
        return []

    # rarer events, dispatched through _HANDLERS

    def _created(self, payload: dict[str, Any]) -> list[StreamEvent]:
        response = mapping(payload.get("response") or {}, "response")
        self._model = string(response.get("model"), "model") or self._model
        return []

    def _item_added(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = mapping(payload.get("item") or {}, "item")
        if item.get("type") != "function_call":
            return []
        index = self._index(payload)
        self._calls[index] = _Call(_call_id(index, item))
        return _call_events(index, item, args=False)

    def _arguments_done(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = self._index(payload)
        return self._late_arguments(index, payload.get("arguments"))

    def _late_arguments(self, index: int, given: Any) -> list[StreamEvent]:
        """Arguments sent whole in a ``.done`` event, when no delta carried them."""
        arguments = string_or_empty(given, "arguments")
        call = self._calls.get(index)
        if call is None or call.streamed or not arguments:
            return []
        call.streamed = True
        return [ToolInputDelta(index, call.id, arguments)]

    def _summary_part(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = self._index(payload)
        part = payload.get("summary_index")
        if part is not None and block_index(part, "summary_index") > 0 and index in self._reasoning:
            return [ReasoningDelta(index, PARAGRAPH, id=string(payload.get("item_id"), "item_id"))]
        return []

    def _refusal(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._refused = True
        index = self._index(payload)
        self._texts.add(index)
        return [TextDelta(index, string_or_empty(payload.get("delta"), "delta"))]

    def _item_done(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = mapping(payload.get("item") or {}, "item")
        index = self._index(payload)
        kind = item.get("type")
        if kind == "function_call":
            if index not in self._calls:  # never announced: start it now
                call = self._calls[index] = _Call(_call_id(index, item))
                call.streamed = True
                return _call_events(index, item, args=True)
            return self._late_arguments(index, item.get("arguments"))
        if kind == "reasoning":
            streamed = index in self._reasoning
            self._reasoning.add(index)
            return _reasoning_events(index, item, with_text=not streamed)
        if kind == "message" and index not in self._texts:
            out: list[StreamEvent] = []
            self._refused = _message_events(index, item, out) or self._refused
            return out
        return []

    def _finished(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._done = True
        response = mapping(payload.get("response") or {}, "response")
        end = _end(response, bool(self._calls), self._refused)
        if end.model is None and self._model is not None:
            end = IterationEnd(0, end.stop_reason, end.usage, end.raw_stop_reason, self._model)
        return [end]

    def _failed(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._done = True
        raise _failure(mapping(payload.get("response") or {}, "response").get("error"))

    def _error(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._done = True
        raise _failure(payload)


_HANDLERS = {
    "response.created": ResponsesStreamDecoder._created,
    "response.output_item.added": ResponsesStreamDecoder._item_added,
    "response.function_call_arguments.done": ResponsesStreamDecoder._arguments_done,
    "response.reasoning_summary_part.added": ResponsesStreamDecoder._summary_part,
    "response.refusal.delta": ResponsesStreamDecoder._refusal,
    "response.output_item.done": ResponsesStreamDecoder._item_done,
    "response.completed": ResponsesStreamDecoder._finished,
    "response.incomplete": ResponsesStreamDecoder._finished,
    "response.failed": ResponsesStreamDecoder._failed,
    "error": ResponsesStreamDecoder._error,
}
