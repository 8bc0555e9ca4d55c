"""The inputs of ``tether run FILE.prompty``: ``--input NAME=VALUE`` (text, turned into the
declared kind) over ``--inputs FILE.json`` (a JSON object, its values checked against the
declared kinds). An undeclared, ill-typed, repeated or missing required input is a
``UsageError`` naming it, before anything runs."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .args import UsageError

__all__ = ["DeclaredInput", "read_inputs"]

_INTEGER = re.compile(r"[+-]?\d+")
_TRUE = frozenset(("true", "yes", "on", "1"))
_FALSE = frozenset(("false", "no", "off", "0"))


class DeclaredInput(Protocol):
    """What is read of one declared input (a Prompty ``Property``)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def required(self) -> bool: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def default(self) -> Any: ...
    @property
    def enum_values(self) -> tuple[Any, ...] | None: ...


class _Bad(ValueError):
    """A value that is not of its input's kind; the message says what was wanted and given."""


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value, default=str)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    return "a JSON string" if isinstance(value, str) else type(value).__name__


def _from_text(prop: DeclaredInput, text: str) -> Any:
    """``text`` as a value of ``prop``'s kind (kinds without a text form stay text)."""
    kind, name = prop.kind, prop.name
    if kind == "integer":
        if not _INTEGER.fullmatch(text.strip()):
            raise _Bad(f"input {name!r} is an integer; got {text!r}")
        return int(text)
    if kind in ("float", "number"):
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise _Bad(f"input {name!r} is a number; got {text!r}")
        return number
    if kind == "boolean":
        word = text.strip().lower()
        if word not in _TRUE | _FALSE:
            raise _Bad(f"input {name!r} is a boolean (true or false); got {text!r}")
        return word in _TRUE
    if kind in ("object", "array", "thread"):
        try:
            value = json.loads(text)
        except ValueError:
            wanted = "a JSON object" if kind == "object" else "a JSON array"
            raise _Bad(f"input {name!r} is {wanted}; got text that is not JSON") from None
        return _checked(prop, value)
    return text


def _checked(prop: DeclaredInput, value: Any) -> Any:
    """``value`` (from JSON) if it is of ``prop``'s kind; rich and unknown kinds pass."""
    kind, name = prop.kind, prop.name
    if value is None:
        if prop.nullable:
            return value
        raise _Bad(f"input {name!r} may not be null")
    wanted = {
        "string": ("a string", str),
        "integer": ("an integer", int),
        "float": ("a number", int | float),
        "number": ("a number", int | float),
        "boolean": ("a boolean", bool),
        "object": ("a JSON object", dict),
        "array": ("a JSON array", list),
        "thread": ("a JSON array", list),
    }.get(kind)
    if wanted is None:
        return value
    words, types = wanted
    if not isinstance(value, types) or (isinstance(value, bool) and kind != "boolean"):
        got = _json_kind(value) if kind in ("object", "array", "thread") else _shown(value)
        raise _Bad(f"input {name!r} is {words}; got {got}")
    return value


def _in_enum(prop: DeclaredInput, value: Any) -> Any:
    allowed = prop.enum_values
    if allowed is not None and value not in allowed:
        listed = ", ".join(_shown(v) for v in allowed)
        raise _Bad(f"input {prop.name!r} is one of {listed}; got {_shown(value)}")
    return value


def _undeclared(name: str, declared: Mapping[str, DeclaredInput]) -> _Bad:
    listed = ", ".join(declared) or "none"
    return _Bad(f"the file declares no input {name!r} (it declares: {listed})")


def _from_file(path: Path, declared: Mapping[str, DeclaredInput]) -> dict[str, Any]:
    where = f"--inputs {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{where}: cannot read it: {why}") from None
    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(given, dict):
        raise UsageError(f"{where}: expected a JSON object of inputs, got {_json_kind(given)}")
    values: dict[str, Any] = {}
    for name, value in given.items():
        try:
            prop = declared.get(name)
            if prop is None:
                raise _undeclared(name, declared)
            values[name] = _in_enum(prop, _checked(prop, value))
        except _Bad as exc:
            raise UsageError(f"{where}: {exc}") from None
    return values


def _from_pairs(pairs: Sequence[str], declared: Mapping[str, DeclaredInput]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        try:
            if not sep or not name:
                raise _Bad("expected NAME=VALUE")
            prop = declared.get(name)
            if prop is None:
                raise _undeclared(name, declared)
            if name in values:
                raise _Bad(f"input {name!r} is given twice")
            values[name] = _in_enum(prop, _from_text(prop, text))
        except _Bad as exc:
            raise UsageError(f"--input {pair}: {exc}") from None
    return values


def read_inputs(
    declared: Sequence[DeclaredInput],
    pairs: Sequence[str],
    file: Path | None,
    shown_name: str,
) -> dict[str, Any]:
    """The inputs to run with: ``file``'s, then ``pairs`` over them; every required input
    without a default must be there (``shown_name`` names the ``.prompty`` file)."""
    by_name = {p.name: p for p in declared}
    values = {} if file is None else _from_file(file, by_name)
    values.update(_from_pairs(pairs, by_name))
    missing = [
        p.name for p in declared if p.required and p.default is None and p.name not in values
    ]
    if len(missing) == 1:
        name = missing[0]
        raise UsageError(f"{shown_name} needs input {name!r} (--input {name}=VALUE)")
    if missing:
        listed = ", ".join(repr(n) for n in missing)
        raise UsageError(f"{shown_name} needs inputs {listed} (--input NAME=VALUE for each)")
    return values
