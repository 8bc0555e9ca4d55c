"""A small docstring reader: summary and parameter text, in Google, NumPy or Sphinx style."""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_GOOGLE_HEADER = re.compile(
    r"^(args|arguments|parameters|params|keyword args|keyword arguments|other parameters|"
    r"kwargs|returns?|yields?|raises|exceptions|examples?|notes?|attributes|methods|"
    r"see also|warnings?|warns|todo|references|tip|important|caution|danger|hint):$",
    re.IGNORECASE,
)
_GOOGLE_PARAM_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
     "other parameters", "kwargs"}
)  # fmt: skip
_NUMPY_PARAM_SECTIONS = frozenset(
    {"parameters", "other parameters", "keyword arguments", "keyword args"}
)
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_SPHINX_FIELD = re.compile(r"^\s*:\w[^:]*:")
_SPHINX_PARAM = re.compile(
    r"^\s*:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*?\s)?\**(\w+)\s*:(.*)$"
)
_GOOGLE_ENTRY = re.compile(r"^\**(\w+)\s*(?:\([^)]*\))?\s*:(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _norm(parts: list[str]) -> str:
    return " ".join(" ".join(parts).split())


def _is_numpy_header(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and bool(lines[i].strip())
        and not _UNDERLINE.match(lines[i])
        and bool(_UNDERLINE.match(lines[i + 1]))
    )


def _is_header(lines: list[str], i: int) -> bool:
    text = lines[i].strip()
    return (
        bool(_GOOGLE_HEADER.match(text))
        or _is_numpy_header(lines, i)
        or bool(_SPHINX_FIELD.match(lines[i]))
    )


def _google_section(lines: list[str], start: int, base: int, out: dict[str, str]) -> None:
    """Read ``name: text`` entries after an ``Args:`` header at indentation ``base``."""
    entry_indent: int | None = None
    name: str | None = None
    parts: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            continue
        ind = _indent(line)
        if ind <= base:
            break
        if entry_indent is None:
            entry_indent = ind
        if ind <= entry_indent:
            if name is not None:
                out.setdefault(name, _norm(parts))
            m = _GOOGLE_ENTRY.match(line.strip())
            name, parts = (m.group(1), [m.group(2)]) if m else (None, [])
        elif name is not None:
            parts.append(line)
    if name is not None:
        out.setdefault(name, _norm(parts))


def _numpy_section(lines: list[str], start: int, out: dict[str, str]) -> None:
    """Read ``name : type`` entries (descriptions indented below) after a dashed header."""
    entry_indent: int | None = None
    names: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        for n in names:
            out.setdefault(n, _norm(parts))

    for i in range(start, len(lines)):
        line = lines[i]
        if not line.strip():
            continue
        if _is_numpy_header(lines, i):
            break
        ind = _indent(line)
        if entry_indent is None:
            entry_indent = ind
        if ind < entry_indent:
            break
        if ind == entry_indent:
            flush()
            head = line.split(":", 1)[0]
            names = [n.strip().lstrip("*") for n in head.split(",")]
            names = [n for n in names if n.isidentifier()]
            parts = []
        else:
            parts.append(line)
    flush()


def _sphinx_params(lines: list[str], out: dict[str, str]) -> None:
    """Read ``:param name: text`` fields, with continuation lines indented below them."""
    i = 0
    while i < len(lines):
        m = _SPHINX_PARAM.match(lines[i])
        if not m:
            i += 1
            continue
        base = _indent(lines[i])
        parts = [m.group(2)]
        i += 1
        while i < len(lines) and lines[i].strip() and _indent(lines[i]) > base:
            if _SPHINX_FIELD.match(lines[i]):
                break
            parts.append(lines[i])
            i += 1
        out.setdefault(m.group(1), _norm(parts))


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split ``doc`` into its whitespace-normalised summary and ``{parameter: description}``."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    end = next((i for i in range(len(lines)) if _is_header(lines, i)), len(lines))
    summary = _norm(lines[:end])
    params: dict[str, str] = {}
    for i in range(end, len(lines)):
        text = lines[i].strip()
        if _GOOGLE_HEADER.match(text) and text[:-1].lower() in _GOOGLE_PARAM_SECTIONS:
            _google_section(lines, i + 1, _indent(lines[i]), params)
        elif _is_numpy_header(lines, i) and text.lower() in _NUMPY_PARAM_SECTIONS:
            _numpy_section(lines, i + 2, params)
    _sphinx_params(lines[end:], params)
    return summary, {k: v for k, v in params.items() if v}
