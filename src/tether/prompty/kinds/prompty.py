"""``kind: prompty`` tools (§2.9, §11.2): another ``.prompty`` file, beside or below the parent's,
run with the call's arguments as its inputs: once (``mode: single``) or as a full agent turn
with its own tools (``mode: agentic``). The model sees the child's declared inputs."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..env import EnvAccess
from ..errors import ToolKindError
from ..loading.loader import load_located
from ..model import PromptAgent, PromptyTool, ToolDefinition
from ..paths import Located
from ..pipeline import RequestedToolCall, invoke_async, turn_async
from ..schema import object_schema
from .common import contained_file

__all__ = ["MAX_NESTING", "PromptyKind"]

MAX_NESTING = 8
"""How deep prompty tools may call prompty tools (a file that runs itself stops here)."""
_RICH_KINDS = frozenset(("thread", "image", "file", "audio"))
_MODES = ("single", "agentic")
_depth: ContextVar[int] = ContextVar("tether_prompty_tool_depth", default=0)


@dataclass(frozen=True, slots=True)
class PromptyKind:
    """The handler of ``kind: prompty`` tools; child files may also lie in ``allowed_roots``.
    A child reads the environment as its parent was loaded to (``load(..., env=)``), narrowed
    to ``env`` when given: never a variable its parent could not read.
    """

    allowed_roots: tuple[Path, ...] = ()
    env: EnvAccess | None = None

    async def __call__(
        self,
        tool_def: ToolDefinition,
        args: Mapping[str, Any],
        agent: PromptAgent,
        inputs: Mapping[str, Any],
    ) -> Any:
        """Run the child with ``args`` as its inputs; its answer is the tool's result."""
        definition = _checked(tool_def)
        depth = _depth.get()
        if depth >= MAX_NESTING:
            raise ToolKindError(
                f"prompty tool {definition.name!r}: prompty tools nest deeper than {MAX_NESTING}"
            )
        found = self._child_file(definition, agent)
        child = await asyncio.to_thread(self._load, found, agent)
        token = _depth.set(depth + 1)
        try:
            result = await _run(child, definition.mode, dict(args))
        finally:
            _depth.reset(token)
        return _result(definition, result)

    def parameters_schema(self, tool_def: ToolDefinition, agent: PromptAgent) -> dict[str, Any]:
        """The child's declared inputs as the tool's JSON Schema (rich kinds left out)."""
        child = self._load(self._child_file(_checked(tool_def), agent), agent)
        return object_schema([p for p in child.inputs or () if p.kind not in _RICH_KINDS])

    def _child_file(self, definition: PromptyTool, agent: PromptAgent) -> Located:
        return contained_file(
            definition.path, agent, self.allowed_roots, f"tools[{definition.name}].path"
        )

    def _load(self, found: Located, parent: PromptAgent) -> PromptAgent:
        """The child, opened name by name beneath its folder (its own files likewise)."""
        given = parent.env_access or EnvAccess.of(None)
        access = given if self.env is None else self.env.within(given)
        return load_located(found, allowed_roots=self.allowed_roots, env=access)


def _checked(tool_def: ToolDefinition) -> PromptyTool:
    if not isinstance(tool_def, PromptyTool):
        raise ToolKindError(f"tool {tool_def.name!r} is not a prompty tool")
    if tool_def.mode not in _MODES:
        raise ToolKindError(
            f"prompty tool {tool_def.name!r}: mode must be single or agentic, not {tool_def.mode!r}"
        )
    return tool_def


async def _run(child: PromptAgent, mode: str, args: dict[str, Any]) -> Any:
    if mode == "single":
        return await invoke_async(child, args)
    return await turn_async(child, args)


def _result(definition: PromptyTool, result: Any) -> Any:
    """The child's answer; in single mode a request for tools cannot be answered."""
    if (
        isinstance(result, list)
        and result
        and all(isinstance(c, RequestedToolCall) for c in result)
    ):
        names = ", ".join(str(c.get("name")) for c in result)
        raise ToolKindError(
            f"prompty tool {definition.name!r} asked for tools ({names}) in single mode; "
            "use mode: agentic to let it run them"
        )
    return result
