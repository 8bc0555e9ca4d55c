"""Work a tool call started elsewhere and waits for (an MCP task): where the call writes down the
handle of that work as soon as it has one, and where a later attempt of the same call finds it.
A durable run keeps the handle with the call (``tether.durable``), so a worker that died while
waiting makes its successor wait for the same work, and never start it again."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["CallRecord", "call_record", "recording"]


class CallRecord(Protocol):
    """What keeps the handle of the work one tool call started (a JSON object)."""

    def recorded(self) -> Mapping[str, Any] | None:
        """The handle an earlier attempt of this call wrote down, if any."""
        ...

    def record(self, handle: Mapping[str, Any]) -> None:
        """Write ``handle`` down now (before the call waits for the work it names)."""
        ...


_RECORD: ContextVar[CallRecord | None] = ContextVar("tether_call_record", default=None)


def call_record() -> CallRecord | None:
    """The record of the call running in this task (None: nothing keeps handles)."""
    return _RECORD.get()


@contextmanager
def recording(record: CallRecord | None) -> Iterator[None]:
    """Calls made in this block (and in the tasks it starts) keep their handles in ``record``."""
    token = _RECORD.set(record)
    try:
        yield
    finally:
        _RECORD.reset(token)
