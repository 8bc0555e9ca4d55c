"""Anthropic's Messages API (``POST /v1/messages``): the request encoder, the stream decoder and
the whole-response parser.

Content blocks keep Anthropic's own ``index`` as tether's block index. Thinking blocks travel as
``ReasoningDelta`` events whose ``signature`` pieces the agent concatenates; the signature (or, for
``redacted_thinking``, the ``data``) is replayed byte-exact on the next request, as the API demands.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote_to_bytes

from ...errors import BadRequestError, StreamInterruptedError, TransportError
from ...events import (
    IterationEnd,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from ...messages import (
    ContentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
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
from ..sse import SSEEvent
from ..status import error_from_payload

__all__ = ["API_VERSION", "AnthropicCodec", "AnthropicStreamDecoder"]

_P = "anthropic"  # stamped on reasoning so only Anthropic gets its signatures back

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` is required by the API; this is sent when none is set (plus any thinking
budget, which must fit below it)."""

_STOP = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSE_TURN,
    "model_context_window_exceeded": StopReason.CONTEXT_WINDOW_EXCEEDED,
}

_FIXED_CHOICES: dict[str, dict[str, Any]] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}


# ---------------------------------------------------------------------------------------------
# Request encoding


def _closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with ``additionalProperties: false`` on every object that leaves it unset.

    Anthropic's constrained decoding (structured output, strict tools) requires closed objects;
    unlike OpenAI strict mode, optional properties may stay optional.
    """
    out = dict(schema)
    if out.get("type") == "object" or "properties" in out:
        props = out.get("properties")
        if isinstance(props, Mapping):
            out["properties"] = {
                k: _closed(v) if isinstance(v, Mapping) else v for k, v in props.items()
            }
        out.setdefault("additionalProperties", False)
    if isinstance(out.get("items"), Mapping):
        out["items"] = _closed(out["items"])
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(key), list):
            out[key] = [_closed(s) if isinstance(s, Mapping) else s for s in out[key]]
    for key in ("$defs", "definitions"):
        if isinstance(out.get(key), Mapping):
            out[key] = {k: _closed(v) if isinstance(v, Mapping) else v for k, v in out[key].items()}
    return out


def _image(block: ImageBlock) -> dict[str, Any]:
    if block.data is not None:
        source = {"type": "base64", "media_type": block.media_type, "data": block.data}
        return {"type": "image", "source": source}
    url = block.url or ""
    if url.startswith("data:"):
        head, sep, payload = url[5:].partition(",")
        if not sep:
            raise BadRequestError("an image data: URI has no ',' before its data")
        params = head.split(";")
        if "base64" in params[1:]:
            data = payload
        else:  # a percent-encoded data: URI; the API only takes base64
            data = base64.b64encode(unquote_to_bytes(payload)).decode("ascii")
        source = {"type": "base64", "media_type": params[0] or block.media_type, "data": data}
        return {"type": "image", "source": source}
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise BadRequestError(
        f"Anthropic takes images as base64 data or http(s) URLs, not {url[:40]!r}"
    )


def _result_content(content: ToolResultContent) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": b.text} if isinstance(b, TextBlock) else _image(b) for b in content
    ]


def _block(block: ContentBlock) -> dict[str, Any] | None:
    """One block on the wire, or None for a block Anthropic must not be sent."""
    kind = type(block)
    if kind is TextBlock:
        assert isinstance(block, TextBlock)
        return {"type": "text", "text": block.text} if block.text else None
    if kind is ToolUseBlock:
        assert isinstance(block, ToolUseBlock)
        args = block.input if type(block.input) is dict else dict(block.input)
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": args}
    if kind is ToolResultBlock:
        assert isinstance(block, ToolResultBlock)
        out: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": _result_content(block.content),
        }
        if block.is_error:
            out["is_error"] = True
        return out
    if kind is ReasoningBlock:
        assert isinstance(block, ReasoningBlock)
        # The API rejects thinking without its signature, and another provider's payload.
        if block.signature is None or block.provider not in (None, "anthropic"):
            return None
        if block.redacted:
            return {"type": "redacted_thinking", "data": block.signature}
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if kind is ImageBlock:
        assert isinstance(block, ImageBlock)
        return _image(block)
    raise BadRequestError(f"Anthropic's Messages API takes no {kind.__name__} content")


def _results_first(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results must open a user turn; keep every other block after them, in order."""
    other_seen = False
    for item in content:
        if item["type"] != "tool_result":
            other_seen = True
        elif other_seen:
            results = [b for b in content if b["type"] == "tool_result"]
            return results + [b for b in content if b["type"] != "tool_result"]
    return content


def _messages(messages: Sequence[Message], system: str) -> tuple[list[dict[str, Any]], str]:
    """The ``messages`` array (consecutive same-role turns merged) and the system text."""
    system_parts = [system] if system else []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            text = message.text
            if text:
                system_parts.append(text)
            continue
        blocks = [b for b in map(_block, message.content) if b is not None]
        if not blocks:
            continue
        if out and out[-1]["role"] == message.role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": message.role, "content": blocks})
    for turn in out:
        if turn["role"] == "user":
            turn["content"] = _results_first(turn["content"])
    return out, "\n\n".join(system_parts)


_EPHEMERAL = {"type": "ephemeral"}
_CACHEABLE = frozenset(("text", "image", "tool_use", "tool_result"))  # thinking cannot be marked


