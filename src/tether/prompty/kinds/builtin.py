"""The built-in tool kind handlers (§11.2): ``prompty``, ``mcp`` and ``openapi`` tools run without
a handler of the application's own. ``*`` (custom kinds) is never built in.

``register_builtin_kinds`` installs them with the caller's settings; ``ensure_builtin_kinds``
with default ones where a kind has none, which the registry does on the first lookup of such a
kind (``registry.get_tool_handler``), so no operation needs setting up first.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from ..env import EnvAccess, EnvOption
from ..registry import BUILTIN_KINDS, TOOL_HANDLERS, KindHandler, register_tool_handler
from .common import canonical_roots
from .mcp import McpKind
from .openapi import OpenApiKind
from .prompty import PromptyKind

__all__ = ["ensure_builtin_kinds", "register_builtin_kinds"]

_BUILTIN = (PromptyKind, McpKind, OpenApiKind)
_lock = threading.Lock()


def register_builtin_kinds(
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] | None = None,
    allow_stdio: bool = False,
    env: EnvOption = None,
) -> None:
    """Handle ``prompty``, ``mcp`` and ``openapi`` tools. A kind with no handler, or with an
    earlier built-in one, gets these settings; a handler the application registered stays.

    ``allowed_roots``: where child ``.prompty`` files and OpenAPI documents may lie besides the
    agent's own directory tree. ``allow_stdio``: let files start local MCP server commands.
    ``env``: narrows the environment variables child ``.prompty`` files may read (as
    ``load``'s ``env``; by default a child reads what its parent was loaded to read).
    """
    roots = canonical_roots([os.fspath(r) for r in allowed_roots or ()])
    child_env = None if env is None else EnvAccess.of(env)  # a wrong shape fails here
    handlers: dict[str, KindHandler] = {
        "prompty": PromptyKind(roots, child_env),
        "mcp": McpKind(allow_stdio=allow_stdio),
        "openapi": OpenApiKind(roots),
    }
    _install(handlers, replace_builtin=True)


def ensure_builtin_kinds() -> None:
    """Install the built-in handlers with default settings where a kind has none (a handler
    already there, built-in or not, keeps its settings)."""
    if all(TOOL_HANDLERS.get(kind) is not None for kind in BUILTIN_KINDS):
        return
    _install({"prompty": PromptyKind(), "mcp": McpKind(), "openapi": OpenApiKind()}, False)


def _install(handlers: dict[str, KindHandler], replace_builtin: bool) -> None:
    with _lock:  # check-then-set as one step against another thread registering the builtins
        for kind, handler in handlers.items():
            current = TOOL_HANDLERS.get(kind)
            if current is None or (replace_builtin and isinstance(current, _BUILTIN)):
                register_tool_handler(kind, handler)
