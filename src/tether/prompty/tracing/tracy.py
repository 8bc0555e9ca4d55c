"""The ``.tracy`` file backend (spec §3.6.1): spans kept in memory as a tree, and the whole tree
written as one JSON file when its root span ends, ``<name>.<YYYYMMDD.HHMMSS>.tracy`` (UTC time of
that end), readable by the owner only."""

from __future__ import annotations

import contextvars
import datetime as dt
import itertools
import json
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from ... import __version__
from .tracer import hoist_usage, iso_utc

__all__ = ["TracyTracer", "tracy_file_name"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_MAX_NAME = 100  # characters of the span name kept in a file name
_RESERVED = "name"  # besides the "__" fields: the frame's own
_counter = itertools.count()


def tracy_file_name(span_name: str, ended: dt.datetime) -> str:
    """``<sanitized_span_name>.<YYYYMMDD.HHMMSS>.tracy``: characters unsafe in a file name
    become ``_``; ``ended`` is taken in UTC."""
    safe = "".join(c if c in _SAFE else "_" for c in span_name[:_MAX_NAME]) or "trace"
    stamp = ended.astimezone(dt.UTC).strftime("%Y%m%d.%H%M%S")
    return f"{safe}.{stamp}.tracy"


class TracyTracer:
    """A tracer factory for ``Tracer.add("tracy", TracyTracer(directory))``: one ``.tracy`` file
    per root span, in ``directory`` (default ``.runs`` under the working directory when made,
    created readable by the owner only). ``last_path`` is the file written last."""

    def __init__(
        self,
        directory: str | os.PathLike[str] = ".runs",
        *,
        runtime: str = "python",
        version: str | None = None,
    ) -> None:
        self.directory = Path(directory).absolute()
        self.runtime = runtime
        self.version = version if version is not None else __version__
        self.last_path: Path | None = None
        self._current: contextvars.ContextVar[_Frame | None] = contextvars.ContextVar(
            f"tracy_frame_{next(_counter)}", default=None
        )

    def __call__(self, name: str) -> _Scope:
        """Open a span called ``name`` under the current one of this context (a root if none)."""
        return _Scope(self, name)

    def write(self, root: _Frame) -> Path:
        """Write the finished tree of ``root`` to a new file; its path."""
        tree = root.as_dict()
        hoist_usage(tree)
        document = {"runtime": self.runtime, "version": self.version, "trace": tree}
        data = json.dumps(document, ensure_ascii=False, indent=2, default=str).encode()
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = _create(self.directory, tracy_file_name(root.name, root.ended or _now()), data)
        self.last_path = path
        return path


class _Frame:
    """One span of the tree: its name, times, emitted fields and children (in start order)."""

    __slots__ = ("children", "ended", "fields", "name", "started", "ticks", "took")

    def __init__(self, name: str) -> None:
        self.name = name
        self.started, self.ticks = _now(), time.perf_counter()
        self.ended: dt.datetime | None = None
        self.took = 0.0
        self.fields: dict[str, Any] = {}
        self.children: list[_Frame] = []

    def emit(self, key: str, value: Any) -> None:
        if key != _RESERVED and not key.startswith("__"):
            self.fields[key] = value

    def finish(self) -> None:
        self.ended, self.took = _now(), (time.perf_counter() - self.ticks) * 1000

    def as_dict(self) -> dict[str, Any]:
        times: dict[str, Any] = {"start": iso_utc(self.started)}
        if self.ended is not None:
            times |= {"end": iso_utc(self.ended), "duration": round(self.took, 3)}
        return {
            "name": self.name,
            "__time": times,
            **self.fields,
            "__frames": [child.as_dict() for child in list(self.children)],
        }


class _Scope:
    """Entering opens a frame under this context's current one; leaving ends it (and writes the
    file when it was a root)."""

    __slots__ = ("_frame", "_parent", "_token", "_tracer")

    def __init__(self, tracer: TracyTracer, name: str) -> None:
        self._tracer = tracer
        self._frame = _Frame(name)
        self._parent: _Frame | None = None
        self._token: contextvars.Token[_Frame | None] | None = None

    def __enter__(self) -> Any:
        current = self._tracer._current
        self._parent = current.get()
        if self._parent is not None:
            self._parent.children.append(self._frame)
        self._token = current.set(self._frame)
        return self._frame.emit

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._frame.finish()
        if self._token is not None:
            try:
                self._tracer._current.reset(self._token)
            except ValueError:  # left in another context (a generator finished elsewhere)
                self._tracer._current.set(self._parent)
        if self._parent is None:
            self._tracer.write(self._frame)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _create(directory: Path, name: str, data: bytes) -> Path:
    """A new file (mode 0600) holding ``data``, named ``name`` or, when that exists,
    ``<stem>.<n>.tracy``; never follows or overwrites what is there."""
    stem = name.removesuffix(".tracy")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for n in itertools.count():
        path = directory / (name if n == 0 else f"{stem}.{n}.tracy")
        try:
            handle = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        return path
    raise AssertionError("unreachable")  # pragma: no cover
