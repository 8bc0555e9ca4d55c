"""``--tools MODULE:ATTR``: the user's own tools, from an importable module or a ``.py`` file."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..tools.decorator import tool
from ..tools.tool import Tool

__all__ = ["ToolSpecError", "load_attribute", "load_tool_spec", "merge_tools"]


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


def load_tool_spec(spec: str) -> list[Tool]:
    """The tools named by ``spec``: ``module:attr`` or ``path/to/file.py:attr``.

    ``attr`` may name a ``Tool``, a plain function (made a tool with ``tool()``), or a list or
    tuple of those. Raises ``ToolSpecError`` with a one-line message.
    """
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
    if isinstance(value, list | tuple):
        if not value:
            raise ToolSpecError(f"--tools {spec}: {attr} is an empty list")
        return [_as_tool(item, f"item {i} of {attr}", spec) for i, item in enumerate(value)]
    return [_as_tool(value, attr, spec)]


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
