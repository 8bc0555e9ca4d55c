"""The JSON Schema the model sees for a tool of a built-in or custom kind: a kind handler may
offer one through a ``parameters_schema(tool_def, agent)`` or async ``parameters_schema_async``
method (a child prompty's inputs, an MCP tool's or OpenAPI operation's schema)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import ToolKindError
from ..model import PromptAgent, ToolDefinition
from ..registry import get_tool_handler

__all__ = ["parameters_schema", "parameters_schemas"]


def parameters_schema(tool_def: ToolDefinition, agent: PromptAgent) -> dict[str, Any] | None:
    """The schema the kind handler of ``tool_def`` gives without I/O beyond files (prompty,
    openapi); None when it offers none (mcp needs ``parameters_schemas``)."""
    schema_of = getattr(get_tool_handler(tool_def.kind), "parameters_schema", None)
    schema = None if schema_of is None else schema_of(tool_def, agent)
    return None if schema is None else _checked(schema, tool_def)


async def parameters_schemas(agent: PromptAgent) -> dict[str, dict[str, Any]]:
    """Each non-function tool's schema by name, asking MCP servers for theirs (through the
    run's ``tool_sessions`` when one is open). Tools with no schema to offer are left out."""
    out: dict[str, dict[str, Any]] = {}
    for tool_def in agent.tools or ():
        if tool_def.kind == "function":
            continue
        handler = get_tool_handler(tool_def.kind)
        ask = getattr(handler, "parameters_schema_async", None)
        if ask is not None:
            schema = await ask(tool_def, agent)
        else:
            schema = await asyncio.to_thread(parameters_schema, tool_def, agent)
        if schema is not None:
            out[tool_def.name] = _checked(schema, tool_def)
    return out


def _checked(schema: Any, tool_def: ToolDefinition) -> dict[str, Any]:
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ToolKindError(f"the schema for tool {tool_def.name!r} is not an object schema")
    return schema
