"""Reads Prompty conformance vectors and turns their inputs into tether's own types.

Prompty describes messages as ``{"role", "content": [{"kind", "value", ...}]}``, tool parameters
as property lists and options in camelCase; tether's transports take ``Message``s, ``ToolSpec``s
(via ``Tool``, so bindings are stripped by tether's code) and ``ModelOptions`` keywords, and its
embedding and image requests provider fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether import (
    AudioBlock,
    ImageBlock,
    Message,
    TextBlock,
    TextDelta,
    Tool,
    ToolInputDelta,
    ToolSpec,
    ToolUseStart,
)
from tether.messages import ContentBlock
from tether.prompty.execution.wire import spec_wire

VECTORS = Path(__file__).parent / "prompty" / "vectors"

_KIND_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
}
_OPTION_NAMES = {
    "temperature": "temperature",
    "maxOutputTokens": "max_tokens",
    "topP": "top_p",
    "topK": "top_k",
    "stopSequences": "stop",
    "seed": "seed",
    "frequencyPenalty": "frequency_penalty",
    "presencePenalty": "presence_penalty",
}


def load(contract_operation: str, **where: str) -> list[dict[str, Any]]:
    """The ``vector`` objects of one file, optionally only those whose fields match ``where``."""
    entries = json.loads((VECTORS / f"{contract_operation}.json").read_text())
    vectors = [e["vector"] for e in entries]
    return [v for v in vectors if all(v["input"].get(k) == x for k, x in where.items())]


def property_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """One Prompty property as JSON Schema."""
    kind = prop.get("kind", "string")
    schema: dict[str, Any] = {"type": _KIND_TYPES.get(kind, kind)}
    if prop.get("description"):
        schema["description"] = prop["description"]
    if "enumValues" in prop:
        schema["enum"] = prop["enumValues"]
    if kind == "array" and "items" in prop:
        schema["items"] = property_schema(prop["items"])
    if kind == "object" and "properties" in prop:
        schema.update(object_schema(prop["properties"]))
    return schema


def object_schema(props: list[dict[str, Any]]) -> dict[str, Any]:
    """A property list as an object schema (``required`` only when some property is)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p["name"]: property_schema(p) for p in props},
    }
    required = [p["name"] for p in props if p.get("required")]
    if required:
        schema["required"] = required
    return schema


def _block(part: dict[str, Any]) -> ContentBlock:
    kind, value = part["kind"], part["value"]
    if kind == "text":
        return TextBlock(value)
    if kind == "image":
        if value.startswith(("http://", "https://", "data:")):
            return ImageBlock(part.get("mediaType", "image/*"), url=value)
        return ImageBlock(part.get("mediaType", "image/png"), data=value)
    if kind == "audio":
        return AudioBlock(part.get("mediaType", "audio/wav"), value)
    raise ValueError(f"no tether block for Prompty part kind {kind!r}")


def to_messages(messages: list[dict[str, Any]]) -> list[Message]:
    """Prompty messages as tether messages (system messages stay in the list)."""
    return [Message(m["role"], [_block(p) for p in m["content"]]) for m in messages]


def to_tools(tools: list[dict[str, Any]]) -> list[ToolSpec]:
    """Prompty function tools as the specs tether's ``Tool`` gives the transport."""
    specs = []
    for t in tools:
        bound = {name: f"<{b['input']}>" for name, b in (t.get("bindings") or {}).items()}
        tool = Tool(
            t["name"],
            lambda **_: None,
            t.get("description", ""),
            object_schema(t.get("parameters", [])),
            bindings=bound,
            strict=t.get("strict"),
        )
        specs.append(tool.spec)
    return specs


def to_options(options: dict[str, Any], outputs: list[dict[str, Any]]) -> dict[str, Any]:
    """Prompty options (and ``outputs``) as ``ModelOptions`` keyword arguments."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "additionalProperties":
            out["extra_body"] = value
        elif key in _OPTION_NAMES:
            out[_OPTION_NAMES[key]] = value
        else:
            raise ValueError(f"no tether option for Prompty option {key!r}")
    if outputs:
        out["response_format"] = {
            "name": "structured_output",
            "schema": object_schema(outputs),
            "strict": True,
        }
    return out


def media_options(options: dict[str, Any]) -> dict[str, Any]:
    """Prompty options for an embedding or image request: its ``additionalProperties`` pass
    through as provider fields (size, quality, dimensions, …); sampling options have no place."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key != "additionalProperties":
            raise ValueError(f"no embedding or image field for Prompty option {key!r}")
        out.update(value)
    return out


def request_body(transport_cls: Any, vector: dict[str, Any]) -> dict[str, Any]:
    """The body ``transport_cls`` builds (not streaming) for a ``WireConformance`` vector."""
    given = vector["input"]
    transport = transport_cls(
        given["model_id"],
        api_key="k",
        stream=False,
        **spec_wire(transport_cls),  # what the door gives it
        **to_options(given.get("options") or {}, given.get("outputs") or []),
    )
    body: dict[str, Any] = transport.build_request(
        to_messages(given["messages"]), to_tools(given.get("tools") or []), ""
    )
    return body


def process_result(events: list[Any], has_outputs: bool) -> Any:
    """Prompty's processed result: the tool calls if any, else the text (JSON when structured)."""
    names = {e.tool_use_id: e.name for e in events if isinstance(e, ToolUseStart)}
    if names:
        args = dict.fromkeys(names, "")
        for e in events:
            if isinstance(e, ToolInputDelta):
                args[e.tool_use_id] += e.partial_json
        return [{"id": i, "name": n, "arguments": args[i]} for i, n in names.items()]
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    if has_outputs and text:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def assert_subset(expected: Any, actual: Any, path: str = "$") -> None:
    """Prompty's subset projection: only keys present in ``expected`` are compared."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key} missing from {actual!r}"
            assert_subset(value, actual[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: expected a list, got {actual!r}"
        assert len(actual) == len(expected), f"{path}: {len(actual)} items, expected {expected!r}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_subset(e, a, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
