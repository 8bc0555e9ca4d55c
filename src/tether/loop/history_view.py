"""How a run reads a stored history: records left out, and from the last compaction record on
only (its summary first, then the messages it kept and those after it)."""

from __future__ import annotations

from collections.abc import Sequence

from ..context import COMPACTION, kept_of, summary_of
from ..messages import Message, ReasoningBlock
from .approval import RECORD, OpenCalls, open_calls, without_record

__all__ = ["read_stored", "stored_span", "visible"]

_RECORDS = (RECORD, COMPACTION)


def read_stored(history: list[Message]) -> tuple[OpenCalls | None, list[Message]]:
    """What a run reads from a stored history: the calls its last reply left open, and the
    history as the model sees it."""
    return open_calls(history), visible(history)


def visible(history: list[Message]) -> list[Message]:
    """``history`` as the model sees it (``history`` itself when it holds no record, as most
    do). One look at each message's last block, inline: every run's opening pays it."""
    for message in history:
        content = message.content
        if content and type(content[-1]) is ReasoningBlock and content[-1].provider in _RECORDS:
            return _view(history)
    return history


def _view(history: list[Message]) -> list[Message]:
    """The model's view of a history that holds records."""
    start, summary = 0, None
    for at in range(len(history) - 1, -1, -1):
        kept = kept_of(history[at])
        if kept is not None:
            start, summary = max(0, at - kept), summary_of(history[at])
            break
    shown = [m for m in map(_shown, history[start:]) if m is not None]
    return shown if summary is None else [summary, *shown]


def _shown(message: Message) -> Message | None:
    """``message`` as it shows in the view, if it does (compaction records show only first, as
    the summary of the last one)."""
    return None if kept_of(message) is not None else without_record(message)


def stored_span(stored: Sequence[Message], kept: int) -> int:
    """How many messages at the end of ``stored`` hold the last ``kept`` messages of its view
    (records that do not show are counted in, not as kept)."""
    span = seen = 0
    for message in reversed(stored):
        if seen == kept:
            break
        span += 1
        if _shown(message) is not None:
            seen += 1
    return span
