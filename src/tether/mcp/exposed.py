"""tether's tools as an MCP server offers them: a ``Tool`` as the SDK's tool definition (its JSON
schema and the hints tether has for it), a ``ToolResultBlock`` as a ``CallToolResult``, and which
calls wait for a person under an agent's ``approval``. The SDK is imported on first use."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..messages import ImageBlock, TextBlock, ToolResultBlock
from ..tools.tool import Tool
from .outputs import output_schema

__all__ = ["ASK", "ask_definition", "call_result", "definition", "error_result", "needs_approval"]

ASK = "ask"  # the agent itself, as one tool
ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "what to ask the agent: the user's message"}
    },
    "required": ["message"],
    "additionalProperties": False,
}


def may_need_approval(approval: object, name: str) -> bool:
    """Whether calls of ``name`` may wait for a person: named in ``approval``, or any tool when
    ``approval`` is a predicate (it decides per call)."""
    if approval is None:
        return False
    if callable(approval):
        return True
    return isinstance(approval, Collection) and name in approval


def needs_approval(approval: object, name: str, arguments: Mapping[str, Any]) -> bool:
    """Whether this call waits for a person under ``approval`` (names, or a predicate)."""
    if callable(approval):
        decide: Callable[[str, Mapping[str, Any]], object] = approval
        return bool(decide(name, arguments))
    return may_need_approval(approval, name)


def definition(tool: Tool, approval: object) -> Any:
    """``tool`` as an MCP tool definition: its schema, the schema of what it returns when that is
    an object, and as hints, destructive when a call may wait for approval and idempotent when
    the tool says so."""
    import mcp_types as types  # noqa: PLC0415 - the SDK, on first use

    destructive = may_need_approval(approval, tool.name)
    hints = None
    if destructive or tool.idempotent:
        hints = types.ToolAnnotations(
            destructive_hint=True if destructive else None,
            idempotent_hint=True if tool.idempotent else None,
        )
    return types.Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=dict(tool.schema or {"type": "object"}),
        output_schema=output_schema(tool),
        annotations=hints,
    )


def ask_definition(agent_name: str, system: str) -> Any:
    """The agent itself as the tool ``ask``: one string, the user's message; a whole turn."""
    import mcp_types as types  # noqa: PLC0415

    first = system.strip().splitlines()[0].strip() if system.strip() else ""
    about = f" ({first})" if first else ""
    return types.Tool(
        name=ASK,
        description=f"Ask the agent {agent_name!r}{about}: it runs a whole turn, using its own "
        "tools as it sees fit, and returns its answer.",
        input_schema=ASK_SCHEMA,
    )


def call_result(result: ToolResultBlock) -> Any:
    """A tether tool result as the SDK's ``CallToolResult`` (text and images kept)."""
    import mcp_types as types  # noqa: PLC0415

    if isinstance(result.content, str):
        content: list[Any] = [types.TextContent(text=result.content)]
    else:
        content = [_item(block) for block in result.content]
    return types.CallToolResult(content=content, is_error=result.is_error)


def error_result(message: str) -> Any:
    """A call that failed, as the MCP spec has tools report failures: ``isError`` text."""
    import mcp_types as types  # noqa: PLC0415

    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _item(block: TextBlock | ImageBlock) -> Any:
    import mcp_types as types  # noqa: PLC0415

    if isinstance(block, TextBlock):
        return types.TextContent(text=block.text)
    if block.data is not None:
        return types.ImageContent(data=block.data, mime_type=block.media_type)
    return types.TextContent(text=f"[image {block.media_type}: {block.url}]")
