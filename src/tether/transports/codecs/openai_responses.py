"""The OpenAI Responses wire format (``POST /responses``): input items out, output items in.

Every output item of a response is its own content block, indexed by its ``output_index``.
Reasoning items come back with their ``rs_`` id and, when asked for, their
``encrypted_content`` (kept as the block's ``signature``) and are replayed byte-exact before the
function calls they preceded, so a reasoning model keeps its chain of thought across tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
from ...messages import (
    AudioBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ...types import StopReason, ToolSpec, Usage
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
from ..options import ModelOptions
from ..schema import strict_schema
from ..sse import SSEEvent
from ..status import error_from_payload

__all__ = ["PROVIDER", "OpenAIResponsesCodec", "ResponsesStreamDecoder"]

PROVIDER = "openai-responses"
_PARAGRAPH = "\n\n"  # joins instructions, and the parts of a reasoning summary
_BUILTIN_CHOICES = frozenset(("auto", "none", "required"))
_REASONING_DELTAS = frozenset(
    ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
)
_INCOMPLETE = {
    "max_output_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


# --- request -----------------------------------------------------------------------------------


class OpenAIResponsesCodec:
    """Request bodies for ``/responses`` and the events its responses give. No I/O."""

    path = "/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def encode(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        system: str,
        options: ModelOptions,
        stream: bool,
    ) -> dict[str, Any]:
        instructions = [system] if system else []
        items: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                if message.text:
                    instructions.append(message.text)
            else:
                _encode_message(message, items)
        body: dict[str, Any] = {"model": model}
        if instructions:
            body["instructions"] = _PARAGRAPH.join(instructions)
        body["input"] = items
        if tools:
            body["tools"] = [_tool(spec) for spec in tools]
        _encode_options(body, options)
        if stream:
            body["stream"] = True
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def decoder(self) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder()

    def parse(self, body: Any) -> list[StreamEvent]:
        if not isinstance(body, Mapping):
            raise StreamInterruptedError(f"the provider sent a non-object response: {body!r:.200}")
        if body.get("error") or body.get("status") == "failed":
            raise _failure(body.get("error"))
        try:
            return _parse(body)
        except SHAPE_ERRORS as exc:
            raise malformed("response", quote(body), exc) from exc


def _parse(body: Mapping[str, Any]) -> list[StreamEvent]:
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


def _encode_message(message: Message, items: list[dict[str, Any]]) -> None:
    """Append ``message`` as input items, in block order; runs of text/media become one message."""
    parts: list[TextBlock | ImageBlock | AudioBlock] = []
    for block in message.content:
        if isinstance(block, TextBlock | ImageBlock | AudioBlock):
            parts.append(block)
            continue
        if parts:
            _flush(message.role, parts, items)
            parts = []
        if isinstance(block, ToolUseBlock):
            items.append(_function_call(block))
        elif isinstance(block, ToolResultBlock):
            output = _output(block)
            items.append(
                {"type": "function_call_output", "call_id": block.tool_use_id, "output": output}
            )
        elif _replayable(block):
            items.append(_reasoning_item(block))
    if parts:
        _flush(message.role, parts, items)


def _flush(
    role: str, parts: list[TextBlock | ImageBlock | AudioBlock], items: list[dict[str, Any]]
) -> None:
    if role == "assistant":  # the model's own words go back as one plain string
        text = "".join(p.text for p in parts if type(p) is TextBlock)
        if text:
            items.append({"role": "assistant", "content": text})
    elif len(parts) == 1 and type(parts[0]) is TextBlock:
        items.append({"role": role, "content": parts[0].text})
    else:
        items.append({"role": role, "content": [_part(p) for p in parts]})


def _part(block: TextBlock | ImageBlock | AudioBlock) -> dict[str, Any]:
    if type(block) is TextBlock:
        return {"type": "input_text", "text": block.text}
    if type(block) is ImageBlock:
        return _image(block)
    assert isinstance(block, AudioBlock)
    fmt = block.media_type.rpartition("/")[2].lower()
    fmt = {"mpeg": "mp3", "x-wav": "wav", "wave": "wav"}.get(fmt, fmt)
    return {"type": "input_audio", "input_audio": {"data": block.data, "format": fmt}}


def _image(block: ImageBlock) -> dict[str, Any]:
    url = block.url if block.url is not None else f"data:{block.media_type};base64,{block.data}"
    return {"type": "input_image", "image_url": url, "detail": "auto"}


def _function_call(block: ToolUseBlock) -> dict[str, Any]:
    arguments = block.raw_arguments
    if arguments is None:
        arguments = json.dumps(block.input, separators=(",", ":"), ensure_ascii=False)
    return {
        "type": "function_call",
        "call_id": block.id,
        "name": block.name,
        "arguments": arguments,
    }


def _output(block: ToolResultBlock) -> str | list[dict[str, Any]]:
    """A plain string, unless the result holds images (then input_text/input_image parts)."""
    content = block.content
    if isinstance(content, str):
        return content
    if all(type(b) is TextBlock for b in content):
        return block.text
    return [
        {"type": "input_text", "text": b.text} if isinstance(b, TextBlock) else _image(b)
        for b in content
    ]


def _replayable(block: ReasoningBlock) -> bool:
    """Only this format's own reasoning items (``rs_`` ids) can be sent back."""
    return (
        block.id is not None and block.id.startswith("rs_") and block.provider in (None, PROVIDER)
    )


