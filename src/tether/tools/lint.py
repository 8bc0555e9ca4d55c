"""What a tool tells the model, checked when it is made: no description, or a parameter with no
type the model can read, is a ``ToolSchemaWarning`` saying what the model will see (the tool
still works; the warning is there so an oversight is not a silent ``{}``)."""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ToolSchemaWarning
from .caller import user_stacklevel

__all__ = ["warn_unclear"]

# Keys that give a property's schema a type the model can read.
_TYPED = frozenset(
    {"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items", "not"}
)
_DELIBERATE = frozenset({"Any", "typing.Any", "object"})  # "any value", chosen on purpose


def warn_unclear(
    name: str, description: str, schema: Mapping[str, Any], handler: Callable[..., Any]
) -> None:
    """Warn (``ToolSchemaWarning``) about what the model cannot learn from this tool's spec."""
    if not description.strip():
        _warn(
            f"tool {name!r} has no description: the model sees only its name and parameters; "
            "give the function a docstring or pass description="
        )
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    parameters = _parameters(handler)
    for key, prop in properties.items():
        if isinstance(prop, Mapping) and _TYPED.intersection(prop):
            continue
        why = _why(parameters, str(key))
        if why is not None:
            shown = json.dumps(prop, ensure_ascii=False, default=str)
            _warn(
                f"tool {name!r}: parameter {key!r} {why}, so the model sees the schema {shown} "
                "and may send any value; annotate it with a JSON type (str, int, list[str], a "
                "pydantic model, ...) or bind it with bindings="
            )


def _parameters(handler: Callable[..., Any]) -> Mapping[str, inspect.Parameter] | None:
    try:
        return inspect.signature(handler).parameters
    except (TypeError, ValueError):
        return None


def _why(parameters: Mapping[str, inspect.Parameter] | None, key: str) -> str | None:
    """Why the parameter ``key`` has no type (None: it was declared ``Any`` on purpose)."""
    param = None if parameters is None else parameters.get(key)
    if parameters is None or param is None:
        return "declares no type"
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return "has no type in the schema read from a handler taking **kwargs (pass schema=)"
    annotation = param.annotation
    if annotation is param.empty:
        return "has no type annotation"
    text = annotation if isinstance(annotation, str) else _type_name(annotation)
    if annotation is Any or text in _DELIBERATE:
        return None
    return f"has the type {text}, which has no JSON Schema"


def _type_name(annotation: Any) -> str:
    name = getattr(annotation, "__qualname__", None)
    return name if isinstance(name, str) else repr(annotation)


def _warn(message: str) -> None:
    level = user_stacklevel()
    if level is not None:  # a copy's original was warned about when it was made
        warnings.warn(ToolSchemaWarning(message), stacklevel=level)
