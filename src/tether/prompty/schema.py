"""Prompty property lists as JSON Schema (§7.1.4): tool parameters and structured outputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .model import Property

__all__ = ["object_schema", "output_format", "property_schema"]

_TYPES = {
    "string": "string",
    "integer": "integer",
    "int": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "object": "object",
}


def property_schema(prop: Property) -> dict[str, Any]:
    """One property as JSON Schema (unknown kinds pass through as their own type name)."""
    schema: dict[str, Any] = {"type": _TYPES.get(prop.kind, prop.kind)}
    if prop.description:
        schema["description"] = prop.description
    if prop.enum_values is not None:
        schema["enum"] = list(prop.enum_values)
    if prop.kind == "array" and prop.items is not None:
        schema["items"] = property_schema(prop.items)
    if prop.kind == "object" and prop.properties is not None:
        schema.update(object_schema(prop.properties))
    return schema


def object_schema(props: Sequence[Property]) -> dict[str, Any]:
    """A property list as an object schema (``required`` only when some property is)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: property_schema(p) for p in props},
    }
    required = [p.name for p in props if p.required]
    if required:
        schema["required"] = required
    return schema


def output_format(outputs: Sequence[Property]) -> dict[str, Any] | None:
    """The ``response_format`` tether's transports take for declared outputs (§7.1.6)."""
    if not outputs:
        return None
    return {"name": "structured_output", "schema": object_schema(outputs), "strict": True}
