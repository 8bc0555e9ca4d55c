"""OpenAI Chat Completions (``POST /chat/completions``): the request encoder and the codec.

OpenAI-compatible servers (llama.cpp, vLLM, Ollama, Groq, DeepSeek, …) speak the same format;
their ``reasoning_content`` (or ``reasoning``) deltas become ``ReasoningDelta`` events (decoded in
``openai_chat_decode``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import StreamInterruptedError
from ...events import StreamEvent
from ...messages import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ...types import ToolSpec
from ..fields import SHAPE_ERRORS, malformed, quote
from ..jsonbody import Encoded, dumps
from ..options import ModelOptions, ToolChoice
from ..schema import strict_schema
from .openai_chat_decode import ChatStreamDecoder, parse_response

__all__ = ["OpenAIChatCodec"]

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}

_CACHE_LIMIT = 512


def _audio_format(media_type: str) -> str:
    kind = media_type.split(";", 1)[0].strip().lower()
    return _AUDIO_FORMATS.get(kind) or kind.removeprefix("audio/")


def _part(block: ContentBlock) -> dict[str, Any]:
    kind = type(block)
    if kind is TextBlock:
        assert isinstance(block, TextBlock)
        return {"type": "text", "text": block.text}
    if kind is ImageBlock:
        assert isinstance(block, ImageBlock)
        url = block.url if block.url is not None else f"data:{block.media_type};base64,{block.data}"
        return {"type": "image_url", "image_url": {"url": url}}
    if kind is AudioBlock:
        assert isinstance(block, AudioBlock)
        return {
            "type": "input_audio",
            "input_audio": {"data": block.data, "format": _audio_format(block.media_type)},
        }
    raise ValueError(f"OpenAI Chat cannot send a {kind.__name__} in message content")


def _content(blocks: Sequence[ContentBlock]) -> str | list[dict[str, Any]]:
    """One text block as a plain string (Prompty §7.1.1); anything else as typed parts."""
    if len(blocks) == 1 and type(blocks[0]) is TextBlock:
        return blocks[0].text
    return [_part(b) for b in blocks]


def _arguments(block: ToolUseBlock) -> str:
    if block.raw_arguments is not None:
        return block.raw_arguments
    data = block.input if type(block.input) is dict else dict(block.input)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _assistant(message: Message) -> dict[str, Any]:
    blocks: list[ContentBlock] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        kind = type(block)
        if kind is ToolUseBlock:
            assert isinstance(block, ToolUseBlock)
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": _arguments(block)},
                }
            )
        elif kind is TextBlock:
            blocks.append(block)
        elif kind is not ReasoningBlock:  # reasoning is never sent back in this format
            raise ValueError(f"OpenAI Chat cannot send a {kind.__name__} in an assistant message")
    wire: dict[str, Any] = {"role": "assistant"}
    if blocks:
        wire["content"] = _content(blocks)
    elif not calls:
        wire["content"] = ""
    if calls:  # content is left out when the model only called tools (Prompty §9.5)
        wire["tool_calls"] = calls
    return wire


def _tool_message(result: ToolResultBlock, images: list[ContentBlock]) -> dict[str, Any]:
    """The ``tool`` message for one result; its images go to ``images`` (a tool message is text)."""
    content = result.content
    if isinstance(content, str):
        text = content
    else:
        text = "".join(b.text for b in content if type(b) is TextBlock)
        shown = [b for b in content if type(b) is ImageBlock]
        if shown:
            images.append(TextBlock(f"Image(s) returned by tool call {result.tool_use_id}:"))
            images.extend(shown)
            if not text:
                text = "(the result is the image(s) in the next message)"
    return {"role": "tool", "tool_call_id": result.tool_use_id, "content": text}


def _append(message: Message, out: list[dict[str, Any]]) -> None:
    """Add ``message`` as wire messages: tool results first, each its own ``tool`` message."""
    if message.role == "assistant":
        out.append(_assistant(message))
        return
    parts: list[ContentBlock] = []
    images: list[ContentBlock] = []
    had_results = False
    for block in message.content:
        kind = type(block)
        if kind is ToolResultBlock:
            assert isinstance(block, ToolResultBlock)
            out.append(_tool_message(block, images))
            had_results = True
        elif kind is ToolUseBlock:
            raise ValueError(f"a tool call can only be in an assistant message, not {message.role}")
        elif kind is not ReasoningBlock:
            parts.append(block)
    if images:
        parts = [*images, *parts]
    if parts:
        out.append({"role": message.role, "content": _content(parts)})
    elif not had_results:
        out.append({"role": message.role, "content": ""})


_MESSAGE_MEMO = 4096  # messages whose wire form a codec keeps (then it starts again)


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _response_format(given: Mapping[str, Any]) -> dict[str, Any]:
    """``{"name", "schema", "strict"}`` or a bare schema as ``json_schema``; OpenAI's own passes."""
    if given.get("type") in ("json_schema", "json_object", "text"):
        return dict(given)
    schema = given.get("schema")
    if isinstance(schema, Mapping):
        name = given.get("name") or "response"
        strict = given.get("strict")
        description = given.get("description")
    else:
        schema, name, strict, description = given, "response", None, None
    spec: dict[str, Any] = {"name": name}
    if description:
        spec["description"] = description
    if strict:
        spec["schema"] = strict_schema(schema)
        spec["strict"] = True
    else:
        spec["schema"] = schema if type(schema) is dict else dict(schema)
        if strict is not None:
            spec["strict"] = strict
    return {"type": "json_schema", "json_schema": spec}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name}
    if spec.description:
        function["description"] = spec.description
    if spec.strict:
        function["parameters"] = strict_schema(spec.schema)
        function["strict"] = True
    else:
        schema = spec.schema
        function["parameters"] = schema if type(schema) is dict else dict(schema)
    return {"type": "function", "function": function}


