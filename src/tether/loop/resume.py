"""A resume's step (``Agent.resume``): the person's decisions on the calls a paused run left
waiting, stored in one conflict-checked append before an approved call runs, and the events of
the calls it decided, given before the run's own (``tether.loop.approval`` has the records)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing

from ..events import StreamEvent
from ..messages import Message, ToolResultBlock, ToolUseBlock
from .approval import Decisions, OpenCalls, Reopening, decision_message, reopening
from .dispatch import finished
from .steps import ran
from .transcript import Transcript

__all__ = ["Resume", "plan"]


class Resume:
    """One resume: its ``decisions``, and the events of the calls it ``decided`` so far."""

    __slots__ = ("decided", "decisions")

    def __init__(self, decisions: Decisions) -> None:
        self.decisions = decisions
        self.decided: tuple[StreamEvent, ...] = ()

    async def decide(self, plan: Reopening, transcript: Transcript) -> None:
        """Store the decisions in one append (refused with ``ConflictError`` if another writer,
        a second resume say, wrote first); the denied calls' events. The approved calls run
        next (``ran``)."""
        await transcript.store.append(decision_message(plan.approved, plan.denials))
        if plan.denials:
            transcript.show(Message("user", plan.denials))
        self.decided += tuple(map(finished, plan.denied, plan.denials))

    def ran(self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock | None]) -> None:
        """Note the events of the approved calls, once they ran and their results are stored."""
        self.decided += ran(calls, results)

    async def events(
        self, events: AsyncGenerator[StreamEvent, None]
    ) -> AsyncGenerator[StreamEvent, None]:
        """The run's ``events``, the decided calls' events first (once they ran: the run's
        first event comes after its opening)."""
        async with aclosing(events) as each:
            async for event in each:
                for earlier in self.decided:
                    yield earlier
                self.decided = ()
                yield event


def plan(opened: OpenCalls | None, resume: Resume | None) -> Reopening:
    """What opening a history with ``opened`` calls does, under ``resume``'s decisions if any
    (``ValueError`` for a decision it cannot take, before anything is stored)."""
    return reopening(opened, None if resume is None else resume.decisions)
