"""``run_notes()``: what a run keeps for its tools between their calls, each tool under a key of
its own (a remote agent's conversation, so the run's next call goes on with it). The mapping
lives as long as the run; the dispatcher lends it to each call of a tool that reports progress
(``reports_progress=True``), in the call's own task."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["noting_to", "run_notes"]

_NOTES: ContextVar[dict[str, Any] | None] = ContextVar("tether_run_notes", default=None)


def run_notes() -> dict[str, Any] | None:
    """The notes of the run making the current call (None outside a run's call)."""
    return _NOTES.get()


def noting_to(notes: dict[str, Any] | None) -> None:
    """Lend ``notes`` to the calls of this task (the dispatcher sets it in each call's task)."""
    _NOTES.set(notes)
