"""What a run tells the model before its next call: the notice of a handoff just taken, else the
notice of calls it repeated (``Repeats``), else the steering messages a caller queued (stored as
they are told).

A repeat (``Limits(repeated_calls=N)``) is a call with the name and the arguments (as canonical
JSON: key order does not matter) of one made since the user's last message, whose result is the
same as that one's last: the call still runs and its result is returned, and the model is told
before its next call; the N-th repeat ends the run. Only the stored history decides what counts:
each notice is stored with a record (``tether.loop.approval``'s kind, which the model never sees),
and a run that goes on from a stored history (a resume, a durable run continued as new) reads the
calls, results and notices since the user's last message again (``Repeats.reread``), so it counts
as the run it continues would have. A steering message, or a typed answer's repair, is a message
from the user: the count starts again after it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..context import COMPACTION
from ..errors import LimitExceeded
from ..events import Handoff, SteeringInjected
from ..messages import Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock
from .approval import RECORD, without_record
from .control import Steering
from .handoff import Handoffs
from .transcript import Transcript

__all__ = ["Repeats", "pending_notice", "tell"]

_NOTICE = "repeated"  # the id of a repeat notice's record
_SHOWN_ARGS = 300  # the characters of a repeated call's arguments a notice quotes


class Repeats:
    """One run's repeated calls under ``Limits(repeated_calls=limit)``: the last result of each
    call (name and canonical arguments) since the user's last message, how many repeats that
    span holds (``count``) and those not told yet (``untold``)."""

    __slots__ = ("count", "last", "limit", "untold")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.last: dict[str, list[_Made]] = {}  # by tool name: each call and its last outcome
        self.untold: list[ToolUseBlock] = []

    def forget(self) -> None:
        """A message from the user: the calls before it are neither compared nor counted."""
        self.last, self.count, self.untold = {}, 0, []

    def check(
        self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock | None]
    ) -> None:
        """Note a reply's calls and their results (in the reply's order, once they are stored);
        ``LimitExceeded`` at the ``limit``-th repeat."""
        for call, result in zip(calls, results, strict=True):
            if result is not None and self._repeated(call, result):
                self.count += 1
                if self.count >= self.limit:
                    raise LimitExceeded("repeated_calls", self.count, self.limit)
                self.untold.append(call)

    def _repeated(self, call: ToolUseBlock, result: ToolResultBlock) -> bool:
        """Whether ``call`` repeats an earlier one and its result has not changed. Arguments
        are compared as mappings first (key order aside, as JSON; no JSON made for each call),
        then as canonical JSON only where they look the same (``1`` is not ``true``)."""
        outcome = (result.content, result.is_error)
        made = self.last.get(call.name)
        if made is None:
            self.last[call.name] = [_Made(call, outcome)]
            return False
        for earlier in made:
            if earlier.call.input == call.input and _canonical(earlier.call) == _canonical(call):
                before, earlier.outcome = earlier.outcome, outcome
                return before == outcome
        made.append(_Made(call, outcome))
        return False

    def notice(self) -> Message:
        """The message that tells the untold repeats (stored with its record)."""
        calls, self.untold = self.untold, []
        named = ", ".join(dict.fromkeys(f"{c.name} with {_shown(c)}" for c in calls))
        text = (
            f"You already called {named} earlier in this run, and the result has not changed. "
            "Calling it again with the same arguments will not tell you anything new: answer "
            "with what you have, or try something else (another tool or other arguments)."
        )
        record = ReasoningBlock(
            "", json.dumps({"repeated": [c.id for c in calls]}), id=_NOTICE, provider=RECORD
        )
        return Message("user", (TextBlock(text), record))

    def reread(self, history: Sequence[Message]) -> None:
        """Take the calls, results and notices of a stored ``history`` since the user's last
        message, as this run had made them (a run that goes on without a new message)."""
        self.forget()
        made: dict[str, ToolUseBlock] = {}
        for message in history[_since_user(history) :]:
            if _is_notice(message):
                self.untold = []
                continue
            for block in message.content:
                if type(block) is ToolUseBlock:
                    made[block.id] = block
                elif type(block) is ToolResultBlock and block.tool_use_id in made:
                    call = made[block.tool_use_id]
                    if self._repeated(call, block):
                        self.count += 1
                        self.untold.append(call)


@dataclass(slots=True)
class _Made:
    """A call made in the span, and the last result it had (content, whether an error)."""

    call: ToolUseBlock
    outcome: tuple[object, bool]


def _canonical(call: ToolUseBlock) -> str:
    """A call's arguments as canonical JSON (keys sorted); the raw text of unreadable ones."""
    if call.parse_error is not None:
        return "raw:" + (call.raw_arguments or "")
    return json.dumps(call.input, sort_keys=True, ensure_ascii=False, default=repr)


def _shown(call: ToolUseBlock) -> str:
    shown = _canonical(call)
    return shown if len(shown) <= _SHOWN_ARGS else shown[: _SHOWN_ARGS - 1] + "…"


def _record_kind(message: Message) -> ReasoningBlock | None:
    content = message.content
    last = content[-1] if content else None
    if type(last) is ReasoningBlock and last.provider in (RECORD, COMPACTION):
        return last
    return None


def _is_notice(message: Message) -> bool:
    record = _record_kind(message)
    return record is not None and record.provider == RECORD and record.id == _NOTICE


def _since_user(history: Sequence[Message]) -> int:
    """Where the span after the user's last message starts: after the last user message that
    holds more than tool results and is no record (a notice, a decision, a compaction)."""
    for at in range(len(history) - 1, -1, -1):
        message = history[at]
        if (
            message.role == "user"
            and _record_kind(message) is None
            and any(type(b) is not ToolResultBlock for b in message.content)
        ):
            return at + 1
    return 0


def pending_notice(
    handoffs: Handoffs | None, steering: Steering | None, repeats: Repeats | None = None
) -> bool:
    """Whether a handoff, repeated calls or steering messages are told before the next model
    call."""
    return (
        (handoffs is not None and handoffs.notice is not None)
        or (repeats is not None and bool(repeats.untold))
        or (steering is not None and steering.has_pending)
    )


async def tell(
    handoffs: Handoffs | None,
    steering: Steering | None,
    transcript: Transcript,
    repeats: Repeats | None = None,
) -> Handoff | SteeringInjected:
    """The handoff to tell, else the repeats, else the steering messages, appended to the
    history (a repeat notice stored with its record, shown without)."""
    notice = None if handoffs is None else handoffs.tell()
    if notice is not None:
        return notice
    if repeats is not None and repeats.untold:
        stored = repeats.notice()
        shown = without_record(stored)
        assert shown is not None
        transcript.show(shown)
        await transcript.store.append(stored)
        return SteeringInjected((shown,))
    assert steering is not None
    if repeats is not None:
        repeats.forget()
    injected = tuple(steering.drain())
    for message in injected:
        await transcript.append(message)
    return SteeringInjected(injected)
