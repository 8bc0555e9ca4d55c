"""Resilient parsing of streamed tool-call arguments (Prompty spec §9.8).

Every fallback is a single forward scan, so repair stays linear-time on any input, and no
fallback ever edits the inside of a JSON string.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["ParsedArguments", "failure_message", "parse_arguments"]

logger = logging.getLogger("tether.tools")

_FENCE = "```"
_FENCE_TAG = "json"
# Single-character classes: each search only moves forward, so scanning never backtracks.
_STRUCTURE = re.compile(r'[{}\[\],"]')
_STRING_STOP = re.compile(r'["\\]')
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
            notes = " and ".join(_NOTES[step] for step in strategy.split("+"))
            logger.warning("tool arguments parsed after %s", notes)
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
    """Yield (strategy, text) lazily: the §9.8 order, then fences or extraction minus commas."""
    found: list[tuple[str, str]] = []
    for strategy, extract in (("fences", _unfenced), ("first_object", _first_object)):
        text = extract(raw)
        if text is not None:
            found.append((strategy, text))
            yield strategy, text
    for prefix, text in [("", raw)] + [(f"{name}+", text) for name, text in found]:
        cleaned = _without_trailing_commas(text)
        if cleaned != text:  # unchanged text would just repeat an earlier parse
            yield f"{prefix}trailing_commas", cleaned


def _unfenced(raw: str) -> str | None:
    """The text inside a markdown code fence (optionally tagged json) wrapping all of ``raw``.

    Captures what the spec's fence regex captures, without that regex's cubic backtracking.
    """
    text = raw.strip()
    if len(text) < 2 * len(_FENCE) or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return None
    inner = text[len(_FENCE) : -len(_FENCE)]
    return inner.removeprefix(_FENCE_TAG).strip()


def _first_object(raw: str) -> str | None:
    """The text from the first ``{`` to its matching ``}``, ignoring braces in strings."""
    start = raw.find("{")
    if start < 0:
        return None
    depth = 0
    for index, char in _structure(raw, start):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return raw[start : index + 1]
    return None  # unbalanced, or cut short by an unterminated string


def _without_trailing_commas(text: str) -> str:
    """``text`` minus each comma outside strings whose next non-space character is ``}``/``]``."""
    kept: list[str] = []
    start = 0
    comma: int | None = None
    for index, char in _structure(text):
        # Only whitespace may separate the comma from the closer; gaps are disjoint, so linear.
        if char in "}]" and comma is not None and not text[comma + 1 : index].strip():
            kept.append(text[start:comma])
            start = comma + 1
        comma = index if char == "," else None
    kept.append(text[start:])
    return "".join(kept)


def _structure(text: str, pos: int = 0) -> Iterator[tuple[int, str]]:
    """Yield (index, char) of each brace, bracket, comma and string start outside strings.

    Stops at an unterminated string: nothing after its opening quote is structure.
    """
    while (match := _STRUCTURE.search(text, pos)) is not None:
        index = match.start()
        char = text[index]
        yield index, char
        pos = index + 1
        if char == '"':
            end = _string_end(text, pos)
            if end is None:
                return
            pos = end


def _string_end(text: str, pos: int) -> int | None:
    """The index just past the quote closing a string whose body starts at ``pos``."""
    while (match := _STRING_STOP.search(text, pos)) is not None:
        if match.group() == '"':
            return match.end()
        pos = match.end() + 1  # a backslash escapes the next character, whatever it is
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