def _mark_newest(messages: list[dict[str, Any]]) -> None:
    """A cache breakpoint on the newest message's last block that may carry one: the request
    after this reads everything up to it from the cache. (The blocks are this request's own.)"""
    if not messages:
        return
    for block in reversed(messages[-1]["content"]):
        if block["type"] in _CACHEABLE:
            block["cache_control"] = _EPHEMERAL
            return


def _tool_choice(options: ModelOptions) -> dict[str, Any] | None:
    choice = options.tool_choice
    if choice is None:
        if options.parallel_tool_calls is False:
            return {"type": "auto", "disable_parallel_tool_use": True}
        return None
    fixed = _FIXED_CHOICES.get(choice)
    out: dict[str, Any] = dict(fixed) if fixed is not None else {"type": "tool", "name": choice}
    if options.parallel_tool_calls is False and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


class AnthropicCodec:
    """The Messages API wire format (``WireCodec``).

    Options: ``max_tokens`` (required by the API: ``DEFAULT_MAX_TOKENS`` when unset, raised by
    ``thinking_budget``), ``temperature``, ``top_p``, ``top_k``, ``stop`` → ``stop_sequences``,
    ``tool_choice`` and ``parallel_tool_calls`` → ``tool_choice``, ``thinking_budget`` →
    ``thinking``, ``response_format`` → ``output_config.format``; ``extra_body`` is merged last.
    ``seed``, the penalties, ``reasoning_effort`` and ``prompt_cache_key`` have no Anthropic
    field and are left out.

    ``cache`` marks prompt-cache breakpoints (Anthropic caches only where a request marks one):
    on the system prompt, on the tools and on the newest message, three of the four allowed, so
    each request reads what the one before wrote.
    """

    path = "/v1/messages"

    def __init__(self, cache: bool = True) -> None:
        self.cache = cache
        # Schemas are closed once per options object / strict tool, not on every request.
        self._format_source: Mapping[str, Any] | None = None
        self._format: dict[str, Any] = {}
        self._strict_tools: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}

    def headers(self, api_key: str | None) -> dict[str, str]:
        out = {"anthropic-version": API_VERSION}
        if api_key:
            out["x-api-key"] = api_key
        return out

    def encode(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        system: str,
        options: ModelOptions,
        stream: bool,
    ) -> dict[str, Any]:
        wire_messages, system_text = _messages(messages, system)
        max_tokens = options.max_tokens
        if max_tokens is None:
            max_tokens = DEFAULT_MAX_TOKENS + (options.thinking_budget or 0)
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        cache = self.cache
        if system_text:
            body["system"] = (
                [{"type": "text", "text": system_text, "cache_control": _EPHEMERAL}]
                if cache
                else system_text
            )
        if cache:
            _mark_newest(wire_messages)
        body["messages"] = wire_messages
        if tools:
            wire_tools = [self._tool(t) for t in tools]
            if cache:  # a copy: strict tools' wire forms are kept for the next request
                wire_tools[-1] = {**wire_tools[-1], "cache_control": _EPHEMERAL}
            body["tools"] = wire_tools
            choice = _tool_choice(options)
            if choice is not None:
                body["tool_choice"] = choice
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.top_k is not None:
            body["top_k"] = options.top_k
        if options.stop:
            body["stop_sequences"] = list(options.stop)
        if options.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": options.thinking_budget}
        if options.response_format is not None:
            body["output_config"] = {"format": self._output_format(options.response_format)}
        if stream:
            body["stream"] = True
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def _tool(self, spec: ToolSpec) -> dict[str, Any]:
        if spec.strict:
            cached = self._strict_tools.get(id(spec))
            if cached is not None and cached[0] is spec:
                return cached[1]
            if len(self._strict_tools) > 256:
                self._strict_tools.clear()
            wire = {
                "name": spec.name,
                "description": spec.description,
                "input_schema": _closed(spec.schema),
                "strict": True,
            }
            self._strict_tools[id(spec)] = (spec, wire)
            return wire
        schema = spec.schema if type(spec.schema) is dict else dict(spec.schema)
        out: dict[str, Any] = {"name": spec.name}
        if spec.description:
            out["description"] = spec.description
        out["input_schema"] = schema
        return out

    def _output_format(self, response_format: Mapping[str, Any]) -> dict[str, Any]:
        if response_format is not self._format_source:
            given = response_format.get("schema")
            schema = given if isinstance(given, Mapping) else response_format
            self._format = {"type": "json_schema", "schema": _closed(schema)}
            self._format_source = response_format
        return self._format

    def decoder(self) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder()

    def parse(self, body: Any) -> list[StreamEvent]:
        if not isinstance(body, dict):
            raise StreamInterruptedError("the provider's response is not a JSON object")
        if body.get("type") == "error":
            raise _error(body.get("error"))
        try:
            return _parse(body)
        except SHAPE_ERRORS as exc:
            raise malformed("response", quote(body), exc) from exc


# ---------------------------------------------------------------------------------------------
# Responses


def _usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> Usage:
    # Anthropic counts cached prompt tokens apart; tether's input_tokens includes them.
    return Usage(input_tokens + cache_read + cache_write, output_tokens, cache_read, cache_write)


def _error(err: Any) -> TransportError:
    """An in-body ``{"type": "error", "error": {...}}`` as the matching ``TransportError``."""
    return error_from_payload(err, " in the stream")


def _parse(body: dict[str, Any]) -> list[StreamEvent]:
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
