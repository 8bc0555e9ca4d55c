"""``McpTool``: a tool defined in-process in MCP's terms (name, description, input schema) with a
handler of one ``args`` dict, as padwan-ai's sessions take them. Without a handler the tool gives
back its arguments (padwan's default: a tool whose call is the answer, e.g. to extract data)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..tools.tool import Tool
from .content import reduce_mcp_result
from .passthrough import keep

__all__ = ["McpTool"]


def _echo_args(args: dict[str, Any]) -> dict[str, Any]:
    """The handler of an ``McpTool`` given none: the model's arguments are the result."""
    return args


@dataclass(frozen=True, slots=True)
class McpTool:
    """A local tool: ``handler(args)`` (sync or async) gets the model's arguments as one dict.

    A server's ``tools`` are ``McpTool`` definitions too, whose handler calls the server."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Callable[[dict[str, Any]], Any] | None = None

    def __post_init__(self) -> None:
        if self.handler is None:
            object.__setattr__(self, "handler", _echo_args)
        elif not callable(self.handler):
            raise TypeError(
                f"McpTool {self.name!r}: handler must be callable or None, got {self.handler!r} "
                "(None: a tool that gives back its arguments)"
            )
        if not isinstance(self.input_schema, Mapping):
            raise TypeError(f"McpTool {self.name!r}: input_schema must be a JSON Schema object")

    def to_tool_def(self) -> dict[str, Any]:
        """The definition a model is given, as padwan-ai writes it: ``name``, ``description``
        and the input schema as ``parameters``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.input_schema),
        }

    def as_tool(self) -> Tool:
        """This tool as the loop runs it: an MCP-shaped result (``{"content": [...],
        "isError": ...}``) reaches the model as a server's would (``reduce_mcp_result``), and
        the MCP client of an agent served over MCP as it is (``passthrough``)."""
        handler = self.handler or _echo_args

        async def call(**args: Any) -> Any:
            value = handler(args)
            if inspect.isawaitable(value):
                value = await value
            keep(value)  # a served call gives it to its MCP client as it is
            return reduce_mcp_result(value)

        return Tool(self.name, call, self.description, schema=self.input_schema)
