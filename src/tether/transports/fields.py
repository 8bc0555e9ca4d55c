"""Reading provider JSON, which is untrusted: typed field readers, and errors that quote (a cut
of) what the provider sent."""

from __future__ import annotations

import json
from typing import Any

from ..errors import StreamInterruptedError

__all__ = [
    "CUT",
    "SHAPE_ERRORS",
    "array",
    "block_index",
    "count",
    "detail",
    "excerpt",
    "malformed",
    "mapping",
    "quote",
    "reason_of",
    "string",
    "string_or_empty",
    "wrong",
]

CUT = "…"
"""Marks where ``excerpt`` cut provider text."""

_QUOTE = 500  # characters of provider data quoted in an error


SHAPE_ERRORS: tuple[type[Exception], ...] = (
    AttributeError,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
    RecursionError,
)
"""What reading provider JSON of an unexpected shape raises; decoders turn it into ``malformed``."""


def excerpt(text: str, limit: int = _QUOTE) -> str:
    """``text`` cut to ``limit`` characters; a cut is marked with ``CUT`` and the full length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{CUT} ({len(text)} characters)"


def reason_of(exc: BaseException) -> str:
    """Why reading failed, in a few words (``KeyError`` names the missing field)."""
    if isinstance(exc, KeyError):
        return f"no {exc} field"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return excerpt(str(exc) or type(exc).__name__, 200)


def malformed(what: str, raw: str, exc: BaseException) -> StreamInterruptedError:
    """The error for provider data that could not be read: why, then (a cut of) the data."""
    return StreamInterruptedError(
        f"the provider sent a malformed {what} ({reason_of(exc)}): {excerpt(raw)}"
    )


def quote(value: Any) -> str:
    """A parsed JSON value as text, for ``malformed``."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return "(a value that cannot be shown)"


_KINDS_OF = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _kind(value: Any) -> str:
    kind = _KINDS_OF.get(type(value), type(value).__name__)
    if type(value) in (int, float, str):
        return f"{kind} ({excerpt(repr(value), 40)})"
    return kind


def wrong(field: str, value: Any, expected: str) -> TypeError:
    """The error for a provider field of the wrong type (for ``malformed`` to quote)."""
    return TypeError(f"{field} is {_kind(value)}, not {expected}")


def string(value: Any, field: str) -> str | None:
    """``value`` if it is a string or null; else a ``TypeError`` naming ``field``."""
    if value is None or type(value) is str:
        return value
    raise wrong(field, value, "a string")


def string_or_empty(value: Any, field: str) -> str:
    """``value`` if it is a string, ``""`` if null; else a ``TypeError`` naming ``field``."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    raise wrong(field, value, "a string")


def mapping(value: Any, field: str) -> dict[str, Any]:
    """``value`` if it is a JSON object; else a ``TypeError`` naming ``field``."""
    if type(value) is dict:
        return value
    raise wrong(field, value, "an object")


def array(value: Any, field: str) -> list[Any]:
    """``value`` if it is a JSON array; else a ``TypeError`` naming ``field``."""
    if type(value) is list:
        return value
    raise wrong(field, value, "a list")


def count(value: Any, field: str) -> int:
    """A token count: a non-negative integer (also sent as ``"12"`` or ``12.0``); null is 0."""
    if type(value) is int and value >= 0:
        return value
    if value is None:
        return 0
    if type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    if type(value) is float and value >= 0 and value.is_integer():
        return int(value)
    raise wrong(field, value, "a token count")


def detail(usage: dict[str, Any], group: str, field: str) -> int:
    """A count from a usage object's ``group`` of details (``prompt_tokens_details``, …); 0 when
    the group is absent or null."""
    details = usage.get(group)
    return count(mapping(details, group).get(field), field) if details else 0


def block_index(value: Any, field: str = "index") -> int:
    """A content block's index: a non-negative integer."""
    if type(value) is int and value >= 0:
        return value
    raise wrong(field, value, "a block index")
