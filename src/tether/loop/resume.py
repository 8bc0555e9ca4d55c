"""Opening a run on its stored history (``reopen``), and a resume's step (``Agent.resume``): the
person's decisions on the calls a paused run left waiting, stored in one conflict-checked append
before an approved call runs, and the events of the calls it decided, given before the run's own
(``tether.loop.approval`` has the records)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import aclosing
from typing import Protocol

from ..context import load_context
from ..events import StreamEvent
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..tools.needs_input import Answered
from ..tools.results import interrupted_result
from .approval import Decisions, Reopening, decision_message, reopening
from .dispatch import finished
from .outcome import Outcome
from .state import UserInput
from .steps import message_of, ran
from .transcript import Transcript

__all__ = ["Reopened", "Resume", "reopen"]


class Reopened(Protocol):
    """What opening a run asks of it (the loop's ``Run`` is one): go on as the agent that made a
    paused reply, read what a run that goes on without a new message did so far (``reread``),
    and run a resume's approved calls."""

    def resume_as(self, name: str) -> None: ...
    def reread(self, history: Sequence[Message]) -> None: ...
    def run_approved(
        self,
        calls: Sequence[ToolUseBlock],
        answered: Sequence[tuple[ToolUseBlock, Answered]] = (),
    ) -> Awaitable[None]: ...


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
        await transcript.store.append(decision_message(plan.approved, plan.denials, plan.answered))
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


async def reopen(
    transcript: Transcript,
    outcome: Outcome,
    resume: Resume | None,
    user_message: UserInput,
    run: Reopened,
) -> None:
    """Open the run's history: what its last reply left open and a resume's decisions checked
    (else ``ValueError``, nothing stored), calls left open answered as interrupted, decisions
    stored and approved calls run, answered ones again with their answers
    (``run.run_approved``, as the agent that made the reply: ``run.resume_as``), then the
    user's message, unless calls still wait (the run pauses)."""
    history = await load_context(transcript.store)
    opened = transcript.opened(history)
    if user_message is None:  # the run goes on from its stored history: what it did counts
        run.reread(history)
    if opened is None and resume is None:
        if user_message is not None:
            await transcript.append(message_of(user_message))
        return
    plan = reopening(opened, None if resume is None else resume.decisions)
    if resume is not None and opened is not None and opened.by is not None:
        run.resume_as(opened.by)
    if plan.dangling:
        await transcript.append_results(list(map(interrupted_result, plan.dangling)))
    if resume is not None and (plan.approved or plan.denied or plan.answered):
        await resume.decide(plan, transcript)
        if plan.approved or plan.answered:
            await run.run_approved(plan.approved, plan.answered)
    if plan.waiting:
        outcome.pause(plan.waiting)
    elif user_message is not None:
        await transcript.append(message_of(user_message))
