"""What a durable tool call keeps of work it started elsewhere (an MCP task): the work's handle,
in every heartbeat of the call's activity from the moment it is known, so that Temporal holds it
when the worker dies. The next attempt finds it in the last heartbeat's details, or the workflow
finds it in the timed-out activity's failure and runs the call again with it; either way the call
waits for the same work and never starts it again (``tether.tools.remote``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .live import LiveProgress
from .pulse import Pulse

__all__ = ["HeldWork", "held_in"]


class HeldWork:
    """A durable call's record (``tether.tools.remote.CallRecord``): the handle it was given
    (by an earlier attempt), and any it is told, shown in every heartbeat from then on."""

    __slots__ = ("_handle", "_live", "_pulse")

    def __init__(self, handle: Mapping[str, Any] | None, live: LiveProgress, pulse: Pulse) -> None:
        self._live = live
        self._pulse = pulse
        self._handle: dict[str, Any] | None = None
        if handle is not None:
            self._hold(handle)

    def recorded(self) -> Mapping[str, Any] | None:
        """The handle of the work this call started (in this attempt or an earlier one)."""
        return self._handle

    def record(self, handle: Mapping[str, Any]) -> None:
        """Hold ``handle`` and heartbeat it at once."""
        self._hold(handle)
        self._pulse.news()

    def _hold(self, handle: Mapping[str, Any]) -> None:
        self._handle = dict(handle)
        self._live.held = self._handle


def held_in(details: Sequence[Any] | None) -> dict[str, Any] | None:
    """The handle of the work a tool activity held, from its last heartbeat's ``details``."""
    last = details[-1] if details else None
    held = last.get("held") if isinstance(last, Mapping) else None
    return dict(held) if isinstance(held, Mapping) else None