def _reasoning_item(block: ReasoningBlock) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": block.text}] if block.text else []
    item: dict[str, Any] = {"type": "reasoning", "id": block.id, "summary": summary}
    if block.signature is not None:
        item["encrypted_content"] = block.signature
    return item


def _tool(spec: ToolSpec) -> dict[str, Any]:
    # The Responses API treats a missing ``strict`` as true, unlike Chat Completions: say false.
    if spec.strict:
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": strict_schema(spec.schema),
            "strict": True,
        }
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.schema,
        "strict": False,
    }


def _encode_options(body: dict[str, Any], options: ModelOptions) -> None:
    # stop, top_k, seed and the penalties are not Responses options: they are left out.
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    choice = options.tool_choice
    if choice is not None:
        body["tool_choice"] = (
            choice if choice in _BUILTIN_CHOICES else {"type": "function", "name": choice}
        )
    if options.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.response_format is not None:
        body["text"] = {"format": _text_format(options.response_format)}
    if options.reasoning_effort is not None:
        body["reasoning"] = {"effort": options.reasoning_effort, "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
        body["store"] = False
    if options.prompt_cache_key is not None:
        body["prompt_cache_key"] = options.prompt_cache_key


def _text_format(given: Mapping[str, Any]) -> dict[str, Any]:
    schema = given.get("schema")
    if not isinstance(schema, Mapping):  # a bare JSON Schema
        return {"type": "json_schema", "name": "response", "schema": given}
    fmt: dict[str, Any] = {"type": "json_schema", "name": given.get("name") or "response"}
    if given.get("description"):
        fmt["description"] = given["description"]
    strict = given.get("strict")
    fmt["schema"] = strict_schema(schema) if strict else schema
    if strict is not None:
        fmt["strict"] = bool(strict)
    return fmt


# --- response ----------------------------------------------------------------------------------


def _usage(data: Any) -> Usage:
    if not data:
        return Usage()
    usage = mapping(data, "usage")
    return Usage(
        input_tokens=count(usage.get("input_tokens"), "input_tokens"),
        output_tokens=count(usage.get("output_tokens"), "output_tokens"),
        cache_read_tokens=_detail(usage, "input_tokens_details", "cached_tokens"),
        reasoning_tokens=_detail(usage, "output_tokens_details", "reasoning_tokens"),
    )


def _detail(usage: dict[str, Any], group: str, field: str) -> int:
    details = usage.get(group)
    return count(mapping(details, group).get(field), field) if details else 0


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
    summary = _parts_text(item, "summary", "summary_text", _PARAGRAPH)
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
            return [ReasoningDelta(index, _PARAGRAPH, id=string(payload.get("item_id"), "item_id"))]
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
