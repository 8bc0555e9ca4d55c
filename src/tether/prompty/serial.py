"""The door's one JSON serialiser: a frozen dataclass to the spec's camelCase object.

Each field becomes a key (``max_output_tokens`` → ``maxOutputTokens``) in field order; nested
shapes give their own ``to_dict``, tuples become lists and mappings are copied, one level deep
(user data inside them is left as it is). ``rule`` in a field's metadata changes one field:
another key, when it is left out, or its keys flattened into the object. A class's
``_json_keys`` changes the order, or adds a property: ``("kind", ...)`` writes ``kind`` first,
then the other fields (``...``) in field order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, fields
from types import EllipsisType
from typing import Any, ClassVar, Literal, TypeAlias

__all__ = [
    "FLATTEN",
    "OMIT_EMPTY",
    "SKIP",
    "JsonShape",
    "Omit",
    "SparseJsonShape",
    "rule",
    "to_dict",
]

Omit: TypeAlias = Literal["never", "none", "empty"]
"""When a field is left out: never, when it is None, or when it is empty or false."""

_META = "tether.json"


@dataclass(frozen=True, slots=True)
class _Rule:
    attr: str
    key: str
    omit: Omit
    flatten: bool = False


@dataclass(frozen=True, slots=True)
class _FieldRule:
    key: str | None = None
    omit: Omit | None = None
    flatten: bool = False
    skip: bool = False


def rule(
    *, key: str | None = None, omit: Omit | None = None, flatten: bool = False, skip: bool = False
) -> dict[str, Any]:
    """Field metadata for one field's JSON: its ``key``, when it is left out (``omit``, else
    the class's default), ``flatten`` (a mapping whose keys go into the object, beneath the
    fields) or ``skip`` (not in the JSON at all)."""
    return {_META: _FieldRule(key, omit, flatten, skip)}


SKIP = rule(skip=True)
OMIT_EMPTY = rule(omit="empty")
FLATTEN = rule(flatten=True)


class JsonShape:
    """A frozen dataclass whose ``to_dict()`` is its camelCase JSON shape, None values kept.
    ``_json_keys``, when set, is the order of the keys: attribute names (a field or a property)
    and ``...`` for every field it does not name."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    _omit_none: ClassVar[bool] = False
    _json_keys: ClassVar[tuple[str | EllipsisType, ...]] = (...,)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        return to_dict(self)


class SparseJsonShape(JsonShape):
    """A ``JsonShape`` that leaves out the fields that are None."""

    __slots__ = ()
    _omit_none = True


_RULES: dict[type[JsonShape], tuple[_Rule, ...]] = {}


def to_dict(obj: JsonShape) -> dict[str, Any]:
    """``obj`` as its camelCase JSON object (see the module's docstring)."""
    out: dict[str, Any] = {}
    flat: dict[str, Any] = {}
    for r in _rules(type(obj)):
        value = getattr(obj, r.attr)
        if r.flatten:
            flat.update(value)
        elif not _left_out(r.omit, value):
            out[r.key] = _value(value)
    return {**flat, **out} if flat else out


def _left_out(omit: Omit, value: Any) -> bool:
    if omit == "empty":
        return not value
    return omit == "none" and value is None


def _value(value: Any) -> Any:
    if isinstance(value, JsonShape):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_item(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _item(v) for k, v in value.items()}
    return value


def _item(value: Any) -> Any:
    return value.to_dict() if isinstance(value, JsonShape) else value


def _rules(cls: type[JsonShape]) -> tuple[_Rule, ...]:
    found = _RULES.get(cls)
    if found is None:
        found = _RULES[cls] = tuple(_make_rules(cls))
    return found


def _make_rules(cls: type[JsonShape]) -> Iterator[_Rule]:
    declared = {f.name: f.metadata.get(_META, _FieldRule()) for f in fields(cls)}
    default: Omit = "none" if cls._omit_none else "never"
    for attr in _order(cls, list(declared)):
        spec = declared.get(attr, _FieldRule())
        if not spec.skip:
            yield _Rule(attr, spec.key or _camel(attr), spec.omit or default, spec.flatten)


def _order(cls: type[JsonShape], declared: list[str]) -> list[str]:
    named = [k for k in cls._json_keys if isinstance(k, str)]
    for attr in named:
        if not hasattr(cls, attr):
            raise AttributeError(f"{cls.__name__}._json_keys names no attribute {attr!r}")
    rest = [name for name in declared if name not in named]
    return [a for k in cls._json_keys for a in (rest if k is ... else (k,))]


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)
