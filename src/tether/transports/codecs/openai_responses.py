"""The OpenAI Responses wire format (``POST /responses``): the request encoder and the codec.

Messages go out as input items; reasoning items (``rs_`` ids) are replayed byte-exact before the
function calls they preceded, so a reasoning model keeps its chain of thought across tool calls.
The output items are decoded in ``openai_responses_decode``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...events import StreamEvent
from ...messages import (
    AudioBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ...types import ToolSpec
from ..options import ModelOptions
from ..schema import strict_schema
from .openai_responses_decode import PARAGRAPH, PROVIDER, ResponsesStreamDecoder, parse_response

__all__ = ["PROVIDER", "OpenAIResponsesCodec", "ResponsesStreamDecoder"]

_BUILTIN_CHOICES = frozenset(("auto", "none", "required"))


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
            body["instructions"] = PARAGRAPH.join(instructions)
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
        return parse_response(body)


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
    if role == "assistant":  # the model's own words go back as one typed output message
        text = "".join(p.text for p in parts if type(p) is TextBlock)
        if text:  # typed: servers other than OpenAI's (llama.cpp) refuse an untyped one
            content = [{"type": "output_text", "text": text}]
            items.append({"type": "message", "role": "assistant", "content": content})
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
