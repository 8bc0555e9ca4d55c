"""Role-marker lines (spec §6.2) and their signing against injection (§6.3).

A marker is ``role:`` or ``role[key=value, …]:`` alone on a line. Before rendering, every
marker the author wrote is signed with the render's nonce at both ends of its attribute list
(``user[nonce="N", name="…", nonce="N"]:``); after rendering, every line that carries the nonce
must still be such a marker with the author's attribute names only. An input rendered inside
an attribute list therefore cannot end the line, start a marker of its own, or add attributes.
Every scan here is linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RoleInjectionError

__all__ = [
    "ROLES",
    "RoleMarker",
    "Signed",
    "check_seals",
    "match_role_marker",
    "sign",
]

ROLES = frozenset({"system", "user", "assistant", "developer"})
_INT = re.compile(r"[+-]?\d{1,30}", re.ASCII)
_FLOAT = re.compile(r"[+-]?\d{1,30}\.\d{1,30}", re.ASCII)

Attribute = tuple[str, str, bool]
"""One ``key=value`` of a marker: key, raw value, whether it was quoted."""


@dataclass(frozen=True, slots=True)
class RoleMarker:
    """A role-marker line: its role, its typed attributes (``nonce`` apart), the raw nonce."""

    role: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    nonce: str | None = None
    raw_attrs: str = ""
    pairs: tuple[Attribute, ...] = ()


def match_role_marker(line: str) -> RoleMarker | None:
    """The marker on ``line`` (spec §6.2: optional ``#``, a role, optional ``[k=v, …]``, ``:``
    alone on the line; case-insensitive), or ``None``. Linear in the line's length."""
    text = line.strip()
    if text.startswith("#"):
        text = text[1:].lstrip()
    if not text.endswith(":"):
        return None
    head = text[:-1].rstrip()
    bracket = head.find("[")
    role, block = (head, None) if bracket < 0 else (head[:bracket], head[bracket + 1 :])
    if role.lower() not in ROLES:
        return None
    if block is None:
        return RoleMarker(role.lower())
    if not block.endswith("]"):
        return None
    pairs = attribute_pairs(block[:-1])
    if not pairs:
        return None
    attrs: dict[str, Any] = {}
    nonce: str | None = None
    for key, raw, quoted in pairs:
        if key == "nonce":
            nonce = raw
        else:
            attrs[key] = raw if quoted else _typed(raw)
    return RoleMarker(role.lower(), attrs, nonce, block[:-1], tuple(pairs))


def attribute_pairs(block: str) -> list[Attribute] | None:
    """``key=value, key2="value 2"`` as its attributes in order; ``None`` if the block is not
    one. Unquoted values run to the next comma."""
    pairs: list[Attribute] = []
    pos, end = 0, len(block)
    while True:
        pos = _skip_blanks(block, pos)
        if pos == end:
            return pairs
        step = _attribute(block, pos)
        if step is None:
            return None
        key, raw, quoted, pos = step
        pairs.append((key, raw, quoted))


def _attribute(block: str, pos: int) -> tuple[str, str, bool, int] | None:
    """One ``key = value`` at ``pos`` and the position after its comma."""
    start = pos
    while pos < len(block) and (block[pos].isalnum() or block[pos] == "_"):
        pos += 1
    key = block[start:pos]
    pos = _skip_blanks(block, pos)
    if not key or not block.startswith("=", pos):
        return None
    pos = _skip_blanks(block, pos + 1)
    if block.startswith('"', pos):
        close = block.find('"', pos + 1)
        if close < 0:
            return None
        raw, quoted, pos = block[pos + 1 : close], True, _skip_blanks(block, close + 1)
    else:
        comma = block.find(",", pos)
        stop = len(block) if comma < 0 else comma
        raw, quoted, pos = block[pos:stop].strip(), False, stop
    if pos < len(block):
        if block[pos] != ",":
            return None
        pos += 1
    return key, raw, quoted, pos


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _typed(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw


# --- signing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signed:
    """A template with its markers signed, the nonce, and the attribute names (in order) of
    each marker the author wrote."""

    template: str
    nonce: str
    shapes: frozenset[tuple[str, ...]]


def sign(template: str, nonce: str) -> Signed:
    """``template`` with every role marker rebuilt as ``role[nonce="N", …attrs, nonce="N"]:``
    (just ``role[nonce="N"]:`` without attributes); a nonce the author wrote is dropped."""
    lines = template.split("\n")
    shapes: set[tuple[str, ...]] = set()
    seal = f'nonce="{nonce}"'
    for i, line in enumerate(lines):
        marker = match_role_marker(line)
        if marker is None:
            continue
        kept = [(k, raw, quoted) for k, raw, quoted in marker.pairs if k != "nonce"]
        shapes.add(_keys(tuple(kept)))
        attrs = [f'{k}="{raw}"' if quoted else f"{k}={raw}" for k, raw, quoted in kept]
        inner = ", ".join([seal, *attrs, seal]) if attrs else seal
        lines[i] = f"{marker.role}[{inner}]:"
    return Signed("\n".join(lines), nonce, frozenset(shapes))


def check_seals(rendered: str, signed: Signed) -> None:
    """Every line of ``rendered`` that holds the nonce must be a marker signed at both ends
    with one of the author's attribute lists between; ``RoleInjectionError`` otherwise."""
    nonce = signed.nonce
    at = rendered.find(nonce)
    while at >= 0:
        start = rendered.rfind("\n", 0, at) + 1
        end = rendered.find("\n", at)
        end = len(rendered) if end < 0 else end
        if not _sealed(rendered[start:end], signed):
            line = rendered.count("\n", 0, start) + 1
            raise RoleInjectionError(
                f"A signed role marker was altered by a rendered value — possible injection "
                f"(line {line})"
            )
        at = rendered.find(nonce, end)


def _sealed(line: str, signed: Signed) -> bool:
    marker = match_role_marker(line)
    if marker is None:
        return False
    seal = ("nonce", signed.nonce, True)
    pairs = marker.pairs
    if not pairs or pairs[0] != seal:
        return False
    if len(pairs) == 1:
        return () in signed.shapes
    return len(pairs) > 2 and pairs[-1] == seal and _keys(pairs[1:-1]) in signed.shapes


def _keys(pairs: tuple[Attribute, ...]) -> tuple[str, ...]:
    return tuple(k for k, _, _ in pairs)
