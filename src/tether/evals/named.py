"""Evaluators named in a dataset file: ``equals``, ``contains``, ``regex``, ``tool_calls``,
``within``, ``judge``, and ``python: module:attr`` for any evaluator of one's own.

Each is a name alone (``- equals``) or a mapping of one name to its value: the value itself
(``- contains: Paris``) or its options (``- judge: {rubric: ..., model: local}``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from .checks import Contains, Equals, Regex
from .errors import EvalError
from .judge import Judge
from .paths import ToolCalls, Within

__all__ = ["NAMES", "evaluator_from_spec"]


def _python(value: Any) -> Any:
    if not isinstance(value, str) or ":" not in value:
        raise ValueError("python takes 'module:attr' (an importable module)")
    module, _, attr = value.partition(":")
    found = importlib.import_module(module)
    for part in attr.split("."):
        found = getattr(found, part)
    return found


# Each name with what builds it from the value given (first) and from options (a mapping).
NAMES: dict[str, tuple[Callable[[Any], Any], Callable[..., Any]]] = {
    "equals": (Equals, Equals),
    "contains": (Contains, Contains),
    "regex": (Regex, Regex),
    "tool_calls": (ToolCalls, ToolCalls),
    "within": (lambda v: Within(**v), Within),
    "judge": (Judge, Judge),
    "python": (_python, _python),
}
_NO_VALUE = {"equals": Equals, "contains": Contains}


def evaluator_from_spec(spec: Any, where: str) -> Any:
    """The evaluator ``spec`` names, or an ``EvalError`` saying where and what is wrong."""
    if isinstance(spec, str):
        if spec in _NO_VALUE:
            return _NO_VALUE[spec]()
        raise EvalError(f"{where}: evaluator {spec!r} needs a value; {_known()}")
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise EvalError(f"{where}: an evaluator is a name or a mapping of one name; {_known()}")
    ((name, value),) = spec.items()
    if name not in NAMES:
        raise EvalError(f"{where}: unknown evaluator {name!r}; {_known()}")
    from_value, from_options = NAMES[name]
    try:
        if isinstance(value, Mapping) and name not in ("equals", "within"):
            return from_options(**value)
        return from_value(value)
    except (TypeError, ValueError, ImportError, AttributeError) as exc:
        raise EvalError(f"{where}: evaluator {name}: {exc}") from exc


def _known() -> str:
    return "known: " + ", ".join(NAMES)
