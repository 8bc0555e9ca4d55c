"""Finding and reading a file a ``.prompty`` names, inside its allowed directories, without a
race between checking the path and opening it.

A reference is placed lexically (``..`` folded as text) under one allowed directory, then opened
one name at a time from that directory's descriptor (``openat`` with ``O_NOFOLLOW``): what is
opened is what was checked, whatever is renamed or swapped meanwhile. A symbolic link on the
way is read by hand and followed only while it stays beneath the directory. Platforms without
``openat`` check the canonical path and then open it (not race-free).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from ..base.openat import DIR_FLAGS, FILE_FLAGS, ROOT_FLAGS, SAFE_OPEN
from .errors import LoadError, MissingFileError, OutsideRootError

__all__ = ["MAX_LINKS", "Located", "Place", "locate", "read_located", "read_open"]

MAX_LINKS = 40
"""The most symbolic links followed while opening one file."""


@dataclass(frozen=True, slots=True)
class Place:
    """A directory: a ``root`` the caller trusts (opened as given) and plain folders below it."""

    root: Path
    parts: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)


@dataclass(frozen=True, slots=True)
class Located:
    """A file placed under an allowed directory ``base``: ``rest`` are the names below it."""

    base: Place
    rest: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.base.path.joinpath(*self.rest)

    @property
    def parent(self) -> Place:
        """The file's own directory, as a place (its folders beneath the same root)."""
        return Place(self.base.root, (*self.base.parts, *self.rest[:-1]))


def locate(reference: str, base: Place, roots: Sequence[Path] = ()) -> Located | None:
    """Where ``reference`` (relative to ``base``, or absolute) lies, with ``..`` folded as text,
    if that is inside ``base`` or one of ``roots``; ``None`` otherwise. Nothing is opened."""
    if not reference.strip() or "\0" in reference:
        return None
    joined = os.path.join(os.path.abspath(base.path), reference)
    target = PurePath(os.path.normpath(joined))
    for place in (base, *(Place(Path(r)) for r in roots)):
        for form in _forms(place):
            if target != form and target.is_relative_to(form):
                return Located(place, target.relative_to(form).parts)
    return None


def _forms(place: Place) -> tuple[PurePath, ...]:
    """The place's path as written (made absolute) and with its root's links resolved."""
    written = PurePath(os.path.abspath(place.root)).joinpath(*place.parts)
    try:
        real = PurePath(os.path.realpath(place.root)).joinpath(*place.parts)
    except (OSError, ValueError):
        return (written,)
    return (written,) if real == written else (written, real)


def read_located(found: Located, limit: int) -> str:
    """The UTF-8 text of the regular file at ``found`` (at most ``limit`` bytes), opened one name
    at a time from its root: ``OutsideRootError`` if a link leads out, ``MissingFileError`` if
    it is not there."""
    fd = _open_located(found) if SAFE_OPEN else _open_checked(found)
    return read_open(fd, str(found.path), limit)


def read_open(fd: int, where: str, limit: int) -> str:
    """The UTF-8 text (a BOM dropped) of the open file ``fd``, if it is a regular file of at
    most ``limit`` bytes; ``fd`` is closed."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LoadError("Not a regular file", path=where)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    try:
        with handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise LoadError(f"Cannot read file: {exc.strerror}", path=where) from exc
    if len(data) > limit:
        raise LoadError(f"File larger than {limit} bytes", path=where)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(f"File is not UTF-8 text: {exc.reason}", path=where) from exc


class _Walk:
    """One open: the directory descriptors from the root down, and the links followed."""

    def __init__(self, found: Located) -> None:
        self.found = found
        self.where = str(found.path)
        self.fds: list[int] = []
        self.links = 0

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.pop())

    def down(self, name: str, flags: int) -> int:
        """``name`` opened in the current directory, never through a link."""
        try:
            return os.open(name, flags, dir_fd=self.fds[-1])
        except FileNotFoundError:
            raise MissingFileError(f"File not found: {self.where}", path=self.where) from None
        except OSError as exc:
            raise LoadError(f"Cannot open file: {exc.strerror}", path=self.where) from exc

    def link(self, name: str) -> str | None:
        """The target of ``name`` if it is a symbolic link."""
        try:
            return os.readlink(name, dir_fd=self.fds[-1])
        except OSError:
            return None

    def outside(self) -> OutsideRootError:
        return OutsideRootError(
            f"{self.where} resolves outside allowed roots (through a link)", path=self.where
        )


def _open_located(found: Located) -> int:
    walk = _Walk(found)
    try:
        walk.fds.append(os.open(found.base.root, ROOT_FLAGS))
    except FileNotFoundError:
        raise MissingFileError(f"File not found: {walk.where}", path=walk.where) from None
    except OSError as exc:
        raise LoadError(f"Cannot open folder: {exc.strerror}", path=walk.where) from exc
    try:
        for name in found.base.parts:  # folders the place was found through: never links
            walk.fds.append(walk.down(name, DIR_FLAGS))
        floor = len(walk.fds)
        return _descend(walk, list(found.rest), floor)
    finally:
        walk.close()


def _descend(walk: _Walk, todo: list[str], floor: int) -> int:
    """Opens ``todo`` name by name below the place (``floor`` descriptors deep), following
    links by hand while they stay beneath it; returns the file's descriptor."""
    todo.reverse()
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            if len(walk.fds) <= floor:
                raise walk.outside()
            os.close(walk.fds.pop())
            continue
        target = walk.link(name)
        if target is not None:
            walk.links += 1
            if walk.links > MAX_LINKS:
                raise LoadError(f"More than {MAX_LINKS} links", path=walk.where)
            todo.extend(reversed(_link_parts(walk, target, floor)))
            continue
        if todo:
            walk.fds.append(walk.down(name, DIR_FLAGS))
            continue
        return walk.down(name, FILE_FLAGS)
    raise LoadError("Not a regular file", path=walk.where)


def _link_parts(walk: _Walk, target: str, floor: int) -> list[str]:
    """The names a link's ``target`` stands for from the current directory; an absolute target
    restarts at the place (and must lie beneath it)."""
    if not os.path.isabs(target):
        return list(PurePath(target).parts)
    normal = PurePath(os.path.normpath(target))
    for form in _forms(walk.found.base):
        if normal.is_relative_to(form):
            while len(walk.fds) > floor:
                os.close(walk.fds.pop())
            return list(normal.relative_to(form).parts)
    raise walk.outside()


def _open_checked(found: Located) -> int:
    """Without ``openat``: the canonical path checked against the place, then opened."""
    where = str(found.path)
    real = PurePath(os.path.realpath(found.path))
    if not any(real.is_relative_to(form) for form in _forms(found.base)):
        raise OutsideRootError(f"{where} resolves outside allowed roots (through a link)")
    try:
        return os.open(real, FILE_FLAGS)
    except FileNotFoundError:
        raise MissingFileError(f"File not found: {where}", path=where) from None
    except OSError as exc:
        raise LoadError(f"Cannot open file: {exc.strerror}", path=where) from exc
