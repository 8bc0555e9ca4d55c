"""``Tool``: a named callable the model may use (``ToolSpec`` is the frozen part a model sees)."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..types import ToolSpec
from .decisions import GuardDecision
from .lint import warn_unclear

__all__ = ["CheckGuard", "Guard", "Tool", "ToolCall", "ToolSpec", "Validator", "tool_name"]

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")

Validator = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Checks (and coerces) arguments; returns the keyword arguments or raises ``ToolArgumentError``."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as a guard sees it."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    tool: Tool
    iteration: int


@runtime_checkable
class CheckGuard(Protocol):
    """An axio-style guard: ``check(tool, **arguments)`` returns the arguments to use (possibly
    changed) and raises to deny."""

    def check(self, tool: Tool, **arguments: Any) -> Any:
        """The arguments to go on with (or an awaitable of them); raise to deny the call."""
        ...


Guard: TypeAlias = Callable[[ToolCall], GuardDecision | Awaitable[GuardDecision]] | CheckGuard
"""A tether guard (a callable taking a ``ToolCall``) or an axio-style ``CheckGuard``."""


def _without_bindings(schema: Mapping[str, Any], bound: Sequence[str]) -> dict[str, Any]:
    """The schema with bound parameters removed, so the model never sees or fills them."""
    out = dict(schema)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        out["properties"] = {k: v for k, v in props.items() if k not in bound}
    req = schema.get("required")
    if isinstance(req, list | tuple):
        out["required"] = [r for r in req if r not in bound]
    return out


def _open_schema(handler: Callable[..., Any]) -> dict[str, Any] | None:
    """For a handler taking ``**kwargs``: its named parameters, and any others allowed."""
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return None
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return {
        "type": "object",
        "properties": {p.name: {} for p in named},
        "required": [p.name for p in named if p.default is p.empty],
        "additionalProperties": True,
    }


@dataclass(slots=True, eq=False)
class Tool:
    """A tool: ``handler`` is called with the model's (validated, guarded) keyword arguments.

    - ``schema``: the JSON Schema the model sees; when omitted it is read from the handler's
      signature (with a validator for it, as ``@tool`` does). Parameters named in ``bindings``
      are removed from it and filled from ``bindings`` over whatever the model sent.
    - ``guards``: run in order before the handler; each may allow, deny or rewrite the arguments.
    - ``concurrency``: at most this many calls of this tool run at once.
    - ``validator``: checks arguments before the handler runs (``@tool`` builds one with pydantic).
    - ``timeout``: seconds before a call is abandoned with an error result (a synchronous
      handler with a timeout runs in a worker thread, so the timeout can be kept).
    - ``thread``: run a synchronous handler in a worker thread instead of on the event loop.
    - ``strict``: ask the provider to hold the model's arguments to the schema exactly.
    - ``reports_progress``: the handler calls ``report_progress``; the run then streams each
      report as a ``ToolProgress`` event while the call goes on.
    - ``idempotent``: running a call twice has the effect of running it once (it reads, or it
      passes its idempotency key on); a durable run retries such a call after a crash.
    - ``deferred``: offered only once a tool search found it (``ToolSearch``; a run whose tools
      include a deferred one offers the search tool itself), so a large tool set does not fill
      the context before the first word.

    A tool with no description, or a parameter the schema gives no type (what the model would
    read as "any value"), is a ``ToolSchemaWarning`` when the tool is made.
    """

    name: str
    handler: Callable[..., Any]
    description: str = ""
    schema: Mapping[str, Any] | None = None
    guards: Sequence[Guard] = ()
    concurrency: int | None = None
    bindings: Mapping[str, Any] = field(default_factory=dict)
    validator: Validator | None = None
    timeout: float | None = None
    thread: bool = False
    strict: bool | None = None
    reports_progress: bool = False
    idempotent: bool = False
    deferred: bool = False
    spec: ToolSpec = field(init=False, repr=False)
    is_async: bool = field(init=False, repr=False)
    _semaphore: asyncio.Semaphore | None = field(init=False, repr=False, default=None)
    _semaphore_loop: object = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(
                f"tool name {self.name!r} must be 1-128 characters of letters, digits, _ . -"
            )
        if not callable(self.handler):
            raise TypeError(f"tool {self.name!r}: handler must be callable")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"tool {self.name!r}: concurrency must be >= 1")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"tool {self.name!r}: timeout must be > 0")
        if self.schema is None:
            self._read_signature()
        assert self.schema is not None
        if self.schema.get("type", "object") != "object":
            raise ValueError(f"tool {self.name!r}: schema must describe an object")
        if self.bindings:
            self.schema = _without_bindings(self.schema, tuple(self.bindings))
        self.guards = tuple(self.guards)
        warn_unclear(self.name, self.description, self.schema, self.handler)
        self.spec = ToolSpec(self.name, self.description, self.schema, self.strict)
        self.is_async = inspect.iscoroutinefunction(self.handler) or inspect.iscoroutinefunction(
            getattr(self.handler, "__call__", None)  # noqa: B004 - async callable objects
        )

    def _read_signature(self) -> None:
        from .signature import from_signature  # noqa: PLC0415 - pydantic, on first use only

        try:
            summary, self.schema, validator = from_signature(self.handler, self.name)
        except TypeError as exc:
            self.schema = _open_schema(self.handler)
            if self.schema is None:
                raise TypeError(f"{exc}; pass Tool(..., schema=...) for such a handler") from None
            return
        if self.validator is None:
            self.validator = validator
        if not self.description:
            self.description = summary

    def bind(self, **values: Any) -> Tool:
        """A copy of this tool with more bound parameters (hidden from the model, filled here)."""
        return replace(self, bindings={**self.bindings, **values})

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and run the handler, honouring concurrency, thread and timeout."""
        kwargs = self.validator(arguments) if self.validator is not None else arguments
        if self.concurrency is None:
            return await self._run(kwargs)
        async with self._get_semaphore():
            return await self._run(kwargs)

    async def _run(self, kwargs: Mapping[str, Any]) -> Any:
        if self.timeout is None:
            return await self._call(kwargs)
        async with asyncio.timeout(self.timeout):
            return await self._call(kwargs)

    async def _call(self, kwargs: Mapping[str, Any]) -> Any:
        if self.is_async:
            return await self.handler(**kwargs)
        if self.thread or self.timeout is not None:
            return await asyncio.to_thread(self.handler, **kwargs)
        result = self.handler(**kwargs)
        if inspect.isawaitable(result):
            return await result
        return result

    def _get_semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore_loop is not loop:
            assert self.concurrency is not None
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._semaphore_loop = loop
        return self._semaphore


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def tool_name(name: str) -> str:
    """``name`` as a tool name every provider takes: letters, digits, ``_`` and ``-``, at most
    64 of them (``agent`` when nothing is left)."""
    return _UNSAFE.sub("_", name).strip("_")[:64] or "agent"
