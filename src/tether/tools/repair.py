"""Resilient parsing of streamed tool-call arguments (Prompty spec §9.8)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["ParsedArguments", "failure_message", "parse_arguments"]

logger = logging.getLogger("tether.tools")

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
# A complete string literal, a brace, or a lone quote (an unterminated string).
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}]|"', re.DOTALL)
_FAILED = object()
_NOTES = {
    "fences": "stripping markdown fences",
    "first_object": "extracting the first JSON object from surrounding text",
    "trailing_commas": "removing trailing commas",
}
_KINDS: dict[type, str] = {list: "array", str: "string", int: "number", float: "number"}


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """The outcome of parsing: a JSON object and how it was found, or an error."""

    value: dict[str, Any] | None
    strategy: str | None
    error: str | None


def parse_arguments(raw: str) -> ParsedArguments:
    """Parse tool-call arguments, trying the §9.8 fallbacks only if a direct parse fails."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        if not raw or raw.isspace():
            return ParsedArguments({}, "empty", None)
        error, shape_error = str(exc), None
    else:
        if isinstance(value, dict):
            return ParsedArguments(value, "direct", None)
        error = shape_error = _not_an_object(value)
    for strategy, candidate in _candidates(raw):
        parsed = _loads(candidate)
        if isinstance(parsed, dict):
            logger.warning("tool arguments parsed after %s", _NOTES[strategy])
            return ParsedArguments(parsed, strategy, None)
        if parsed is not _FAILED and shape_error is None:
            error = shape_error = _not_an_object(parsed)
    return ParsedArguments(None, None, error)


def failure_message(parsed: ParsedArguments) -> str:
    """The tool result the model sees when its arguments could not be parsed."""
    return (
        f"Error: Invalid JSON in tool arguments: {parsed.error or 'unknown error'}. "
        "Call the tool again with the arguments as one valid JSON object."
    )


def _candidates(raw: str) -> Iterator[tuple[str, str]]:
    """Yield the fallback strategies' texts lazily, in spec order."""
    stripped = _FENCE.sub(r"\1", raw, count=1)
    if stripped != raw:
        yield "fences", stripped
    block = _first_object(raw)
    if block is not None:
        yield "first_object", block
    cleaned = _TRAILING_COMMA.sub(r"\1", raw)
    if cleaned != raw:  # unchanged text would just repeat the direct parse
        yield "trailing_commas", cleaned


def _first_object(raw: str) -> str | None:
    """The text from the first ``{`` to its matching ``}``, ignoring braces in strings."""
    start = raw.find("{")
    if start < 0:
        return None
    depth = 0
    for match in _TOKEN.finditer(raw, start):
        token = match.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return raw[start : match.end()]
        elif token == '"':
            return None  # unterminated string: no balanced block
    return None


def _loads(text: str) -> object:
    """``json.loads``, returning ``_FAILED`` instead of raising."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _FAILED


def _not_an_object(value: object) -> str:
    """Describe a parsed value that is valid JSON but not an object."""
    kind = "null" if value is None else "boolean" if isinstance(value, bool) else None
    return f"arguments must be a JSON object, got {kind or _KINDS.get(type(value), 'other')}"
