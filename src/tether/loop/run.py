"""The agent loop: the one implementation of "call the model, dispatch tools, append, repeat".

A ``Run`` holds one run's state; ``Run.events`` is the run itself (see there). What a run may
add is a step with its own state that the loop calls through one or two methods, held only
when the agent asks for it (None otherwise: one attribute check): compaction (``compact``),
handoffs (``Handoffs``), a resume's decisions (``Resume``), limits (``RunBudget``, and
``Repeats`` for repeated calls), typed output (``OutputCheck``); when calls start is the run's
``CallStart``. Every front door configures an agent and runs this. The loop reads the history
once per run and then only appends (``Transcript``), so an iteration costs the same at message
10 and at message 10,000."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..context import Compaction, Compactor
from ..errors import MaxIterationsError, StreamContractError, ToolNotFoundError
from ..events import (
    ContextTrimmed,
    IterationEnd,
    IterationStart,
    StreamEvent,
)
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..tools.needs_input import Answered
from ..tools.selector import read_tools
from ..tools.tool import Tool
from ..transports.base import CompletionTransport
from ..types import StopReason, ToolSpec, Usage
from .approval import Decisions, hold, pending_call
from .call_start import call_start, interrupt, skip
from .compact import compact
from .config import AgentConfig
from .dispatch import ToolDispatcher, dispatcher_for, finished, started
from .handoff import Handoffs, resumer
from .limits import budget_for, linked
from .middleware import Middleware, RunRequest, call_transport, model_chain
from .notices import Repeats, pending_notice, tell
from .offer import Offer
from .outcome import Outcome
from .output import DONE, OutputCheck, OutputSpec, TypedModels
from .reply import ModelSettings, ReplyBuilder, ReplyStream
from .resume import Resume, reopen
from .state import RunState, UserInput
from .steps import (
    DISPATCHABLE,
    Told,
    check_guardrail,
    dispatched,
    messages_to_send,
    next_iteration,
    offer,
)
from .transcript import Transcript

if TYPE_CHECKING:
    from .control import CancellationToken, Steering

__all__ = ["Run"]

_NO_END = "the transport's stream ended without an IterationEnd event"


class Run:
    """One run of the loop: its state, its steps, and the body of one iteration."""

    __slots__ = (
        "agent",
        "budget",
        "cancel",
        "compactor",
        "handoffs",
        "middleware",
        "model",
        "model_chain",
        "offer",
        "outcome",
        "repeats",
        "request",
        "resume",
        "start",
        "state",
        "steering",
        "transcript",
    )

    def __init__(
        self,
        agent: AgentConfig,
        state: RunState,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        middleware: Sequence[Middleware] | None = None,
        output: OutputSpec[Any] | None = None,
        decisions: Decisions | None = None,
    ) -> None:
        self.agent = agent
        self.state = state
        check = None if output is None else OutputCheck(output, TypedModels(agent, output))
        self.outcome = Outcome(check)
        self.model: ModelSettings = agent  # a typed run's is picked each turn (``_prepare``)
        self.transcript = Transcript(state.context, agent.max_tool_result_chars)
        self.offer = Offer()
        self.start = call_start(agent)
        self.steering = steering
        self.middleware = agent.middleware if middleware is None else middleware
        self.request: RunRequest | None = None  # set when middleware sees the run
        self.model_chain = model_chain(self.middleware, call_transport) if self.middleware else None
        limits = agent.limits  # a time limit gets the run a token linked to the caller's
        self.cancel = cancel if limits is None else linked(limits, cancel)
        self.budget = budget_for(limits)  # linked to a delegating run's, if any
        most = None if limits is None else limits.repeated_calls
        self.repeats = None if most is None else Repeats(most)
        self.resume = None if decisions is None else Resume(decisions)
        self.handoffs = Handoffs(agent) if agent.handoffs else None
        policy = agent.context_policy
        self.compactor = Compactor(policy) if type(policy) is Compaction else None

    # -- open and close ---------------------------------------------------------------------------

    def open(self, user_message: UserInput) -> Awaitable[None]:
        """Start the clock of a time limit; read the history, answer what it left open (a
        resume's decisions too: ``reopen``) and add the message, unless calls still wait."""
        if self.budget is not None:
            self.budget.start(self.cancel)
        return reopen(self.transcript, self.outcome, self.resume, user_message, self)

    async def run_approved(
        self,
        calls: Sequence[ToolUseBlock],
        answered: Sequence[tuple[ToolUseBlock, Answered]] = (),
    ) -> None:
        """Run a resume's approved calls as stored, and its ``answered`` ones again with their
        answers; each gets a result (it never runs again), unless it asks again (the run
        pauses again)."""
        dispatcher = self._dispatcher(offer(await read_tools(self.agent.tools))[0], 0)
        parallel = self.agent.execution == "parallel"
        every = [*calls, *(call for call, _ in answered)]
        given = {call.id: answers for call, answers in answered}
        results = await self.transcript.run(dispatcher, every, parallel, given)
        asked = set(dispatcher.waiting or ())
        await self._store_dispatched(dispatcher, results, every)
        assert self.resume is not None
        ran = [(c, r) for c, r in zip(every, results, strict=True) if c.id not in asked]
        self.resume.ran([c for c, _ in ran], [r for _, r in ran])

    def close(self, error: BaseException | None) -> list[StreamEvent]:
        """End the run: record how, and give its last events (``Error`` if failed, then the end)."""
        if self.budget is not None:
            self.budget.stop()
            error = None if error is None else self.budget.instead_of(error)
        return self.outcome.close(self.state, error)

    async def _failed(self, exc: BaseException, reply: ReplyStream | None) -> list[StreamEvent]:
        """The last events of a run ``exc`` ended (a ``reply`` cut short keeps its text; calls it
        started are stopped); raises ``exc`` when it goes on to the caller (a ``BaseException``
        such as cancellation, or max_iterations set to raise)."""
        if self.budget is not None:
            self.budget.stop()
        if reply is not None:
            if type(exc) is StopAsyncIteration:  # the stream ended before its IterationEnd
                exc = StreamContractError(_NO_END)
            try:
                name = None if self.handoffs is None else self.agent.name
                await self.transcript.keep(reply.reply.text(), name)
            except BaseException as later:  # goes on in place of exc, as when the reply raised it
                exc = later
        await self.start.stop()
        if isinstance(exc, Exception):
            closing = self.close(exc)
            if not isinstance(exc, MaxIterationsError) or self.agent.on_max_iterations != "raise":
                return closing
        elif not self.state.done:  # closed or cancelled from outside
            self.state.stop_reason, self.state.done = StopReason.CANCELLED, True
        try:
            raise exc
        finally:
            del exc  # its traceback holds this frame: no cycle through it (as Future.result)

    # -- the run ----------------------------------------------------------------------------------

    async def events(self, user_message: UserInput) -> AsyncGenerator[StreamEvent, None]:
        """The whole run as events: open, one pass of the body per iteration, close.

        One generator per run, not one per iteration or per part, keeps an iteration as cheap as
        in a hand-written loop; each line of the body is one step. A door that drives the run an
        iteration at a time stops reading after an iteration's last event: nothing of the next
        iteration (not even storing the results) runs until it reads on.
        """
        reply = None  # the reply being streamed, if any (a failed one keeps its text)
        try:
            await self.open(user_message)
            while self.outcome.answer is None:
                iteration = next_iteration(self.state, self.agent, self.cancel)
                while pending_notice(self.handoffs, self.steering, self.repeats):
                    yield await tell(self.handoffs, self.steering, self.transcript, self.repeats)
                yield IterationStart(iteration)
                table, specs, sent, told = await self._prepare(iteration)
                if told is not None:
                    yield told
                watch = self.start.watching(self._dispatcher, table, iteration)
                reply = replying = ReplyStream(self, sent, specs, iteration, watch)
                try:  # the model's events, read here: no generator between the stream and the run
                    event = await replying.next()  # a stream that ends here fails (``_failed``)
                    while type(event) is not IterationEnd:
                        replying.reply.add(event)
                        yield event
                        event = await replying.next()
                    await replying.finish(event)
                finally:
                    await replying.close()
                reply = None
                end, calls = await self._store_answer(replying.reply, iteration)
                try:
                    yield end
                except BaseException:  # closed before dispatch began: stored calls need results
                    await interrupt(self.start, calls, self.transcript)
                    raise
                if not dispatched(calls, end.stop_reason):
                    for event in await skip(self.start, calls, end.stop_reason, self.transcript):
                        yield event
                    await self._settle(bool(calls), end.stop_reason)
                    continue
                dispatcher = self.start.dispatcher(self._dispatcher, table, iteration)
                results: list[ToolResultBlock | None] = [None] * len(calls)
                try:
                    running = self.start.tasks(dispatcher, calls, results)
                    if running is not None:
                        async with aclosing(running) as each:
                            async for event in each:
                                yield event
                    else:
                        for i, block in enumerate(calls):
                            yield started(block)
                            results[i] = result = await dispatcher.execute(block)
                            if block.id not in dispatcher.waiting:  # type: ignore[operator]  # a run's: a dict
                                yield finished(block, result)
                except BaseException:  # whatever happens, every stored call gets a result
                    await self.transcript.interrupted(calls, results)
                    raise
                await self._store_dispatched(dispatcher, results, calls)
            closing = self.close(None)
        except BaseException as exc:
            closing = await self._failed(exc, reply)
        for event in closing:
            yield event

    async def _prepare(
        self, iteration: int
    ) -> tuple[dict[str, Tool], list[ToolSpec], Sequence[Message], Told | None]:
        """This iteration's tools (by name, and as sent), the messages to send (checked by the
        input guardrails) and the event that says what the context policy did, if anything."""
        agent, transcript = self.agent, self.transcript
        told: Told | None = None
        if self.compactor is not None:
            told = await compact(self.compactor, transcript, self, self.spend, iteration)
        extra = () if self.handoffs is None else self.handoffs.tools
        tools = await self.offer.read(agent, transcript.history, extra)
        sent, trim = messages_to_send(agent, transcript.history, iteration)
        for guardrail in agent.input_guardrails:
            await check_guardrail(guardrail, sent, "input")
        if trim is not None:
            told = ContextTrimmed(trim.removed, len(sent))
        table, specs = self.offer.built(tools)
        if self.outcome.output is not None:
            self.model = self.outcome.output.model(bool(specs))
        return table, specs, sent, told

    def _dispatcher(self, table: dict[str, Tool], iteration: int) -> ToolDispatcher:
        """The dispatcher of an iteration's calls: made once for the tools on offer."""
        made = self.offer.made
        if made is None or made.tools is not table or made.run is not self.request:
            made = self.offer.made = dispatcher_for(
                self.agent,
                table,
                iteration,
                self.cancel,
                middleware=self.middleware,
                run=self.request,
                usage=self.state.add_usage,
                budget=self.budget,
                notes=self.state.tool_notes(),
            )
            made.waiting = {}  # a call that waits for the user's input pauses the run
        made.iteration = iteration
        if made.unknown:
            made.unknown = []
        return made

    def spend(self, usage: Usage, model: str | None, transport: CompletionTransport) -> None:
        """Count a model call's usage in the run's total and its limits."""
        self.state.usage = self.state.usage + usage
        if self.budget is not None:
            self.budget.charge_reply(usage, model, transport)

    async def _store_answer(
        self, reply: ReplyBuilder, iteration: int
    ) -> tuple[IterationEnd, list[ToolUseBlock]]:
        """Count the reply's usage, check the answer with the output guardrails, store it (its
        calls that wait for a person held: the run ends paused after this iteration); the
        reply's end event (numbered as this iteration) and the calls to run."""
        end = reply.end
        assert end is not None
        state = self.state  # as ``spend``, inline: once per reply
        state.usage = state.usage + end.usage
        if self.budget is not None:
            self.budget.charge_reply(end.usage, end.model, self.model.transport)
        message, calls = reply.build()
        if message is not None:
            if self.handoffs is not None:  # say who answered
                message = self.handoffs.named(message, self.agent)
            for guardrail in self.agent.output_guardrails:
                await check_guardrail(guardrail, message, "output")
            if self.agent.approval is not None and calls and end.stop_reason in DISPATCHABLE:
                message, calls, held = hold(self.agent.approval, message, calls)
                if held:
                    self.outcome.pause(held)
            await self.transcript.append(message)
            if self.compactor is not None:
                self.compactor.replied(end.usage, len(self.transcript.history))
        state.final_text = reply.text()
        numbered = IterationEnd(
            iteration, end.stop_reason, end.usage, end.raw_stop_reason, end.model
        )
        return numbered, calls

    async def _store_dispatched(
        self,
        dispatcher: ToolDispatcher,
        results: list[ToolResultBlock | None],
        calls: Sequence[ToolUseBlock],
    ) -> None:
        """Store the finished calls' results (a typed run notes the calls; calls that wait for
        the user's input pause the run); a transfer goes on as its agent; a limit passed or an
        unknown tool (per the agent) ends the run."""
        if dispatcher.waiting:
            await self._ask(dispatcher, results, calls)
        else:
            await self.transcript.append_results([r for r in results if r is not None])
        if self.outcome.output is not None:
            self.outcome.output.ran(calls)
        if self.handoffs is not None:
            target = self.handoffs.taken(self.agent)
            if target is not None:
                self._become(target)
        if self.budget is not None:
            self.budget.check()
        if self.repeats is not None:
            self.repeats.check(calls, results)
        if dispatcher.unknown and self.agent.unknown_tool == "raise":
            names = ", ".join(dispatcher.unknown)
            raise ToolNotFoundError(f"the model called unknown tool(s): {names}")

    async def _ask(
        self,
        dispatcher: ToolDispatcher,
        results: list[ToolResultBlock | None],
        calls: Sequence[ToolUseBlock],
    ) -> None:
        """Store the other calls' results and the record of those that wait for the user's
        input, in one append; the run ends paused (``RunPaused`` names their questions)."""
        waiting, dispatcher.waiting = dispatcher.waiting or {}, {}
        asked = [(call, waiting[call.id]) for call in calls if call.id in waiting]
        kept = [
            r for c, r in zip(calls, results, strict=True) if r is not None and c.id not in waiting
        ]
        await self.transcript.append_asked(kept, asked)
        self.outcome.pause(tuple(pending_call(call, signal.asks) for call, signal in asked))

    def _become(self, agent: AgentConfig) -> None:
        """Go on as ``agent`` (a handoff's target): its prompt, model, tools and handoffs. The
        history, the iteration count, the limits and the middleware (a session's hooks, say,
        wrap the whole run) stay the run's."""
        assert self.handoffs is not None
        self.agent, self.offer, self.start = agent, Offer(), call_start(agent)
        self.model = agent
        output = self.outcome.output
        if output is not None:
            output.models = TypedModels(agent, output.spec)
        self.transcript.limit = agent.max_tool_result_chars
        self.handoffs.offer(agent)

    def reread(self, history: Sequence[Message]) -> None:
        """A run that goes on from a stored history without a new message: its repeated calls
        so far (``Limits(repeated_calls=)``), read from ``history``."""
        if self.repeats is not None:
            self.repeats.reread(history)

    def resume_as(self, name: str) -> None:
        """A resume goes on as the agent that made the paused reply (its tools run the calls)."""
        if name != self.agent.name:
            self._become(resumer(self.agent, name))

    def _settle(self, skipped: bool, reason: StopReason) -> Awaitable[None]:
        """After a reply whose calls (if ``skipped``) did not run: a limit passed ends the run,
        else its outcome settles (``Outcome.settle``); the awaitable stores a typed answer's
        repair, if it needs one (else DONE)."""
        if self.budget is not None:
            self.budget.check()
        repair = self.outcome.settle(skipped, reason, self.state, self.agent.output_retries)
        if repair is None:
            return DONE
        if self.repeats is not None:  # a message to the model, as the user's: counted afresh
            self.repeats.forget()
        return self.transcript.append(repair)
