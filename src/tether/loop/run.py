"""The agent loop: the one implementation of "call the model, dispatch tools, append, repeat".

A ``Run`` holds one run's state; ``Run.events`` is the run itself (see there). What a run may
add is a step with its own state that the loop calls through one or two methods, held only
when the agent asks for it (None otherwise: one attribute check): compaction (``compact``),
handoffs (``Handoffs``), a resume's decisions (``Resume``), limits (``RunBudget``), typed output
(``OutputCheck``); when calls start is the run's ``CallStart``. Every front door configures an
agent and runs this. The loop reads the history once per run and then only appends
(``Transcript``), so an iteration costs the same at message 10 and at message 10,000."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..context import Compaction, Compactor
from ..errors import MaxIterationsError, RunCancelled, ToolNotFoundError
from ..events import (
    Compacted,
    CompactionFailed,
    ContextTrimmed,
    Error,
    Handoff,
    IterationEnd,
    IterationStart,
    PendingCall,
    SteeringInjected,
    StreamEvent,
    session_end,
)
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..tools.results import interrupted_result, not_run_result
from ..tools.selector import read_tools
from ..tools.tool import Tool
from ..tracing.ambient import with_ambient
from ..transports.base import CompletionTransport
from ..types import StopReason, ToolSpec, Usage
from .approval import Decisions, OpenCalls, hold
from .call_start import call_start
from .compact import compact
from .config import AgentConfig
from .dispatch import ToolDispatcher, dispatcher_for, finished, run_calls, started
from .handoff import Handoffs, resumer
from .limits import budget_for, linked
from .middleware import Middleware, RunRequest, as_generator, call_transport, model_chain, run_chain
from .offer import Offer
from .output import DONE, OutputCheck, OutputSpec, typed_model
from .reply import ModelSettings, ReplyBuilder, stream_reply
from .resume import Resume, plan
from .state import RunState, UserInput
from .steps import (
    ANSWERS,
    DISPATCHABLE,
    check_guardrail,
    dispatched,
    failure_stop,
    message_of,
    offer,
    stop_error,
)
from .transcript import Transcript

if TYPE_CHECKING:
    from .control import CancellationToken, Steering

__all__ = ["Run", "RunState", "UserInput", "run_loop"]

_PAUSED = StopReason.PAUSED


class Run:
    """One run of the loop: its state, its steps, and the body of one iteration."""

    __slots__ = (
        "agent",
        "answer",
        "budget",
        "cancel",
        "compactor",
        "cut_short",
        "handoffs",
        "held",
        "middleware",
        "model",
        "model_chain",
        "offer",
        "output",
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
        self.output = None if output is None else OutputCheck(output)
        self.model: ModelSettings = agent if output is None else typed_model(agent, output)
        self.transcript = Transcript(state.context, agent.max_tool_result_chars)
        self.offer = Offer()
        self.start = call_start(agent)
        self.steering = steering
        self.answer: StopReason | None = None  # set when the run has its answer (or pauses)
        self.cut_short = False  # a reply cut off at max_tokens went on once
        self.held: tuple[PendingCall, ...] = ()  # the calls the run ends waiting for
        self.middleware = agent.middleware if middleware is None else middleware
        self.request: RunRequest | None = None  # set when middleware sees the run
        self.model_chain = model_chain(self.middleware, call_transport) if self.middleware else None
        limits = agent.limits  # a time limit gets the run a token linked to the caller's
        self.cancel = cancel if limits is None else linked(limits, cancel)
        self.budget = budget_for(limits)  # linked to a delegating run's, if any
        self.resume = None if decisions is None else Resume(decisions)
        self.handoffs = Handoffs(agent) if agent.handoffs else None
        policy = agent.context_policy
        self.compactor = Compactor(policy) if type(policy) is Compaction else None

    # -- open and close ---------------------------------------------------------------------------

    async def open(self, user_message: UserInput) -> None:
        """Read the history (what its last reply left open: ``_reopen``); add the message."""
        if self.budget is not None:
            self.budget.start(self.cancel)
        opened = await self.transcript.open()
        if opened is not None or self.resume is not None:
            await self._reopen(opened, user_message)
        elif user_message is not None:
            await self.transcript.append(message_of(user_message))

    async def _reopen(self, opened: OpenCalls | None, user_message: UserInput) -> None:
        """Open calls or a resume: decisions checked (else ``ValueError``, nothing stored), calls
        left open answered as interrupted, decisions stored and approved calls run (as the agent
        that made the reply); calls still waiting pause the run."""
        reopening, resume = plan(opened, self.resume), self.resume
        if resume is not None and opened is not None and opened.by is not None:
            self._resume_as(opened.by)
        if reopening.dangling:
            await self.transcript.append_results(list(map(interrupted_result, reopening.dangling)))
        if resume is not None and (reopening.approved or reopening.denied):
            await resume.decide(reopening, self.transcript)
            if reopening.approved:
                await self._run_approved(resume, reopening.approved)
        if reopening.waiting:
            self.held, self.answer = reopening.waiting, _PAUSED
        elif user_message is not None:
            await self.transcript.append(message_of(user_message))

    async def _run_approved(self, resume: Resume, calls: Sequence[ToolUseBlock]) -> None:
        """Run a resume's approved calls as stored; each gets a result (it never runs again)."""
        dispatcher = self._dispatcher(offer(await read_tools(self.agent.tools))[0], 0)
        results: list[ToolResultBlock | None] = [None] * len(calls)
        try:
            await run_calls(dispatcher, calls, self.agent.execution == "parallel", results)
        except BaseException:
            await self.transcript.interrupted(calls, results)
            raise
        await self._store_dispatched(dispatcher, results)
        resume.ran(calls, results)

    def close(self, error: BaseException | None) -> list[StreamEvent]:
        """End the run: record how, and give its last events (``Error`` if failed, then the end)."""
        state = self.state
        if self.budget is not None:
            self.budget.stop()
            error = None if error is None else self.budget.instead_of(error)
        stop = failure_stop(error) if error is not None else self.answer or StopReason.END_TURN
        state.stop_reason, state.error, state.done = stop, error, True
        end = state.end = session_end(stop, state.usage, error, state.iterations, self.held)
        return [end] if error is None else [Error(error), end]

    async def _failed(self, exc: BaseException, reply: ReplyBuilder | None) -> list[StreamEvent]:
        """The last events of a run ``exc`` ended (a ``reply`` cut short keeps its text; calls it
        started are stopped); raises ``exc`` when it goes on to the caller (a ``BaseException``
        such as cancellation, or max_iterations set to raise)."""
        if self.budget is not None:
            self.budget.stop()
        if reply is not None:
            try:
                await self.transcript.keep(reply.text(), self._name())
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
        reply = None  # the reply being streamed, if any
        try:
            await self.open(user_message)
            while self.answer is None:
                iteration = self._next_iteration()
                while self._injecting():
                    yield await self._inject()
                yield IterationStart(iteration)
                table, specs, sent, told = await self._prepare(iteration)
                if told is not None:
                    yield told
                reply = ReplyBuilder()
                model_events = self._model_call(sent, specs, table, iteration, reply)
                try:
                    async for event in model_events:
                        yield event
                finally:  # as contextlib.aclosing, without its object held for the reply
                    await model_events.aclose()
                streamed, reply = reply, None
                end, calls = await self._store_answer(streamed, iteration)
                try:
                    yield end
                except BaseException:  # closed before dispatch began: stored calls need results
                    await self._interrupt_reply(calls)
                    raise
                if not dispatched(calls, end.stop_reason):
                    for event in await self._skip(calls, end.stop_reason):
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
                            yield finished(block, result)
                except BaseException:  # whatever happens, every stored call gets a result
                    await self.transcript.interrupted(calls, results)
                    raise
                await self._store_dispatched(dispatcher, results)
            closing = self.close(None)
        except BaseException as exc:
            closing = await self._failed(exc, reply)
        for event in closing:
            yield event

    def _injecting(self) -> bool:
        """Whether a handoff or steering messages are told before the next model call."""
        handoffs, steering = self.handoffs, self.steering
        return (handoffs is not None and handoffs.notice is not None) or (
            steering is not None and steering.has_pending
        )

    async def _inject(self) -> Handoff | SteeringInjected:
        """The handoff to tell, else the steering messages, injected."""
        notice = None if self.handoffs is None else self.handoffs.tell()
        if notice is not None:
            return notice
        assert self.steering is not None
        injected = tuple(self.steering.drain())
        for message in injected:
            await self.transcript.append(message)
        return SteeringInjected(injected)

    def _next_iteration(self) -> int:
        state, agent = self.state, self.agent
        if state.iterations >= agent.max_iterations:
            raise MaxIterationsError(
                f"the agent reached max_iterations={agent.max_iterations} while the model "
                "was still calling tools"
            )
        if self.cancel is not None and self.cancel.cancelled:
            raise RunCancelled("the run was cancelled")
        state.iterations += 1
        return state.iterations

    async def _prepare(
        self, iteration: int
    ) -> tuple[
        dict[str, Tool],
        list[ToolSpec],
        Sequence[Message],
        ContextTrimmed | Compacted | CompactionFailed | None,
    ]:
        """This iteration's tools (by name, and as sent), the messages to send (checked by the
        input guardrails) and the event that says what the context policy did, if anything."""
        agent, transcript = self.agent, self.transcript
        told = None
        if self.compactor is not None:
            told = await compact(self.compactor, transcript, self, self.spend, iteration)
        extra = () if self.handoffs is None else self.handoffs.tools
        tools = await self.offer.read(agent, transcript.history, extra)
        sent: Sequence[Message] = transcript.history
        trim = agent.context_policy.apply(sent) if agent.context_policy is not None else None
        if trim is not None:
            sent = trim.messages
        if iteration == agent.max_iterations and agent.last_iteration_message is not None:
            sent = [*sent, agent.last_iteration_message]
        for guardrail in agent.input_guardrails:
            await check_guardrail(guardrail, sent, "input")
        if trim is not None:
            told = ContextTrimmed(trim.removed, len(sent))
        return *self.offer.built(tools), sent, told

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
            )
        made.iteration = iteration
        if made.unknown:
            made.unknown = []
        return made

    def _model_call(
        self,
        sent: Sequence[Message],
        specs: list[ToolSpec],
        table: dict[str, Tool],
        iteration: int,
        reply: ReplyBuilder,
    ) -> AsyncGenerator[StreamEvent, None]:
        """This iteration's model call, through the middleware (if any), into ``reply``; calls
        may start while it streams."""
        events = stream_reply(self, sent, specs, iteration, reply)
        return self.start.streaming(events, self._dispatcher, table, iteration)

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
        self.spend(end.usage, end.model, self.model.transport)
        message, calls = reply.build()
        if message is not None:
            if self.handoffs is not None:  # say who answered
                message = self.handoffs.named(message, self.agent)
            for guardrail in self.agent.output_guardrails:
                await check_guardrail(guardrail, message, "output")
            if self.agent.approval is not None and calls and end.stop_reason in DISPATCHABLE:
                message, calls, held = hold(self.agent.approval, message, calls)
                if held:
                    self.held, self.answer = held, _PAUSED
            await self.transcript.append(message)
            if self.compactor is not None:
                self.compactor.replied(end.usage, len(self.transcript.history))
        self.state.final_text = reply.text()
        numbered = IterationEnd(
            iteration, end.stop_reason, end.usage, end.raw_stop_reason, end.model
        )
        return numbered, calls

    async def _store_dispatched(
        self, dispatcher: ToolDispatcher, results: list[ToolResultBlock | None]
    ) -> None:
        """Store the finished calls' results; a transfer goes on as its agent; a limit passed or
        an unknown tool (per the agent) ends the run."""
        await self.transcript.append_results([r for r in results if r is not None])
        if self.handoffs is not None:
            target = self.handoffs.taken(self.agent)
            if target is not None:
                self._become(target)
        if self.budget is not None:
            self.budget.check()
        if dispatcher.unknown and self.agent.unknown_tool == "raise":
            names = ", ".join(dispatcher.unknown)
            raise ToolNotFoundError(f"the model called unknown tool(s): {names}")

    def _become(self, agent: AgentConfig) -> None:
        """Go on as ``agent`` (a handoff's target): its prompt, model, tools and handoffs. The
        history, the iteration count, the limits and the middleware (a session's hooks, say,
        wrap the whole run) stay the run's."""
        assert self.handoffs is not None
        self.agent, self.offer, self.start = agent, Offer(), call_start(agent)
        self.model = agent if self.output is None else typed_model(agent, self.output.spec)
        self.transcript.limit = agent.max_tool_result_chars
        self.handoffs.offer(agent)

    def _resume_as(self, name: str) -> None:
        """A resume goes on as the agent that made the paused reply (its tools run the calls)."""
        if name != self.agent.name:
            self._become(resumer(self.agent, name))

    def _name(self) -> str | None:
        """The name a reply of this run is stored with: the agent's, in a run that hands off."""
        return None if self.handoffs is None else self.agent.name

    async def _skip(self, calls: list[ToolUseBlock], reason: StopReason) -> list[StreamEvent]:
        """Answer the calls of a reply that ended before they were complete (their events);
        calls started while it streamed did run, and keep their results."""
        if not calls:
            return []
        why = f"the response ended with {reason.value!r} before the call was complete."
        try:
            ran = await self.start.finish(calls)
        except BaseException:
            await self._interrupt_reply(calls)
            raise
        skipped = [ran.get(b.id) or not_run_result(b, why) for b in calls]
        await self.transcript.append_results(skipped)
        return [finished(b, r) for b, r in zip(calls, skipped, strict=True)]

    def _settle(self, skipped: bool, reason: StopReason) -> Awaitable[None]:
        """After a reply whose calls (if ``skipped``) did not run: finish, go on, or raise the
        error that ends the run. The awaitable checks a typed run's answer (else DONE)."""
        if self.budget is not None:
            self.budget.check()
        if self.held:  # the reply's other calls, if any, ran: the run ends paused
            return DONE
        if skipped and reason is StopReason.MAX_TOKENS and not self.cut_short:
            self.cut_short = True  # the model may go on from the results, once
            return DONE
        if not skipped and reason is StopReason.PAUSE_TURN:
            return DONE
        if reason not in ANSWERS:
            raise stop_error(reason, self.state.final_text)
        self.answer = StopReason.END_TURN if reason is StopReason.TOOL_USE else reason
        return DONE if self.output is None else self._check_output(self.output)

    async def _check_output(self, check: OutputCheck) -> None:
        """Read a typed run's answer as its type; an invalid one goes back to the model (the
        run goes on) until ``output_retries`` are spent, then ends the run."""
        repair = check.read(self.state, self.agent.output_retries)
        if repair is not None:
            self.answer = None
            await self.transcript.append(repair)

    async def _interrupt_reply(self, calls: list[ToolUseBlock]) -> None:
        """A reply's stored calls get results though none is dispatched: those started while it
        streamed and finished keep theirs, the rest are interrupted."""
        if calls:
            ran = await self.start.interrupted()
            await self.transcript.interrupted(calls, [ran.get(b.id) for b in calls])


def run_loop(
    agent: AgentConfig,
    user_message: UserInput,
    state: RunState,
    cancel: CancellationToken | None,
    steering: Steering | None,
    output: OutputSpec[Any] | None = None,
    decisions: Decisions | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """The run, as events, through the middleware that wraps runs (the agent's, and tracing when
    OpenTelemetry is set up). Ends with ``SessionEndEvent`` (or raises, per the agent's
    policies); a typed run (``output``) keeps its value in ``state.output``. ``decisions``
    makes it a resume of a paused session (``user_message`` None)."""
    middleware = with_ambient(agent.middleware)
    run = Run(agent, state, cancel, steering, middleware, output, decisions)
    resume = run.resume
    whole = run.events if resume is None else lambda _: resume.events(run.events(None))
    if not middleware:
        return whole(user_message)
    run.request = RunRequest(agent, state.context, user_message)

    def innermost(request: RunRequest) -> AsyncGenerator[StreamEvent, None]:
        run.request = request
        return whole(request.user_message)

    chain = run_chain(middleware, innermost)
    return whole(user_message) if chain is None else as_generator(chain(run.request))
