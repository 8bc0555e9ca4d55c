"""Approval that outlives the process: which calls wait for a person, and how the stored history
says so, so that any process (and any store) can tell.

A run whose reply asks for a call ``Agent(approval=...)`` names stores that reply with a *pause
record* naming the held calls, and leaves them unanswered. ``resume`` stores a *decision record*
(the denied calls' results, the ids it approved and a token of its own) before an approved call
runs: one conflict-checked append, so of two resumes at once only one runs a call. A record is a
``ReasoningBlock`` whose provider is ``RECORD`` and whose id says which record it is, the last
block of its message: every store keeps it as it keeps reasoning (``stores.jsonforms``), no wire
format sends another provider's reasoning, and the loop leaves records out of what the model
sees (``tether.loop.history_view``). Which calls are pending is then read from the stored messages
alone: the calls of the last reply that its pause record names, with neither a result nor an
approval after it (``open_calls``).

A call that waits for the user's input (``NeedsInput``: its server asked, and nothing in the
process could answer) is named by an *input record* instead, the last block of the message that
stores the reply's other results: its questions and the state it goes on from. A resume's
answers are checked against the questions, then stored in the decision record as approvals are;
a call asked again after that is named by a later input record, which wins.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..events import PendingCall
from ..messages import Message, ReasoningBlock, ToolResultBlock, ToolUseBlock
from ..tools.needs_input import Answered, NeedsInput
from ..types import Elicitation

__all__ = [
    "RECORD",
    "Approval",
    "Asking",
    "Decisions",
    "OpenCalls",
    "Reopening",
    "approver",
    "asked_message",
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
_APPROVED = "decided"  # the record of a resume: the calls it names were approved (or answered)
_ASKED = "asked"  # the record of calls that wait for the user's input, after the reply's results

Asking: TypeAlias = tuple[tuple[Elicitation, ...], Mapping[str, Any]]
"""A call that waits for the user's input: its questions, and the state it goes on from."""


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


def pending_call(call: ToolUseBlock, asks: tuple[Elicitation, ...] = ()) -> PendingCall:
    """``call`` as the caller sees a call that waits (for input, if it ``asks``)."""
    return PendingCall(call.id, call.name, call.input, asks)


def _record(kind: str, ids: Iterable[str], **more: Any) -> ReasoningBlock:
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


def asked_message(
    results: Sequence[ToolResultBlock], asked: Sequence[tuple[ToolUseBlock, NeedsInput]]
) -> Message:
    """What a run stores when calls wait for the user's input: the reply's other ``results``
    and the input record naming the calls ``asked``, their questions and state."""
    from ..stores.jsonforms import elicitation_to_dict  # noqa: PLC0415 - only when a run pauses so

    asks = {call.id: [elicitation_to_dict(a) for a in signal.asks] for call, signal in asked}
    state = {call.id: signal.state for call, signal in asked}
    record = _record(_ASKED, [call.id for call, _ in asked], asks=asks, state=state)
    return Message("user", (*results, record))


def _asking(record: ReasoningBlock) -> dict[str, Asking]:
    """The calls an input record names, with their questions and state (none, for one this
    tether cannot read)."""
    from ..stores.jsonforms import elicitation_from_dict  # noqa: PLC0415 - only for a paused history

    try:
        payload = json.loads(record.signature or "{}")
        asks, state = payload.get("asks", {}), payload.get("state", {})
        return {
            id: (tuple(map(elicitation_from_dict, asks[id])), state.get(id, {}))
            for id in payload.get("calls", [])
            if isinstance(id, str)
        }
    except (ValueError, AttributeError, KeyError, TypeError):
        return {}


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
    """The calls of a history's last reply that have no result: ``pending`` wait for a person
    (for the user's input, those in ``asking``, with their questions and state); ``dangling``
    were left open by a run that stopped (or a resume that did, after deciding them).
    ``answered`` and ``approved`` are the reply's calls already decided; ``by`` names the
    agent that made the reply, where a handoff had the run say so."""

    pending: tuple[ToolUseBlock, ...]
    dangling: tuple[ToolUseBlock, ...]
    answered: frozenset[str] = frozenset()
    approved: frozenset[str] = frozenset()
    by: str | None = None
    asking: Mapping[str, Asking] = field(default_factory=dict)

    def waiting(self, call: ToolUseBlock) -> PendingCall:
        """A pending ``call`` as the caller sees it (with its questions, if it asks)."""
        asking = self.asking.get(call.id)
        return pending_call(call, () if asking is None else asking[0])


