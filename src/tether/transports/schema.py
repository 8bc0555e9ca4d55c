"""JSON Schema adjustments some providers demand (OpenAI strict mode)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["strict_schema"]


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as OpenAI strict mode wants it, recursively.

    Every object lists all its properties as required and forbids others; a property that was
    optional becomes nullable instead (``"type": [t, "null"]``), so its meaning is kept.
    """
    out = dict(schema)
    if out.get("type") == "object" or "properties" in out:
        _close_object(out)
    if isinstance(out.get("items"), Mapping):
        out["items"] = strict_schema(out["items"])
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(key), list):
            out[key] = [strict_schema(s) if isinstance(s, Mapping) else s for s in out[key]]
    for key in ("$defs", "definitions"):
        if isinstance(out.get(key), Mapping):
            out[key] = {k: strict_schema(v) for k, v in out[key].items()}
    return out


def _close_object(out: dict[str, Any]) -> None:
    """An object schema made strict in place: every property required (the optional ones
    nullable), no others allowed."""
    props = out.get("properties") or {}
    required = set(out.get("required") or ())
    new_props: dict[str, Any] = {}
    for name, given in props.items():
        sub = strict_schema(given) if isinstance(given, Mapping) else given
        new_props[name] = sub if name in required or not isinstance(sub, dict) else _nullable(sub)
    out["properties"] = new_props
    out["required"] = list(props)
    out["additionalProperties"] = False


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]} if kind != "null" else schema
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if "anyOf" in schema:
        options = schema["anyOf"]
        if any(isinstance(o, Mapping) and o.get("type") == "null" for o in options):
            return schema
        return {**schema, "anyOf": [*options, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}
