"""The CLI's built-in demo tools: all offline, all safe, all plain ``@tool`` functions.

``demo_tools(root)`` returns them; the two file tools can only see files inside ``root``
(symbolic links and ``..`` are resolved first, so neither can lead outside it).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import stat
import zoneinfo
from pathlib import Path

from ..tools.decorator import tool
from ..tools.tool import Tool
from .calc import evaluate, format_number
from .units import convert

__all__ = [
    "OutsideRootError",
    "calculate",
    "convert_units",
    "current_time",
    "demo_tools",
    "resolve_inside",
]

MAX_READ_CHARS = 200_000
MAX_LISTED = 500
_SNIFF_BYTES = 8192


@functools.cache
def _zone_index() -> dict[str, str]:
    """Lower-case city (last part of the IANA name, spaces for underscores) -> IANA name."""
    index: dict[str, str] = {}
    for name in sorted(zoneinfo.available_timezones()):
        if name.startswith(("Etc/", "SystemV/", "posix/", "right/")):
            continue
        index.setdefault(name.rsplit("/", 1)[-1].replace("_", " ").lower(), name)
    return index


def _find_zone(name: str) -> zoneinfo.ZoneInfo:
    wanted = name.strip()
    if not wanted or ".." in wanted or wanted.startswith("/"):
        raise ValueError(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris'")
    try:
        return zoneinfo.ZoneInfo(wanted)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        pass
    if wanted.upper() in ("UTC", "GMT", "Z"):
        return zoneinfo.ZoneInfo("UTC")
    match = _zone_index().get(" ".join(wanted.replace("_", " ").split()).lower())
    if match is not None:
        return zoneinfo.ZoneInfo(match)
    raise ValueError(
        f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris', 'Asia/Tokyo' "
        "or 'America/New_York' (a city name that is part of one also works)"
    )


@tool
def current_time(timezone: str) -> str:
    """Get the current date and time in one time zone (call it once per place).

    Args:
        timezone: An IANA time zone name such as "Asia/Tokyo" or "America/New_York", or "UTC".
    """
    zone = _find_zone(timezone)
    now = dt.datetime.now(zone)
    offset = now.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    return f"{now:%A %Y-%m-%d %H:%M:%S} {now.tzname()} ({offset}) in {zone.key}"


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses, functions
    such as sqrt, log, log10, exp, sin, cos, tan (radians), round, abs, min, max, factorial,
    and the constants pi and e.

    Args:
        expression: The arithmetic expression to evaluate.
    """
    return f"{expression.strip()} = {format_number(evaluate(expression))}"


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units of length, mass, volume, speed or temperature.

    Units are symbols or names: m, km, cm, mi, ft, in; kg, g, lb, oz; l, ml, gal; km/h, mph,
    m/s, kn; C, F, K.

    Args:
        value: The number to convert.
        from_unit: The unit the value is in.
        to_unit: The unit to convert to.
    """
    result, source, target = convert(value, from_unit, to_unit)
    return f"{format_number(value)} {source} = {result:.10g} {target}"


class OutsideRootError(PermissionError):
    """A path resolves to a place outside the directory the file tools may read."""


def resolve_inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root``, or absolute) resolved, if it lies inside ``root``.

    Symbolic links and ``..`` are resolved before the check, so a link inside ``root`` that
    points outside it is refused like any other outside path.
    """
    base = root.resolve()
    if "\x00" in path:
        raise ValueError("the path contains a NUL character")
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        raise OutsideRootError(
            f"{path!r} is outside the allowed directory {str(base)!r}; "
            "only paths inside it can be read"
        )
    return target


def _shown(root: Path, target: Path) -> str:
    relative = target.relative_to(root.resolve())
    return "." if relative == Path() else relative.as_posix()


def _describe_entry(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return f"{entry.name} (link)"
        if entry.is_dir(follow_symlinks=False):
            return f"{entry.name}/"
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return f"{entry.name} (unreadable)"
    return f"{entry.name} ({size:,} bytes)"


def _list_files(root: Path, path: str = ".") -> str:
    target = resolve_inside(root, path)
    if not target.exists():
        raise FileNotFoundError(f"{path!r} does not exist")
    if not target.is_dir():
        raise NotADirectoryError(f"{path!r} is a file, not a directory; use read_file")
    with os.scandir(target) as it:
        entries = sorted(it, key=lambda e: e.name.lower())
    lines = [_describe_entry(e) for e in entries[:MAX_LISTED]]
    if len(entries) > MAX_LISTED:
        lines.append(f"... and {len(entries) - MAX_LISTED} more")
    count = len(entries)
    header = f"{_shown(root, target)} holds {count} entr{'y' if count == 1 else 'ies'}"
    return "\n".join([header + ":", *lines]) if lines else header


def _read_file(root: Path, path: str, max_chars: int = 20_000) -> str:
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    max_chars = min(max_chars, MAX_READ_CHARS)
    target = resolve_inside(root, path)
    if not target.exists():
        raise FileNotFoundError(f"{path!r} does not exist")
    if target.is_dir():
        raise IsADirectoryError(f"{path!r} is a directory; use list_files")
    # After resolve() no part of the path is a link; O_NOFOLLOW refuses one swapped in since.
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with open(fd, "rb") as raw:
        if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            raise ValueError(f"{path!r} is not a regular file")
        head = raw.read(_SNIFF_BYTES)
        if b"\x00" in head:
            raise ValueError(f"{path!r} looks like a binary file; only text files can be read")
        data = head + raw.read(max(max_chars * 4 + 4 - len(head), 0))
        more = bool(raw.read(1))
    text = data.decode("utf-8", errors="replace")
    if len(text) > max_chars or more:
        size = target.stat().st_size
        return (
            f"{text[:max_chars]}\n[... truncated: first {max_chars:,} characters of {size:,} bytes]"
        )
    return text


def demo_tools(root: Path) -> list[Tool]:
    """The demo toolset: time, calculator, unit conversion, and file tools confined to ``root``."""
    base = Path(root)

    def list_files(path: str = ".") -> str:
        """List the files and folders in a directory inside the allowed directory.

        Args:
            path: A directory relative to the allowed directory; "." is the allowed directory.
        """
        return _list_files(base, path)

    def read_file(path: str, max_chars: int = 20_000) -> str:
        """Read a text file inside the allowed directory.

        Args:
            path: A file path relative to the allowed directory.
            max_chars: Read at most this many characters.
        """
        return _read_file(base, path, max_chars)

    return [current_time, calculate, convert_units, tool(list_files), tool(read_file)]