def _after_reply(
    message: Message, answered: set[str], approved: set[str], asking: dict[str, Asking]
) -> bool:
    """Note the results, approvals and questions ``message`` holds (read from the last message
    back: a question asked after a decision still waits); False if it holds anything else (it
    is not part of answering the reply before it)."""
    for block in message.content:
        kind = type(block)
        if kind is ToolResultBlock:
            answered.add(block.tool_use_id)  # type: ignore[union-attr]
        elif kind is ReasoningBlock and block.provider == RECORD:  # type: ignore[union-attr]
            if block.id == _ASKED:  # type: ignore[union-attr]
                for id, asked in _asking(block).items():  # type: ignore[arg-type]
                    if id not in approved:
                        asking.setdefault(id, asked)
            else:
                approved.update(_ids(block))  # type: ignore[arg-type]
        else:
            return False
    return message.role == "user"


def open_calls(history: Sequence[Message]) -> OpenCalls | None:
    """The last reply's calls without a result, or None when there are none (for most
    histories, a look at the last message tells)."""
    answered: set[str] = set()
    approved: set[str] = set()
    asking: dict[str, Asking] = {}
    at = len(history) - 1
    while at >= 0 and history[at].role != "assistant":
        if not _after_reply(history[at], answered, approved, asking):
            return None
        at -= 1
    calls = history[at].tool_uses if at >= 0 else []
    unanswered = [call for call in calls if call.id not in answered]
    if not unanswered:
        return None
    held = (_held(history[at]) - approved) | asking.keys()
    return OpenCalls(
        tuple(call for call in unanswered if call.id in held),
        tuple(call for call in unanswered if call.id not in held),
        frozenset(answered),
        frozenset(approved),
        history[at].name,
        {id: asked for id, asked in asking.items() if id not in answered},
    )


def _held(reply: Message) -> set[str]:
    """The ids of the calls ``reply``'s pause record says wait for a person."""
    record = _record_of(reply)
    return _ids(record) if record is not None and record.id == _PAUSE else set()


def pending(history: Sequence[Message]) -> tuple[PendingCall, ...]:
    """The calls that wait for a person in a stored history (none if it is not paused)."""
    opened = open_calls(history)
    return () if opened is None else tuple(map(opened.waiting, opened.pending))


def without_record(message: Message) -> Message | None:
    """``message`` as the model sees it: its approval record left out (None when that is all
    it holds)."""
    if _record_of(message) is None:
        return message
    rest = message.content[:-1]
    return Message(message.role, rest, message.name) if rest else None


@dataclass(frozen=True, slots=True)
class Decisions:
    """What a person decided on pending calls: the ids ``approve``d, ``deny``'s ids with the
    reason each was refused, and ``answers`` to the questions of calls that wait for input (by
    call id, then by question key: the answer, or None to decline)."""

    approve: frozenset[str] = frozenset()
    deny: Mapping[str, str] = field(default_factory=dict)
    answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        approve: Iterable[str],
        deny: Mapping[str, str] | None,
        answers: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Decisions:
        """The decisions as given to ``resume``: ids, each decided once."""
        approved = _call_ids(approve)
        denied = _reasons({} if deny is None else deny)
        given = _answers({} if answers is None else answers)
        if len(set(approved)) != len(approved):
            twice = sorted({i for i in approved if approved.count(i) > 1})
            raise ValueError(f"tool call(s) approved twice: {', '.join(twice)}")
        both = sorted(set(approved) & set(denied))
        if both:
            raise ValueError(f"tool call(s) both approved and denied: {', '.join(both)}")
        return cls(frozenset(approved), denied, given)

    def check(self, opened: OpenCalls | None) -> OpenCalls:
        """``opened``, if every decided call is pending in it (approvals and denials for calls
        held for approval, answers for calls that wait for input); else a ``ValueError`` that
        names one that is not."""
        waiting = set() if opened is None else {call.id for call in opened.pending}
        asking = set() if opened is None else waiting & opened.asking.keys()
        for id in sorted(self.approve) + list(self.deny):
            if id in asking:
                raise ValueError(
                    f"tool call {id!r} waits for input, not for approval: answer its "
                    "questions with answers= (None declines one)"
                )
            if id not in waiting:
                raise ValueError(_not_pending(id, opened))
        for id in self.answers:
            if id not in asking:
                raise ValueError(_not_asking(id, opened))
        if opened is None or not waiting:
            raise ValueError(
                "nothing in this session waits for approval or input: there is no run to resume"
            )
        return opened

    def denial(self, call: ToolUseBlock) -> ToolResultBlock:
        """The result a denied call gets."""
        return ToolResultBlock(call.id, f"Tool call denied: {self.deny[call.id]}", True)

    def answered(self, call: ToolUseBlock, asking: Asking) -> Answered:
        """The answers to ``call``'s questions as sent (each checked against what was asked,
        the schema's defaults filled in); a ``ValueError`` that says what does not fit."""
        from ..mcp.answers import Unanswerable, accepted  # noqa: PLC0415 - only when answering

        asks, state = asking
        given = self.answers[call.id]
        keys = [ask.key or "" for ask in asks]
        unknown = sorted(str(key) for key in given if key not in keys)
        if unknown:
            raise ValueError(
                f"tool call {call.id!r} was not asked {', '.join(unknown)} "
                f"(its questions: {', '.join(keys)})"
            )
        missing = [key for key in keys if key not in given]
        if missing:
            raise ValueError(
                f"answers for tool call {call.id!r} leave out {', '.join(missing)}: answer "
                "each question (None declines one)"
            )
        content: dict[str, Mapping[str, Any] | None] = {}
        for key, ask in zip(keys, asks, strict=True):
            try:
                content[key] = accepted(
                    ask, given[key], ask.server, f"answers[{call.id!r}][{key!r}]"
                )
            except Unanswerable as exc:
                raise ValueError(str(exc)) from None
        return Answered(content, state)


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


