"""Approval that outlives the process: which calls wait for a person, and how the stored history
says so, so that any process (and any store) can tell.

A run whose reply asks for a call ``Agent(approval=...)`` names stores that reply with a *pause
record* naming the held calls, and leaves them unanswered. ``resume`` stores a *decision record*
(the denied calls' results, the ids it approved and a token of its own) before an approved call
runs: one conflict-checked append, so of two resumes at once only one runs a call. A record is a
``ReasoningBlock`` whose provider is ``RECORD`` and whose id says which record it is, the last
block of its message: every store keeps it as it keeps reasoning (``tether.jsonforms``), no wire
format sends another provider's reasoning, and the loop leaves records out of what the model
sees (``tether.loop.history_view``). Which calls are pending is then read from the stored messages
alone: the calls of the last reply that its pause record names, with neither a result nor an
approval after it (``open_calls``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..events import PendingCall
from ..messages import Message, ReasoningBlock, ToolResultBlock, ToolUseBlock

__all__ = [
    "RECORD",
    "Approval",
    "Decisions",
    "OpenCalls",
    "Reopening",
    "approver",
    "check_approval",
    "decision_message",
    "hold",
    "open_calls",
    "pending",
    "pending_call",
    "reopening",
    "without_record",
]

Approval: TypeAlias = Collection[str] | Callable[[str, Mapping[str, Any]], bool]
"""The calls that wait for a person: tool names, or ``(name, input) -> True`` for those that do."""

RECORD = "tether.approval"  # the provider of a record's ReasoningBlock
_PAUSE = "pause"  # the record of a reply whose calls it names wait for a person
_APPROVED = "decided"  # the record of a resume: the calls it names were approved


def check_approval(approval: object) -> None:
    """Raise ``TypeError`` unless ``approval`` is None, a collection of tool names or a
    predicate."""
    if approval is None or callable(approval):
        return
    if (
        isinstance(approval, str | bytes)
        or not isinstance(approval, Collection)
        or not all(isinstance(name, str) for name in approval)
    ):
        raise TypeError(
            "approval takes a set of tool names or a predicate (name, input) -> bool, "
            f"got {approval!r}"
        )


def approver(approval: Approval) -> Callable[[ToolUseBlock], bool]:
    """Whether a call waits for a person, under ``approval``."""
    if callable(approval):
        needs = approval
        return lambda call: bool(needs(call.name, call.input))
    names = frozenset(approval)
    return lambda call: call.name in names


def pending_call(call: ToolUseBlock) -> PendingCall:
    """``call`` as the caller sees a call that waits."""
    return PendingCall(call.id, call.name, call.input)


def _record(kind: str, ids: Iterable[str], **more: str) -> ReasoningBlock:
    """A record naming the calls ``ids`` (its payload, JSON, in the block's signature)."""
    return ReasoningBlock("", json.dumps({"calls": list(ids), **more}), id=kind, provider=RECORD)


def _record_of(message: Message) -> ReasoningBlock | None:
    """The record ``message`` ends with, if it is one."""
    content = message.content
    if content:
        last = content[-1]
        if type(last) is ReasoningBlock and last.provider == RECORD:
            return last
    return None


def _ids(record: ReasoningBlock) -> set[str]:
    """The calls a record names (none, for one this tether cannot read)."""
    try:
        ids = json.loads(record.signature or "{}").get("calls", [])
    except (ValueError, AttributeError):
        return set()
    return {i for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()


def hold(
    approval: Approval, message: Message, calls: list[ToolUseBlock]
) -> tuple[Message, list[ToolUseBlock], tuple[PendingCall, ...]]:
    """A reply's message as stored (with the pause record when some calls wait under
    ``approval``), the calls that run now, and those that wait. A call whose arguments could
    not be read never runs anyway: it is not held."""
    needs = approver(approval)
    held = [call for call in calls if call.parse_error is None and needs(call)]
    if not held:
        return message, calls, ()
    ids = [call.id for call in held]
    marked = Message(message.role, (*message.content, _record(_PAUSE, ids)), message.name)
    waiting = set(ids)
    now = [call for call in calls if call.id not in waiting]
    return marked, now, tuple(pending_call(call) for call in held)


@dataclass(frozen=True, slots=True)
class OpenCalls:
    """The calls of a history's last reply that have no result: ``pending`` wait for a person;
    ``dangling`` were left open by a run that stopped (or a resume that did, after approving
    them). ``answered`` and ``approved`` are the reply's calls already decided; ``by`` names
    the agent that made the reply, where a handoff had the run say so."""

    pending: tuple[ToolUseBlock, ...]
    dangling: tuple[ToolUseBlock, ...]
    answered: frozenset[str] = frozenset()
    approved: frozenset[str] = frozenset()
    by: str | None = None


def _after_reply(message: Message, answered: set[str], approved: set[str]) -> bool:
    """Note the results and approvals ``message`` holds; False if it holds anything else (it
    is not part of answering the reply before it)."""
    for block in message.content:
        kind = type(block)
        if kind is ToolResultBlock:
            answered.add(block.tool_use_id)  # type: ignore[union-attr]
        elif kind is ReasoningBlock and block.provider == RECORD:  # type: ignore[union-attr]
            approved.update(_ids(block))  # type: ignore[arg-type]
        else:
            return False
    return message.role == "user"


def open_calls(history: Sequence[Message]) -> OpenCalls | None:
    """The last reply's calls without a result, or None when there are none (for most
    histories, a look at the last message tells)."""
    answered: set[str] = set()
    approved: set[str] = set()
    at = len(history) - 1
    while at >= 0 and history[at].role != "assistant":
        if not _after_reply(history[at], answered, approved):
            return None
        at -= 1
    calls = history[at].tool_uses if at >= 0 else []
    unanswered = [call for call in calls if call.id not in answered]
    if not unanswered:
        return None
    held = _held(history[at]) - approved
    return OpenCalls(
        tuple(call for call in unanswered if call.id in held),
        tuple(call for call in unanswered if call.id not in held),
        frozenset(answered),
        frozenset(approved),
        history[at].name,
    )


def _held(reply: Message) -> set[str]:
    """The ids of the calls ``reply``'s pause record says wait for a person."""
    record = _record_of(reply)
    return _ids(record) if record is not None and record.id == _PAUSE else set()


def pending(history: Sequence[Message]) -> tuple[PendingCall, ...]:
    """The calls that wait for a person in a stored history (none if it is not paused)."""
    opened = open_calls(history)
    return () if opened is None else tuple(pending_call(call) for call in opened.pending)


def without_record(message: Message) -> Message | None:
    """``message`` as the model sees it: its approval record left out (None when that is all
    it holds)."""
    if _record_of(message) is None:
        return message
    rest = message.content[:-1]
    return Message(message.role, rest, message.name) if rest else None


@dataclass(frozen=True, slots=True)
class Decisions:
    """What a person decided on pending calls: the ids ``approve``d, and ``deny``'s ids with
    the reason each was refused."""

    approve: frozenset[str] = frozenset()
    deny: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, approve: Iterable[str], deny: Mapping[str, str] | None) -> Decisions:
        """The decisions as given to ``resume``: ids, each decided once."""
        approved = _call_ids(approve)
        denied = _reasons({} if deny is None else deny)
        if len(set(approved)) != len(approved):
            twice = sorted({i for i in approved if approved.count(i) > 1})
            raise ValueError(f"tool call(s) approved twice: {', '.join(twice)}")
        both = sorted(set(approved) & set(denied))
        if both:
            raise ValueError(f"tool call(s) both approved and denied: {', '.join(both)}")
        return cls(frozenset(approved), denied)

    def check(self, opened: OpenCalls | None) -> OpenCalls:
        """``opened``, if every decided call is pending in it; else a ``ValueError`` that
        names one that is not."""
        waiting = set() if opened is None else {call.id for call in opened.pending}
        for id in sorted(self.approve) + list(self.deny):
            if id not in waiting:
                raise ValueError(_not_pending(id, opened))
        if opened is None or not waiting:
            raise ValueError(
                "nothing in this session waits for approval: there is no run to resume"
            )
        return opened

    def denial(self, call: ToolUseBlock) -> ToolResultBlock:
        """The result a denied call gets."""
        return ToolResultBlock(call.id, f"Tool call denied: {self.deny[call.id]}", True)


def _call_ids(approve: object) -> list[str]:
    if isinstance(approve, str | bytes) or not isinstance(approve, Iterable):
        raise TypeError(f"approve takes a list of tool call ids, got {approve!r}")
    ids = list(approve)
    for id in ids:
        if not isinstance(id, str):
            raise TypeError(f"approve takes tool call ids (strings), got {id!r}")
    return ids


def _reasons(deny: object) -> dict[str, str]:
    if not isinstance(deny, Mapping):
        raise TypeError(f"deny takes a mapping of tool call id to reason, got {deny!r}")
    for id, reason in deny.items():
        if not isinstance(id, str) or not isinstance(reason, str):
            raise TypeError(f"deny maps tool call ids to reasons (strings), got {id!r}: {reason!r}")
    return dict(deny)


def _not_pending(id: str, opened: OpenCalls | None) -> str:
    if opened is not None and id in opened.answered:
        return f"tool call {id!r} already has a result: it is not waiting for approval"
    if opened is not None and id in opened.approved:
        return f"tool call {id!r} was already approved"
    return f"no tool call {id!r} waits for approval in this session"


def decision_message(
    approved: Sequence[ToolUseBlock], denials: Sequence[ToolResultBlock]
) -> Message:
    """What a resume stores before any approved call runs: the denied calls' results and the
    record naming the approved calls, marked with a token of this resume's own: another
    resume's decisions never read as the same append (a store may take an identical append at
    a stale position for a retry of its own)."""
    token = os.urandom(8).hex()
    return Message("user", (*denials, _record(_APPROVED, [c.id for c in approved], resume=token)))


@dataclass(frozen=True, slots=True)
class Reopening:
    """What opening a history whose last reply has open calls does, worked out before anything
    is stored: calls a stopped run left open to answer as interrupted (``dangling``), the
    person's decisions (``approved`` calls to run, ``denied`` ones and their ``denials``), and
    the calls that still wait (the run pauses again)."""

    dangling: tuple[ToolUseBlock, ...] = ()
    approved: tuple[ToolUseBlock, ...] = ()
    denied: tuple[ToolUseBlock, ...] = ()
    denials: tuple[ToolResultBlock, ...] = ()
    waiting: tuple[PendingCall, ...] = ()


def reopening(opened: OpenCalls | None, decisions: Decisions | None) -> Reopening:
    """How to open a history whose last reply has ``opened`` calls, under a resume's
    ``decisions`` (None for a plain run); a ``ValueError`` for a decision it cannot take."""
    if decisions is None:
        if opened is None:
            return Reopening()
        return Reopening(opened.dangling, waiting=tuple(map(pending_call, opened.pending)))
    checked = decisions.check(opened)
    calls = checked.pending  # in the reply's order
    denied = tuple(call for call in calls if call.id in decisions.deny)
    return Reopening(
        checked.dangling,
        tuple(call for call in calls if call.id in decisions.approve),
        denied,
        tuple(map(decisions.denial, denied)),
        tuple(
            pending_call(c) for c in calls if c.id not in decisions.approve | decisions.deny.keys()
        ),
    )
