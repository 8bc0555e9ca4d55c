"""``Tool``: a named callable the model may use (``ToolSpec`` is the frozen part a model sees)."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..types import ToolSpec

if TYPE_CHECKING:
    from .guards import Guard

__all__ = ["Tool", "ToolSpec", "Validator"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")

Validator = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Checks (and coerces) arguments; returns the keyword arguments or raises ``ToolArgumentError``."""


def _empty_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


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


@dataclass(slots=True, eq=False)
class Tool:
    """A tool: ``handler`` is called with the model's (validated, guarded) keyword arguments.

    - ``schema``: the JSON Schema the model sees; parameters named in ``bindings`` are removed
      from it and filled from ``bindings`` over whatever the model sent.
    - ``guards``: run in order before the handler; each may allow, deny or rewrite the arguments.
    - ``concurrency``: at most this many calls of this tool run at once.
    - ``validator``: checks arguments before the handler runs (``@tool`` builds one with pydantic).
    - ``timeout``: seconds before a call is abandoned with an error result.
    - ``thread``: run a synchronous handler in a worker thread instead of on the event loop.
    - ``strict``: ask the provider to hold the model's arguments to the schema exactly.
    """

    name: str
    handler: Callable[..., Any]
    description: str = ""
    schema: Mapping[str, Any] = field(default_factory=_empty_schema)
    guards: Sequence[Guard] = ()
    concurrency: int | None = None
    bindings: Mapping[str, Any] = field(default_factory=dict)
    validator: Validator | None = None
    timeout: float | None = None
    thread: bool = False
    strict: bool | None = None
    spec: ToolSpec = field(init=False, repr=False)
    is_async: bool = field(init=False, repr=False)
    _semaphore: asyncio.Semaphore | None = field(init=False, repr=False, default=None)
    _semaphore_loop: object = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"tool name {self.name!r} must be 1-128 characters of letters, digits, _ . -"
            )
        if not callable(self.handler):
            raise TypeError(f"tool {self.name!r}: handler must be callable")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"tool {self.name!r}: concurrency must be >= 1")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"tool {self.name!r}: timeout must be > 0")
        if self.schema.get("type", "object") != "object":
            raise ValueError(f"tool {self.name!r}: schema must describe an object")
        if self.bindings:
            self.schema = _without_bindings(self.schema, tuple(self.bindings))
        self.guards = tuple(self.guards)
        self.spec = ToolSpec(self.name, self.description, self.schema, self.strict)
        self.is_async = inspect.iscoroutinefunction(self.handler) or inspect.iscoroutinefunction(
            getattr(self.handler, "__call__", None)  # noqa: B004 - async callable objects
        )

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
        if self.thread:
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
