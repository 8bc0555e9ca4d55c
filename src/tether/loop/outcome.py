"""How a run ends: its answer, found after a reply whose calls did not run (``settle``: a typed
answer read first), or the calls it pauses for; and its last events (``close``)."""

from __future__ import annotations

from ..events import Error, PendingCall, StreamEvent, session_end
from ..messages import Message
from ..types import StopReason
from .output import OutputCheck
from .state import RunState
from .steps import ANSWERS, failure_stop, stop_error

__all__ = ["Outcome"]


class Outcome:
    """One run's outcome so far: its ``answer`` (None while the run goes on), the calls it
    ends ``held`` for, whether a reply cut off at max_tokens went on (``cut_short``, once), and
    a typed run's ``output`` check."""

    __slots__ = ("answer", "cut_short", "held", "output")

    def __init__(self, output: OutputCheck | None) -> None:
        self.answer: StopReason | None = None
        self.held: tuple[PendingCall, ...] = ()
        self.cut_short = False
        self.output = output

    def pause(self, held: tuple[PendingCall, ...]) -> None:
        """The run ends paused, waiting for ``held`` too (after this iteration's other calls)."""
        self.held, self.answer = (*self.held, *held), StopReason.PAUSED

    def settle(
        self, skipped: bool, reason: StopReason, state: RunState, retries: int
    ) -> Message | None:
        """After a reply whose calls (if ``skipped``) did not run: go on, take the answer, or
        raise the error that ends the run. A typed answer is read into ``state.output``; an
        invalid one gives the message that sends it back (the run goes on) until ``retries``
        are spent (then ``OutputValidationError``)."""
        if self.held:  # the reply's other calls, if any, ran: the run ends paused
            return None
        if skipped and reason is StopReason.MAX_TOKENS and not self.cut_short:
            self.cut_short = True  # the model may go on from the results, once
            return None
        if not skipped and reason is StopReason.PAUSE_TURN:
            return None
        if reason not in ANSWERS:
            raise stop_error(reason, state.final_text)
        self.answer = StopReason.END_TURN if reason is StopReason.TOOL_USE else reason
        if self.output is None:
            return None
        repair = self.output.read(state, retries)
        if repair is not None:
            self.answer = None
        return repair

    def close(self, state: RunState, error: BaseException | None) -> list[StreamEvent]:
        """Record on ``state`` how the run ended; its last events (``Error`` if failed, then
        the end)."""
        stop = failure_stop(error) if error is not None else self.answer or StopReason.END_TURN
        state.stop_reason, state.error, state.done = stop, error, True
        end = state.end = session_end(stop, state.usage, error, state.iterations, self.held)
        return [end] if error is None else [Error(error), end]
