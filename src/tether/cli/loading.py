"""``--tools MODULE:ATTR``: the user's own tools, from an importable module or a ``.py`` file
(for a ``.prompty`` file: the handlers of the tools it declares)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..tools.decorator import tool
from ..tools.signature import default_name
from ..tools.tool import Tool

__all__ = ["ToolSpecError", "load_attribute", "load_handlers", "load_tool_spec", "merge_tools"]


class ToolSpecError(Exception):
    """A ``--tools`` value that cannot be loaded; the message says why, in one line."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _is_path(module: str) -> bool:
    return module.endswith(".py") or "/" in module or os.sep in module


def _import_file(path: Path, spec: str, option: str = "--tools") -> ModuleType:
    if not path.is_file():
        raise ToolSpecError(f"{option} {spec}: no such file: {path}")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode(), usedforsecurity=False).hexdigest()[:8]
    name = f"_tether_tools_{resolved.stem.replace('-', '_')}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise ToolSpecError(f"{option} {spec}: cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pydantic look their module up here
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the file can import its neighbours, as a script would
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[name]
        if not isinstance(exc, Exception):
            raise
        raise ToolSpecError(f"{option} {spec}: running {path} failed: {_one_line(exc)}") from exc
    return module


def _import_module(name: str, spec: str, option: str = "--tools") -> ModuleType:
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)  # `tether` as a console script does not put the cwd on the path
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise ToolSpecError(f"{option} {spec}: no module named {exc.name!r}") from exc
        raise ToolSpecError(f"{option} {spec}: importing {name} failed: {_one_line(exc)}") from exc
    except Exception as exc:
        raise ToolSpecError(f"{option} {spec}: importing {name} failed: {_one_line(exc)}") from exc


def load_attribute(spec: str, option: str) -> Any:
    """The object ``MODULE:ATTR`` (or ``path/file.py:ATTR``) names, for ``option``."""
    module, colon, attr = spec.rpartition(":")
    if not colon or not module or not attr.isidentifier():
        raise ToolSpecError(f"{option} {spec}: expected MODULE:ATTR")
    loaded = (
        _import_file(Path(module), spec, option)
        if _is_path(module)
        else _import_module(module, spec, option)
    )
    if not hasattr(loaded, attr):
        raise ToolSpecError(f"{option} {spec}: {module} has no attribute {attr!r}")
    return getattr(loaded, attr)


def _as_tool(value: Any, where: str, spec: str) -> Tool:
    if isinstance(value, Tool):
        return value
    if callable(value) and not inspect.isclass(value):
        try:
            made: Tool = tool(value)
        except Exception as exc:
            raise ToolSpecError(
                f"--tools {spec}: {where} cannot be made a tool: {_one_line(exc)}"
            ) from exc
        return made
    raise ToolSpecError(
        f"--tools {spec}: {where} is a {type(value).__name__}, not a Tool, a function "
        "or a list of them"
    )


def _named_value(spec: str) -> tuple[Any, str]:
    """The object ``spec`` (``module:attr`` or ``path/to/file.py:attr``) names, and ``attr``."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ToolSpecError(
            f"--tools expects MODULE:ATTR (e.g. mytools:search or ./tools.py:search), got {spec!r}"
        )
    if not all(part.isidentifier() for part in attr.split(".")):
        raise ToolSpecError(f"--tools {spec}: {attr!r} is not an attribute name")
    if _is_path(module_name):
        module = _import_file(Path(module_name).expanduser(), spec)
    else:
        if not all(part.isidentifier() for part in module_name.split(".")):
            raise ToolSpecError(
                f"--tools {spec}: {module_name!r} is not a module name or a .py file"
            )
        module = _import_module(module_name, spec)
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ToolSpecError(
                f"--tools {spec}: {module_name} has no attribute {attr!r}"
            ) from None
    if isinstance(value, list | tuple) and not value:
        raise ToolSpecError(f"--tools {spec}: {attr} is an empty list")
    return value, attr


def load_tool_spec(spec: str) -> list[Tool]:
    """The tools named by ``spec``: ``module:attr`` or ``path/to/file.py:attr``.

    ``attr`` may name a ``Tool``, a plain function (made a tool with ``tool()``), or a list or
    tuple of those. Raises ``ToolSpecError`` with a one-line message.
    """
    value, attr = _named_value(spec)
    if isinstance(value, list | tuple):
        return [_as_tool(item, f"item {i} of {attr}", spec) for i, item in enumerate(value)]
    return [_as_tool(value, attr, spec)]


def _tool_handler(found: Tool) -> Callable[..., Awaitable[Any]]:
    """A ``Tool`` as a Prompty handler: keyword arguments, through the tool's own checks."""

    async def handler(**arguments: Any) -> Any:
        return await found.invoke(arguments)

    return handler


def _as_handler(value: Any, where: str, spec: str) -> tuple[str, Callable[..., Any]]:
    if isinstance(value, Tool):
        return value.name, _tool_handler(value)
    if callable(value) and not inspect.isclass(value):
        declared = getattr(getattr(value, "__tool__", None), "name", None)
        return declared if isinstance(declared, str) else default_name(value), value
    raise ToolSpecError(
        f"--tools {spec}: {where} is a {type(value).__name__}, not a Tool, a function "
        "or a list of them"
    )


def load_handlers(spec: str) -> dict[str, Callable[..., Any]]:
    """The tool handlers ``spec`` names for a ``.prompty`` file, by tool name (a Prompty
    ``@tool``'s name, a ``Tool``'s, else the function's). A function is used as it is: the
    Prompty door calls it with the arguments as one dict or as keywords, as its signature
    asks; a ``Tool`` runs through its own checks."""
    value, attr = _named_value(spec)
    items = list(value) if isinstance(value, list | tuple) else [value]
    handlers: dict[str, Callable[..., Any]] = {}
    for i, item in enumerate(items):
        name, handler = _as_handler(item, attr if len(items) == 1 else f"item {i} of {attr}", spec)
        if name in handlers:
            raise ToolSpecError(f"--tools {spec}: two handlers for tool {name!r}")
        handlers[name] = handler
    return handlers


def merge_tools(demo: Iterable[Tool], user: Iterable[Tool]) -> list[Tool]:
    """The user's tools after the demo ones; a user tool replaces a demo tool of the same name.

    Two user tools with one name are an error (``ToolSpecError``).
    """
    mine: dict[str, Tool] = {}
    for t in user:
        if t.name in mine:
            raise ToolSpecError(f"--tools: two tools are named {t.name!r}")
        mine[t.name] = t
    return [t for t in demo if t.name not in mine] + list(mine.values())
