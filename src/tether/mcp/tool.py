"""``McpTool``: a tool defined in-process in MCP's terms (name, description, input schema) with a
handler of one ``args`` dict, as padwan-ai's sessions take them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..tools.tool import Tool

__all__ = ["McpTool"]


@dataclass(frozen=True, slots=True)
class McpTool:
    """A local tool: ``handler(args)`` (sync or async) gets the model's arguments as one dict."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Callable[[dict[str, Any]], Any]

    def __post_init__(self) -> None:
        if not callable(self.handler):
            raise TypeError(
                f"McpTool {self.name!r}: handler must be callable, got {self.handler!r}"
            )
        if not isinstance(self.input_schema, Mapping):
            raise TypeError(f"McpTool {self.name!r}: input_schema must be a JSON Schema object")

    def as_tool(self) -> Tool:
        """This tool as the loop runs it."""
        handler = self.handler

        async def call(**args: Any) -> Any:
            value = handler(args)
            if inspect.isawaitable(value):
                value = await value
            return value

        return Tool(self.name, call, self.description, schema=self.input_schema)
