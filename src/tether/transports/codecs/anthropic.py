"""Anthropic's Messages API (``POST /v1/messages``): the request encoder and the codec.

Thinking blocks are replayed byte-exact on the next request, as the API demands: the signature
(or, for ``redacted_thinking``, the ``data``) the decoder (``anthropic_decode``) collected.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote_to_bytes

from ...errors import BadRequestError, StreamInterruptedError
from ...events import StreamEvent
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
from ...types import ToolSpec
from ..options import ModelOptions
from .anthropic_decode import AnthropicStreamDecoder, parse_response

__all__ = ["API_VERSION", "AnthropicCodec", "AnthropicStreamDecoder"]

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` is required by the API; this is sent when none is set (plus any thinking
budget, which must fit below it)."""

_FIXED_CHOICES: dict[str, dict[str, Any]] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}


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


def _tool_result(block: ToolResultBlock) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": _result_content(block.content),
    }
    if block.is_error:
        out["is_error"] = True
    return out


def _thinking(block: ReasoningBlock) -> dict[str, Any] | None:
    """A thinking block to replay, or None: the API rejects thinking without its signature,
    and another provider's payload."""
    if block.signature is None or block.provider not in (None, "anthropic"):
        return None
    if block.redacted:
        return {"type": "redacted_thinking", "data": block.signature}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


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
        return _tool_result(block)
    if kind is ReasoningBlock:
        assert isinstance(block, ReasoningBlock)
        return _thinking(block)
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


def _system(text: str, cache: bool) -> str | list[dict[str, Any]]:
    """The system prompt: a cache breakpoint block when caching, else the plain text."""
    if cache:
        return [{"type": "text", "text": text, "cache_control": _EPHEMERAL}]
    return text


def _encode_options(body: dict[str, Any], options: ModelOptions) -> None:
    """The sampling options Anthropic has a field for, and the thinking budget."""
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
            body["system"] = _system(system_text, cache)
        if cache:
            _mark_newest(wire_messages)
        body["messages"] = wire_messages
        if tools:
            self._encode_tools(body, tools, options)
        _encode_options(body, options)
        if options.response_format is not None:
            body["output_config"] = {"format": self._output_format(options.response_format)}
        if stream:
            body["stream"] = True
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def _encode_tools(
        self, body: dict[str, Any], tools: Sequence[ToolSpec], options: ModelOptions
    ) -> None:
        """``tools`` (the last one a cache breakpoint when caching) and the ``tool_choice``."""
        wire_tools = [self._tool(t) for t in tools]
        if self.cache:  # a copy: strict tools' wire forms are kept for the next request
            wire_tools[-1] = {**wire_tools[-1], "cache_control": _EPHEMERAL}
        body["tools"] = wire_tools
        choice = _tool_choice(options)
        if choice is not None:
            body["tool_choice"] = choice

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
        return parse_response(body)
