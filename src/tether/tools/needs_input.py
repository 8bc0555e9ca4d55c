"""``NeedsInput``: a tool call that cannot finish until the user answers its questions (an MCP
server asked for input, and nothing in this process can answer). The loop pauses the run on it
as it pauses for an approval; a resume's answers reach the call, run again, through
``resuming`` (a context variable of the call's task), with the state the call paused with."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..types import Elicitation

__all__ = ["Answered", "NeedsInput", "resumed", "resuming"]


class NeedsInput(Exception):
    """A call waits for the user's input: ``asks``, its questions (each with its ``key``), and
    ``state``, JSON data the call needs to go on from where it stopped. Its message says what
    to do where nothing can pause (the call then ends with it as an error result)."""

    def __init__(self, asks: Sequence[Elicitation], state: Mapping[str, Any], reason: str) -> None:
        super().__init__(reason)
        self.asks = tuple(asks)
        self.state = dict(state)


@dataclass(frozen=True, slots=True)
class Answered:
    """A resume's answers to one call's questions, by key (the content sent, or None: declined),
    and the ``state`` the call paused with."""

    answers: Mapping[str, Mapping[str, Any] | None]
    state: Mapping[str, Any]


_RESUMING: ContextVar[Answered | None] = ContextVar("tether_resuming", default=None)


def resumed() -> Answered | None:
    """The answers the call running in this task goes on with, if it is a resumed one."""
    return _RESUMING.get()


@contextmanager
def resuming(answered: Answered) -> Iterator[None]:
    """Run a call (in this task, or tasks it starts) as the one ``answered`` answers."""
    token = _RESUMING.set(answered)
    try:
        yield
    finally:
        _RESUMING.reset(token)
