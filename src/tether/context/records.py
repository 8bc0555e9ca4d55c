"""Compaction records: how a stored history says that its older part was summarised.

A record is a user message: the summary's text, then a ``ReasoningBlock`` whose provider is
``COMPACTION`` and whose signature says how many stored messages before it stay in the model's
view (``kept``). Every store keeps it as it keeps reasoning; a load needs only the messages from
the last record's kept ones on (``tether.loop.history_view.visible`` makes the view).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..messages import Message, ReasoningBlock, TextBlock

__all__ = [
    "COMPACTION",
    "SUMMARY_PREFIX",
    "compaction_record",
    "context_start",
    "kept_of",
    "summary_of",
]

COMPACTION = "tether.compaction"  # the provider of a compaction record's ReasoningBlock
SUMMARY_PREFIX = "Summary of the conversation so far:\n"


def compaction_record(summary: str, kept: int) -> Message:
    """The stored record of a compaction: ``summary``, and the ``kept`` stored messages before
    it that stay in the model's view."""
    data = json.dumps({"kept": kept})
    record = ReasoningBlock("", data, id="compaction", provider=COMPACTION)
    return Message("user", (TextBlock(SUMMARY_PREFIX + summary), record))


def kept_of(message: Message) -> int | None:
    """How many stored messages before ``message`` stay in view, if it is a compaction record
    (0 for a record this tether cannot read: the summary and what follows it still make
    sense); None if it is not one."""
    content = message.content
    if not content:
        return None
    last = content[-1]
    if type(last) is not ReasoningBlock or last.provider != COMPACTION:
        return None
    try:
        kept = json.loads(last.signature or "{}").get("kept", 0)
    except (ValueError, AttributeError):
        return 0
    return kept if type(kept) is int and kept >= 0 else 0


def summary_of(record: Message) -> Message:
    """The message a compaction record shows the model: its summary."""
    return Message("user", record.content[:-1])


def context_start(messages: Sequence[Message], first: int = 0) -> int | None:
    """The position where the model's view begins, for ``messages`` stored from position
    ``first`` on: that of the last compaction record's first kept message (counted back from
    the record, so it may lie before ``first``); None when they hold no record."""
    for at in range(len(messages) - 1, -1, -1):
        kept = kept_of(messages[at])
        if kept is not None:
            return max(0, first + at - kept)
    return None
