"""The CLI's built-in demo tools: all offline, all safe, all plain ``@tool`` functions.

``demo_tools(root)`` returns them; the two file tools can only see files inside ``root``: a path
is opened one name at a time from ``root``, ``..`` may not climb above it, and symbolic links are
never followed (a path through one is refused, naming the link), so nothing can lead outside it.
Only regular files are read: FIFOs, sockets and devices are refused, without blocking.
"""

from __future__ import annotations

import datetime as dt
import errno
import functools
import os
import posixpath
import stat
import zoneinfo
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ...base.openat import DIR_FLAGS, FILE_FLAGS, ROOT_FLAGS, SAFE_OPEN
from ...tools.decorator import tool
from ...tools.tool import Tool
from .calc import evaluate, format_number
from .units import convert

__all__ = [
    "LinkRefusedError",
    "OutsideDirectoryError",
    "calculate",
    "convert_units",
    "current_time",
    "demo_tools",
    "resolve_inside",
]

MAX_READ_CHARS = 200_000
_MAX_ZONE_CHARS = 64  # the longest IANA name has 30
MAX_LISTED = 500
_SNIFF_BYTES = 8192


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    if not wanted or ".." in wanted or wanted.startswith("/") or len(wanted) > _MAX_ZONE_CHARS:
        shown = _shorten(name, _MAX_ZONE_CHARS)
        raise ValueError(f"unknown time zone {shown!r}; use an IANA name such as 'Europe/Paris'")
    try:
        return zoneinfo.ZoneInfo(wanted)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name no file has
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


class OutsideDirectoryError(PermissionError):
    """A path resolves to a place outside the directory the file tools may read."""


class LinkRefusedError(PermissionError):
    """A path goes through a symbolic link, which the file tools never follow."""


def _outside(root: Path, path: str) -> OutsideDirectoryError:
    return OutsideDirectoryError(
        f"{path!r} is outside the allowed directory {str(root.resolve())!r}; "
        "only paths inside it can be read"
    )


def _relative_parts(root: Path, path: str) -> tuple[str, ...]:
    """The names leading from ``root`` to ``path``, with ``.`` and ``..`` folded as text.

    Folding as text agrees with the file system because no link is ever followed on the way.
    """
    if "\x00" in path:
        raise ValueError("the path contains a NUL character")
    normal = PurePosixPath(posixpath.normpath(path))
    if normal.is_absolute():
        for base in {PurePosixPath(os.path.abspath(root)), PurePosixPath(root.resolve())}:
            if normal.is_relative_to(base):
                return normal.relative_to(base).parts
        raise _outside(root, path)
    if normal.parts[:1] == ("..",):
        raise _outside(root, path)
    return normal.parts


def resolve_inside(root: Path, path: str) -> Path:
    """Where ``path`` (relative to ``root``, or absolute) lies, if that is inside ``root``.

    ``.`` and ``..`` are folded as text and links are left alone: the file tools then open the
    result one name at a time from ``root`` and refuse any symbolic link on the way.
    """
    return root.resolve().joinpath(*_relative_parts(root, path))


def _shown(parts: tuple[str, ...]) -> str:
    return "/".join(parts) or "."


def _open_failed(dir_fd: int, parts: tuple[str, ...], error: OSError) -> Exception:
    """A clear error for the model, naming the part of the path that could not be opened."""
    shown = _shown(parts)
    if error.errno == errno.ENOENT:
        return FileNotFoundError(f"{shown!r} does not exist")
    try:
        mode = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return error
    if stat.S_ISLNK(mode):
        return LinkRefusedError(f"{shown!r} is a symbolic link; the file tools do not follow links")
    if error.errno == errno.ENOTDIR:
        what = "is a file, not a directory" if stat.S_ISREG(mode) else "is not a directory"
        return NotADirectoryError(f"{shown!r} {what}")
    if not stat.S_ISREG(mode):
        return ValueError(f"{shown!r} is not a regular file; only regular files can be read")
    return error


def _open_at(dir_fd: int, parts: tuple[str, ...], flags: int) -> int:
    try:
        return os.open(parts[-1], flags, dir_fd=dir_fd)
    except OSError as exc:
        raise _open_failed(dir_fd, parts, exc) from None


def _open_inside(root: Path, parts: tuple[str, ...], flags: int) -> int:
    """A descriptor for ``root``/``parts``, opened one name at a time without following links.

    Each name is opened relative to the directory already open, so swapping a directory for a
    link between a check and the open cannot lead outside ``root``.
    """
    if not SAFE_OPEN:
        raise OSError("the file tools need a POSIX system (openat with O_NOFOLLOW)")
    fd = os.open(root, ROOT_FLAGS)  # the root itself may be a link
    for depth in range(1, len(parts) + 1):
        last = depth == len(parts)
        try:
            next_fd = _open_at(fd, parts[:depth], flags if last else DIR_FLAGS)
        finally:
            os.close(fd)
        fd = next_fd
    return fd


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
    parts = _relative_parts(root, path)
    fd = _open_inside(root, parts, DIR_FLAGS)
    try:  # the entries are described while fd is open: their stat() is relative to it
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name.lower())
        lines = [_describe_entry(e) for e in entries[:MAX_LISTED]]
    finally:
        os.close(fd)
    if len(entries) > MAX_LISTED:
        lines.append(f"... and {len(entries) - MAX_LISTED} more")
    count = len(entries)
    header = f"{_shown(parts)} holds {count} entr{'y' if count == 1 else 'ies'}"
    return "\n".join([header + ":", *lines]) if lines else header


def _open_regular(root: Path, path: str) -> BinaryIO:
    """``path`` inside ``root`` opened for reading, if it is a regular file (checked on the
    opened descriptor, so what is read is what was checked)."""
    fd = _open_inside(root, _relative_parts(root, path), FILE_FLAGS)
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return open(fd, "rb")  # O_NONBLOCK does nothing to reads of a regular file
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{path!r} is a directory; use list_files")
    raise ValueError(f"{path!r} is not a regular file; only regular files can be read")


def _read_file(root: Path, path: str, max_chars: int = 20_000) -> str:
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    max_chars = min(max_chars, MAX_READ_CHARS)
    with _open_regular(root, path) as raw:
        head = raw.read(_SNIFF_BYTES)
        if b"\x00" in head:
            raise ValueError(f"{path!r} looks like a binary file; only text files can be read")
        data = head + raw.read(max(max_chars * 4 + 4 - len(head), 0))
        more = bool(raw.read(1))
        size = os.fstat(raw.fileno()).st_size
    text = data.decode("utf-8", errors="replace")
    if len(text) > max_chars or more:
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
