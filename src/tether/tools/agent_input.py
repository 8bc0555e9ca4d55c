"""The one argument of a tool that asks another agent (a sub-agent, a remote A2A agent):
``input``, the whole message it is sent, as it sees nothing else of the caller's chat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ToolArgumentError

__all__ = ["input_schema", "read_input"]


def input_schema(about: str) -> dict[str, Any]:
    """The tool's JSON Schema: one string, ``input``, described by ``about``."""
    return {
        "type": "object",
        "properties": {"input": {"type": "string", "description": about}},
        "required": ["input"],
        "additionalProperties": False,
    }


def read_input(arguments: Mapping[str, Any], *, blank: bool = True) -> Mapping[str, Any]:
    """The one argument, ``input``, a string (anything else the model sent is left out); an
    empty one too unless ``blank`` is False."""
    value = arguments.get("input")
    if not isinstance(value, str):
        raise ToolArgumentError("'input' must be a string: the message for the agent")
    if not blank and not value.strip():
        raise ToolArgumentError("'input' must be a non-empty string: the message for the agent")
    return {"input": value}
