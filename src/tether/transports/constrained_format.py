"""The reply format of constrained tool calls: one JSON object, an answer or a list of calls.

A small model offered tools the usual way writes one call where several are needed and calls
some tool when none fits. Here the reply is ``{"calls": [{"name": ..., "arguments": {...}},
...]}`` or ``{"answer": "..."}``: answering without a tool is one choice among two, equally easy,
and several calls are the items of a list. The server holds the reply to a JSON schema (its
grammar), so every call names an offered tool and its arguments fit that tool's schema. The
history is shown to the model in the same form it writes (no I/O here).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..types import ToolSpec

__all__ = ["REPLY_RULES", "RESULTS_HINT", "reply_format", "shown_history", "told_system"]

REPLY_RULES = (
    "# How to reply\n\n"
    "Reply with one JSON object, in one of two forms:\n"
    '- {"calls": [{"name": "function_name", "arguments": {...}}, ...]}: to call functions,'
    " when a function listed above can give or do what is asked (never make up what it would"
    " give). Put one item in the list for each call you need: when the request asks the same"
    " thing for several values (two cities, three numbers), make one call for each value, all"
    " in this one list.\n"
    '- {"answer": "your reply"}: when none of the functions can do what is asked (then say so'
    " in your reply), when the request needs no function (a greeting, a joke, general"
    " knowledge), or when you have what you need from the results of your calls.\n"
    "Call only the functions listed above, with the arguments their parameters describe;"
    " never make a value up when the user did not give it and it has no default."
)
"""The instructions that follow the tools in the system prompt (fixed; not tuned on any
benchmark's items). The calls come first, here and in the schema: told the answer first, the
1.5B model answered "How many apples do we have?" with a number it made up, and in a loop an
unneeded call costs a step while a made-up answer is simply wrong."""

RESULTS_HINT = (
    "Answer the user with these results. Call another function only if it is really needed."
)
"""What follows the results of the model's calls."""

_REF = re.compile(r"^#/(\$defs|definitions)/(.+)$")


def told_system(system: str, tools: Sequence[ToolSpec]) -> str:
    """The system prompt with the tools described and the reply's two forms explained."""
    listed = "\n".join(json.dumps(_described(spec), ensure_ascii=False) for spec in tools)
    told = f"# Functions\n\nYou can call these functions:\n{listed}\n\n{REPLY_RULES}"
    return f"{system}\n\n{told}" if system else told


def _described(spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out["parameters"] = dict(spec.schema)
    return out


def reply_format(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """The response format (a ``ModelOptions.response_format``) a reply is held to: an answer,
    or one or more calls, each naming one of ``tools`` with arguments valid for its schema.
    The tools' ``$defs`` are moved to the top, each under its tool's own prefix."""
    defs: dict[str, Any] = {}
    items = [_call_schema(i, spec, defs) for i, spec in enumerate(tools)]
    call = items[0] if len(items) == 1 else {"anyOf": items}
    answer = _object({"answer": {"type": "string"}})
    calls = _object({"calls": {"type": "array", "items": call, "minItems": 1}})
    schema: dict[str, Any] = {"anyOf": [calls, answer]}
    if defs:
        schema["$defs"] = defs
    return {"name": "reply", "schema": schema}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _call_schema(index: int, spec: ToolSpec, defs: dict[str, Any]) -> dict[str, Any]:
    schema = dict(spec.schema) or {"type": "object"}
    prefix = f"t{index}_"
    for key in ("$defs", "definitions"):
        for name, sub in (schema.pop(key, None) or {}).items():
            defs[prefix + name] = _moved(sub, prefix)
    arguments = _moved(schema, prefix)
    if not arguments.get("type") and "properties" in arguments:
        arguments["type"] = "object"
    return _object({"name": {"const": spec.name}, "arguments": arguments})


def _moved(node: Any, prefix: str) -> Any:
    """``node`` with every local ``$ref`` pointing at the top's ``$defs`` under ``prefix``."""
    if isinstance(node, Mapping):
        out = {k: _moved(v, prefix) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and (found := _REF.match(ref)):
            out["$ref"] = f"#/$defs/{prefix}{found.group(2)}"
        return out
    if isinstance(node, list):
        return [_moved(v, prefix) for v in node]
    return node


def shown_history(messages: Sequence[Message]) -> list[Message]:
    """The history as the model is shown it: its own replies in the JSON form it writes, the
    results of its calls as a user message after them. The stored history is unchanged."""
    calls: dict[str, ToolUseBlock] = {}
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant":
            shown = _assistant(message, calls)
            if shown is not None:
                out.append(shown)
        else:
            out.append(_user(message, calls))
    return out


def _assistant(message: Message, calls: dict[str, ToolUseBlock]) -> Message | None:
    uses = message.tool_uses
    for use in uses:
        calls[use.id] = use
    if uses:
        listed = [{"name": u.name, "arguments": _arguments(u)} for u in uses]
        return Message("assistant", _json({"calls": listed}), message.name)
    text = message.text
    if not text and not any(type(b) is TextBlock for b in message.content):
        return None  # reasoning only: nothing the model wrote to show it
    return Message("assistant", _json({"answer": text}), message.name)


def _arguments(use: ToolUseBlock) -> Any:
    if use.raw_arguments is None:
        return dict(use.input)
    return use.raw_arguments  # not JSON: shown as the text it was


def _user(message: Message, calls: dict[str, ToolUseBlock]) -> Message:
    results = message.tool_results
    if not results:
        return message
    lines: list[str] = ["Results of your calls:"]
    extra: list[ContentBlock] = []
    for result in results:
        lines.append(_result_line(result, calls.get(result.tool_use_id), extra))
    rest = [b for b in message.content if type(b) is not ToolResultBlock]
    lines.append(RESULTS_HINT)
    return Message(message.role, [TextBlock("\n".join(lines)), *extra, *rest], message.name)


def _result_line(
    result: ToolResultBlock, call: ToolUseBlock | None, extra: list[ContentBlock]
) -> str:
    content = result.content
    if isinstance(content, str):
        text = content
    else:
        text = "".join(b.text for b in content if type(b) is TextBlock)
        extra.extend(b for b in content if type(b) is not TextBlock)
    line: dict[str, Any] = {}
    if call is not None:
        line["name"] = call.name
        line["arguments"] = _arguments(call)
    line["error" if result.is_error else "result"] = text
    return _json(line)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