def _answers(answers: object) -> dict[str, Mapping[str, Any]]:
    if not isinstance(answers, Mapping):
        raise TypeError(f"answers maps tool call ids to {{question key: answer}}, got {answers!r}")
    for id, given in answers.items():
        if not isinstance(id, str) or not isinstance(given, Mapping):
            raise TypeError(
                "answers maps tool call ids to {question key: answer (a dict, or None to "
                f"decline)}}, got {id!r}: {given!r}"
            )
    return dict(answers)


def _not_asking(id: str, opened: OpenCalls | None) -> str:
    if opened is not None and id in opened.answered:
        return f"tool call {id!r} already has a result: it is not waiting for input"
    return f"no tool call {id!r} waits for input in this session"


def _not_pending(id: str, opened: OpenCalls | None) -> str:
    if opened is not None and id in opened.answered:
        return f"tool call {id!r} already has a result: it is not waiting for approval"
    if opened is not None and id in opened.approved:
        return f"tool call {id!r} was already approved"
    return f"no tool call {id!r} waits for approval in this session"


def decision_message(
    approved: Sequence[ToolUseBlock],
    denials: Sequence[ToolResultBlock],
    answered: Sequence[tuple[ToolUseBlock, Answered]] = (),
) -> Message:
    """What a resume stores before any approved (or answered) call runs: the denied calls'
    results and the record naming the approved and answered calls (with the answers), marked
    with a token of this resume's own: another resume's decisions never read as the same
    append (a store may take an identical append at a stale position for a retry of its
    own)."""
    token = os.urandom(8).hex()
    ids = [c.id for c in approved] + [c.id for c, _ in answered]
    more: dict[str, Any] = {"resume": token}
    if answered:
        more["answers"] = {c.id: dict(a.answers) for c, a in answered}
    return Message("user", (*denials, _record(_APPROVED, ids, **more)))


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
    answered: tuple[tuple[ToolUseBlock, Answered], ...] = ()


def reopening(opened: OpenCalls | None, decisions: Decisions | None) -> Reopening:
    """How to open a history whose last reply has ``opened`` calls, under a resume's
    ``decisions`` (None for a plain run); a ``ValueError`` for a decision it cannot take."""
    if decisions is None:
        if opened is None:
            return Reopening()
        return Reopening(opened.dangling, waiting=tuple(map(opened.waiting, opened.pending)))
    checked = decisions.check(opened)
    calls = checked.pending  # in the reply's order
    denied = tuple(call for call in calls if call.id in decisions.deny)
    answers = decisions.answers
    decided = decisions.approve | decisions.deny.keys() | answers.keys()
    return Reopening(
        checked.dangling,
        tuple(call for call in calls if call.id in decisions.approve),
        denied,
        tuple(map(decisions.denial, denied)),
        tuple(checked.waiting(c) for c in calls if c.id not in decided),
        tuple((c, decisions.answered(c, checked.asking[c.id])) for c in calls if c.id in answers),
    )
