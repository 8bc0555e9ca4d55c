"""A server's ``tools/list`` answer as tools the loop can offer. A server is untrusted: a tool it
lists twice is offered once (the first), a tool with an input schema that is no JSON Schema, or
one too large, is left out, and each such tool is named in the listing's problems. A tool
callable only as a task (2025-11-25 ``execution.taskSupport: "required"``) is offered, and named
in ``tasked`` (its calls are made as tasks, ``tasks.py``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..tools.tool import Tool
from .schemacheck import schema_problem
from .servertool import ServerTool

__all__ = ["Listing", "read_listing"]

MAX_DESCRIPTION = 4_000  # characters of a tool's description kept
MAX_SCHEMA = 64_000  # characters of a tool's JSON Schema; a larger tool is left out

Caller = Callable[[str], Callable[..., Awaitable[Any]]]
"""Makes the handler that calls the server's tool of the given (server's own) name."""


@dataclass(frozen=True, slots=True)
class Listing:
    """The tools to offer, and what was wrong with the ones left out (empty when nothing)."""

    tools: list[Tool]
    problems: tuple[str, ...] = ()
    tasked: frozenset[str] = frozenset()


def read_listing(definitions: Sequence[Any], caller: Caller) -> Listing:
    """The tools of ``definitions`` (the SDK's ``Tool`` models) that tether can offer."""
    tools: list[Tool] = []
    problems: list[str] = []
    offered: set[str] = set()
    tasked: set[str] = set()
    for definition in definitions:
        name = definition.name
        try:
            tool = _tool(definition, caller)
        except (TypeError, ValueError) as exc:
            problems.append(f"tool {name!r} left out: {exc}")
            continue
        if tool.name in offered:
            problems.append(f"tool {name!r} left out: listed twice (the first is kept)")
            continue
        offered.add(tool.name)
        tools.append(tool)
        if getattr(getattr(definition, "execution", None), "task_support", None) == "required":
            tasked.add(name)
    return Listing(tools, tuple(problems), frozenset(tasked))


def _tool(definition: Any, caller: Caller) -> Tool:
    schema = definition.input_schema or {}
    if len(json.dumps(schema, default=str)) > MAX_SCHEMA:
        raise ValueError("its input schema is too large")
    problem = schema_problem(schema, "its input schema")
    if problem is not None:
        raise ValueError(problem)
    return ServerTool(
        definition.name,
        caller(definition.name),
        (definition.description or "")[:MAX_DESCRIPTION],
        schema=schema,
        reports_progress=True,
    )
