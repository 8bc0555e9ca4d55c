"""A Prompty agent's declared tools as tether ``Tool``s, with §11.2's dispatch order per call:
the caller's handlers, then the name registry, then the handler of the tool's kind. A name
handler is called as the spec writes it, ``handler(args)`` with one dict, when its one parameter
is not a declared one, and with keyword arguments otherwise (``takes_dict``).

Also ``@tool`` (a typed function as a handler with its ``FunctionTool`` declaration) and
``bind_tools`` (check handlers against an agent's declarations).
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar, overload

from ...tools.tool import Tool
from ..env import hidden
from ..model import FunctionTool, PromptAgent, Property, ToolDefinition
from ..registry import get_tool, get_tool_handler, register_tool
from ..schema import object_schema

__all__ = ["bind_tools", "engine_tools", "takes_dict", "tool"]

log = logging.getLogger("tether.prompty")
F = TypeVar("F", bound=Callable[..., Any])

_KINDS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "float",
    bool: "boolean",
    list: "array",
    dict: "object",
}
_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def _kind(annotation: Any) -> str:
    origin = typing.get_origin(annotation) or annotation
    return _KINDS.get(origin, "string")


def _declaration(fn: Callable[..., Any], name: str, description: str | None) -> FunctionTool:
    hints = typing.get_type_hints(fn)
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        has_default = p.default is not inspect.Parameter.empty
        params.append(
            Property(
                name=p.name,
                kind=_kind(hints.get(p.name, str)),
                required=not has_default,
                default=p.default if has_default else None,
            )
        )
    doc = description if description is not None else inspect.getdoc(fn)
    summary = doc.strip().split("\n\n")[0] if doc else None
    return FunctionTool(name=name, description=summary, parameters=tuple(params))


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, register: bool = True
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    register: bool = True,
) -> F | Callable[[F], F]:
    """Make a typed function a tool handler (§11.2): its declaration goes to ``fn.__tool__``
    and, unless ``register=False``, the handler to the name registry. The ``.prompty`` file
    still declares what the model sees."""

    def wrap(f: F) -> F:
        declared = _declaration(f, name or f.__name__, description)
        f.__tool__ = declared  # type: ignore[attr-defined]
        if register:
            register_tool(declared.name, f)
        return f

    return wrap if fn is None else wrap(fn)


def bind_tools(agent: PromptAgent, functions: Iterable[Callable[..., Any]]) -> dict[str, Any]:
    """The handlers for ``turn(tools=...)``, checked against the agent's function tools: a
    handler with no declaration is an error; a declaration with no handler is logged."""
    handlers: dict[str, Callable[..., Any]] = {}
    for fn in functions:
        declared = getattr(fn, "__tool__", None)
        if not isinstance(declared, FunctionTool):
            raise TypeError(f"{fn!r} is not a @tool function")
        if declared.name in handlers:
            raise ValueError(f"Duplicate tool handler: {declared.name}")
        handlers[declared.name] = fn
    names = {t.name for t in agent.tools or () if t.kind == "function"}
    for name in handlers:
        if name not in names:
            listed = ", ".join(sorted(map(hidden, names))) or "(none)"
            raise ValueError(
                f"Tool handler '{name}' has no matching declaration in agent.tools. "
                f"Declared function tools: {listed}"
            )
    for name in sorted(names - handlers.keys()):
        log.warning("Tool '%s' is declared in agent.tools but no handler was given", hidden(name))
    return handlers


async def _settle(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def takes_dict(handler: Callable[..., Any], declared: Collection[str]) -> bool:
    """Whether ``handler`` is written as the spec writes one, ``handler(args)`` with the arguments
    as one dict: its first parameter is positional and not one of the tool's ``declared``
    parameters, and it needs no other. Any other handler (or one whose signature cannot be read)
    is called with keywords, tether's style."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return False
    if not params or any(p.kind is p.VAR_KEYWORD for p in params):
        return False
    first, rest = params[0], params[1:]
    return (
        first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
        and first.name not in declared
        and all(p.default is not p.empty or p.kind is p.VAR_POSITIONAL for p in rest)
    )


def _dispatcher(
    definition: ToolDefinition,
    handlers: Mapping[str, Callable[..., Any]],
    agent: PromptAgent,
    inputs: Mapping[str, Any],
    declared: frozenset[str],
) -> Callable[..., Any]:
    """One declared tool's handler: the dispatch order, resolved at each call; ``declared`` the
    tool's parameter names, which decide how a name handler is called (``takes_dict``)."""

    async def call(**arguments: Any) -> Any:
        handler = handlers.get(definition.name) or get_tool(definition.name)
        if handler is not None:
            if takes_dict(handler, declared):
                return await _settle(handler(dict(arguments)))
            return await _settle(handler(**arguments))
        by_kind = get_tool_handler(definition.kind)
        if by_kind is None and definition.kind not in ("function", "prompty", "mcp", "openapi"):
            by_kind = get_tool_handler("*")
        if by_kind is None:
            raise ValueError(
                f"No handler registered for tool: {hidden(definition.name)} "
                f"(kind: {hidden(definition.kind)})"
            )
        return await _settle(by_kind(definition, arguments, agent, inputs))

    return call


def _schema(
    definition: ToolDefinition, known: Mapping[str, Mapping[str, Any]]
) -> Mapping[str, Any]:
    """What the model sees of a tool's arguments: declared parameters, else what its kind
    knows (``known``: a child prompty's inputs, an MCP tool's or OpenAPI operation's schema)."""
    parameters = getattr(definition, "parameters", None)
    if parameters is not None:
        return object_schema(parameters)
    return known.get(definition.name, _NO_PARAMETERS)


def engine_tools(
    agent: PromptAgent,
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    inputs: Mapping[str, Any] | None = None,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Tool]:
    """The agent's declared tools for the engine; bindings (§9.5) filled from ``inputs``;
    ``schemas`` the argument schemas already read for tools without declared parameters."""
    given = inputs or {}
    out = []
    for definition in agent.tools or ():
        schema = _schema(definition, schemas or {})
        bound = {
            param: given[b.input]
            for param, b in (definition.bindings or {}).items()
            if b.input in given
        }
        declared = frozenset(schema.get("properties") or ()) | frozenset(definition.bindings or ())
        out.append(
            Tool(
                definition.name,
                _dispatcher(definition, handlers or {}, agent, given, declared),
                definition.description or "",
                schema,
                bindings=bound,
                strict=getattr(definition, "strict", None),
            )
        )
    return out
