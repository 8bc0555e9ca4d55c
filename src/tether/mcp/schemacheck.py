"""A quick structural check of a server's JSON Schema: every keyword that holds schemas holds
schemas, ``type`` names JSON types, ``required`` lists names. A provider refuses a whole request
for one tool whose schema breaks these rules, so such a tool is never offered. (A full
meta-schema validation costs milliseconds per tool; this costs microseconds.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["schema_problem"]

_TYPES = frozenset(("object", "array", "string", "number", "integer", "boolean", "null"))
_SCHEMA = (
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMAS = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAMED_SCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_MAX_DEPTH = 64


def schema_problem(schema: Any, where: str = "the schema", depth: int = 0) -> str | None:
    """What makes ``schema`` no JSON Schema, in words; None when nothing does."""
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, Mapping):
        return f"{where} is a {type(schema).__name__}, not a schema"
    if depth > _MAX_DEPTH:
        return f"{where} is nested more than {_MAX_DEPTH} levels deep"
    problem = _type_problem(schema.get("type", "object"), where)
    if problem is None and "required" in schema:
        required = schema["required"]
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            problem = f"{where}: 'required' is not a list of names"
    if problem is None and "enum" in schema and not isinstance(schema["enum"], list):
        problem = f"{where}: 'enum' is not a list"
    return problem or _inner_problem(schema, where, depth + 1)


def _type_problem(kind: Any, where: str) -> str | None:
    kinds = kind if isinstance(kind, list) else [kind]
    if not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
        return f"{where}: 'type' {kind!r} is no JSON type"
    return None


def _inner_problem(schema: Mapping[str, Any], where: str, depth: int) -> str | None:
    for key, value in schema.items():
        inner: list[tuple[str, Any]] = []
        if key in _SCHEMA or (key == "items" and not isinstance(value, list)):
            inner = [(f"{where}.{key}", value)]
        elif key in _SCHEMAS or key == "items":
            if not isinstance(value, list):
                return f"{where}: '{key}' is not a list of schemas"
            inner = [(f"{where}.{key}[{i}]", v) for i, v in enumerate(value)]
        elif key in _NAMED_SCHEMAS:
            if not isinstance(value, Mapping):
                return f"{where}: '{key}' is not an object of schemas"
            inner = [(f"{where}.{key}.{name}", v) for name, v in value.items()]
        for at, sub in inner:
            problem = schema_problem(sub, at, depth)
            if problem is not None:
                return problem
    return None