class OpenAIChatCodec:
    """The Chat Completions wire format, I/O-free.

    ``max_tokens_field`` names the output limit: ``"max_completion_tokens"`` (OpenAI's own, and
    the only one its reasoning models take) or ``"max_tokens"`` (what compatible servers know).
    Tool definitions, the response format and each message's wire form are built once and
    shared by every request body that sends them (a long run encodes only what is new): read
    those bodies, never mutate them.
    """

    path = "/chat/completions"

    __slots__ = ("_format_memo", "_message_memo", "_tool_memo", "max_tokens_field")

    def __init__(self, *, max_tokens_field: str = "max_completion_tokens") -> None:
        self.max_tokens_field = max_tokens_field
        self._tool_memo: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}
        self._format_memo: tuple[Mapping[str, Any], dict[str, Any]] | None = None
        # by id, with the message itself (its id cannot be reused while it is held here), its
        # wire messages and their JSON text
        self._message_memo: dict[int, tuple[Message, list[dict[str, Any]], str]] = {}

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
        wire = Encoded()
        if system:
            first = {"role": "system", "content": system}
            wire.append(first)
            wire.parts.append(dumps(first))
        self._messages(messages, wire)
        body: dict[str, Any] = {"model": model, "messages": wire}
        if tools:
            body["tools"] = [self._tool(spec) for spec in tools]
        self._options(body, options, bool(tools))
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def _tool(self, spec: ToolSpec) -> dict[str, Any]:
        memo = self._tool_memo.get(id(spec))
        if memo is not None and memo[0] is spec:
            return memo[1]
        if len(self._tool_memo) >= _CACHE_LIMIT:
            self._tool_memo.clear()
        wire = _tool(spec)
        self._tool_memo[id(spec)] = (spec, wire)
        return wire

    def _options(self, body: dict[str, Any], options: ModelOptions, has_tools: bool) -> None:
        # top_k and thinking_budget have no Chat Completions equivalent and are left out.
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body[self.max_tokens_field] = options.max_tokens
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop"] = list(options.stop)
        if options.seed is not None:
            body["seed"] = options.seed
        if options.frequency_penalty is not None:
            body["frequency_penalty"] = options.frequency_penalty
        if options.presence_penalty is not None:
            body["presence_penalty"] = options.presence_penalty
        if has_tools:  # OpenAI rejects both fields on a request without tools
            if options.tool_choice is not None:
                body["tool_choice"] = _tool_choice(options.tool_choice)
            if options.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = options.parallel_tool_calls
        if options.response_format is not None:
            body["response_format"] = self._format(options.response_format)
        if options.reasoning_effort is not None:
            body["reasoning_effort"] = options.reasoning_effort
        if options.prompt_cache_key is not None:
            body["prompt_cache_key"] = options.prompt_cache_key

    def _messages(self, messages: Sequence[Message], wire: Encoded) -> None:
        """Each message's wire messages (and their JSON text) onto ``wire``: those of a
        message sent before are reused (messages do not change), the rest made and kept."""
        memo = self._message_memo
        if len(memo) > _MESSAGE_MEMO:
            memo.clear()
        parts = wire.parts
        for message in messages:
            known = memo.get(id(message))
            if known is None or known[0] is not message:
                made: list[dict[str, Any]] = []
                _append(message, made)
                known = memo[id(message)] = (message, made, ",".join(map(dumps, made)))
            if known[1]:
                wire.extend(known[1])
                parts.append(known[2])

    def _format(self, given: Mapping[str, Any]) -> dict[str, Any]:
        memo = self._format_memo
        if memo is not None and memo[0] is given:
            return memo[1]
        wire = _response_format(given)
        self._format_memo = (given, wire)
        return wire

    def decoder(self) -> ChatStreamDecoder:
        return ChatStreamDecoder()

    def parse(self, body: Any) -> list[StreamEvent]:
        if not isinstance(body, dict):
            raise StreamInterruptedError("the provider's response is not a JSON object")
        try:
            return parse_response(body)
        except SHAPE_ERRORS as exc:
            raise malformed("response", quote(body), exc) from exc
