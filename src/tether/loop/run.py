"""The agent loop: the one implementation of "call the model, dispatch tools, append, repeat".

A ``Run`` holds one run's history and state; ``Run.events`` is the run itself (see there).
Every front door configures an agent and runs this. The loop reads the history once per run and
then only appends, so an iteration costs the same at message 10 and at message 10,000."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeAlias

from ..base.interrupt import survive
from ..context import Compaction, Compactor, load_context
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
from ..tools.selector import ListingCache, only_tools, read_tools
from ..tools.tool import Tool
from ..tracing.ambient import with_ambient
from ..types import StopReason, ToolSpec
from .approval import Decisions, Reopening, decision_message, hold, reopening
from .call_start import CallStart, call_start
from .compact import compact
from .config import AgentConfig
from .dispatch import ToolDispatcher, dispatcher_for, finished, run_calls, started
from .handoff import Handoffs, resumer
from .history_view import read_stored
from .limits import budget_for, linked
from .middleware import (
    Middleware,
    ModelHandler,
    RunRequest,
    as_generator,
    call_transport,
    model_chain,
    run_chain,
)
from .output import DONE, OutputCheck, OutputSpec, typed_model
from .reply import ModelSettings, ReplyBuilder, ReplyRequest, stream_reply
from .state import RunState, UserInput
from .steps import (
    ANSWERS,
    DISPATCHABLE,
    check_guardrail,
    dispatched,
    failure_stop,
    message_of,
    model_view,
    offer,
    ran,
    stop_error,
    unanswered,
)

if TYPE_CHECKING:
    from ..context import Trim
    from .control import CancellationToken, Steering

__all__ = ["Run", "RunState", "UserInput", "run_loop"]

Told: TypeAlias = ContextTrimmed | Compacted | CompactionFailed  # what the context policy did


class Run:
    """One run of the loop: its history, its state, and the steps of one iteration."""

    __slots__ = (
        "agent",
        "answer",
        "budget",
        "cancel",
        "compactor",
        "cut_short",
        "decided",
        "decisions",
        "finished",
        "handoffs",
        "held",
        "history",
        "listings",
        "middleware",
        "model",
        "model_chain",
        "notice",
        "output",
        "request",
        "start",
        "state",
        "steering",
        "store",
        "streaming",
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
        self.output = None if output is None else OutputCheck(output)
        self.model = self._model_of(agent)
        self.state = state
        self.store = state.context
        self.cancel = cancel
        self.budget = budget_for(agent.limits)  # linked to a delegating run's, if any
        if agent.limits is not None:  # a time limit gets the run a token linked to the caller's
            self.cancel = linked(agent.limits, cancel)
        self.steering = steering
        self.history: list[Message] = []
        self.listings: ListingCache | None = None
        self.finished = False
        self.cut_short = False
        self.start: CallStart = call_start(agent)
        self.streaming: ReplyBuilder | None = None  # the reply being streamed, if any
        self.answer = StopReason.END_TURN
        self.middleware = agent.middleware if middleware is None else middleware
        self.request: RunRequest | None = None  # set when middleware sees the run
        self.model_chain: ModelHandler | None = (
            model_chain(self.middleware, call_transport) if self.middleware else None
        )
        self.decisions = decisions  # a resume's: the person's word on the pending calls
        self.held: tuple[PendingCall, ...] = ()  # the calls the run ends waiting for
        self.decided: tuple[StreamEvent, ...] = ()  # a resume's events for the calls it decided
        self.handoffs = Handoffs(agent) if agent.handoffs else None
        self.notice: Handoff | None = None  # told before the next iteration
        policy = agent.context_policy
        self.compactor = Compactor(policy) if type(policy) is Compaction else None

    # -- open and close ---------------------------------------------------------------------------

    async def open(self, user_message: UserInput) -> None:
        """Read the history (what its last reply left open: ``_reopen``); add the message."""
        if self.budget is not None:
            self.budget.start(self.cancel)
        history = await load_context(self.store)
        opened = None
        if history:
            opened, history = read_stored(history)
        limit = self.agent.max_tool_result_chars
        if limit is not None:
            history = [model_view(m, limit) for m in history]
        self.history = history
        if opened is not None or self.decisions is not None:
            plan = reopening(opened, self.decisions)
            if self.decisions is not None and opened is not None and opened.by is not None:
                self._resume_as(opened.by)
            await self._reopen(plan, user_message)
        elif user_message is not None:
            first = (
                user_message if isinstance(user_message, Message) else Message("user", user_message)
            )
            await self._append(first)

    async def _reopen(self, plan: Reopening, user_message: UserInput) -> None:
        """Open calls or a resume: decisions checked (else ``ValueError``, nothing stored), calls
        left open answered as interrupted, decisions stored; calls still waiting pause the run."""
        if plan.dangling:
            await self._store_results([interrupted_result(b) for b in plan.dangling])
        if plan.approved or plan.denied:
            await self._decide(plan)
        if plan.waiting:
            self.held, self.finished, self.answer = plan.waiting, True, StopReason.PAUSED
        elif user_message is not None:
            await self._append(message_of(user_message))

    async def _decide(self, plan: Reopening) -> None:
        """Store the decisions in one append (refused with ``ConflictError`` if another writer,
        a second resume say, wrote first), then run the approved calls as stored."""
        await self.store.append(decision_message(plan.approved, plan.denials))
        if plan.denials:
            shown, limit = Message("user", plan.denials), self.agent.max_tool_result_chars
            self.history.append(shown if limit is None else model_view(shown, limit))
        self.decided += tuple(map(finished, plan.denied, plan.denials))
        if not plan.approved:
            return
        calls = plan.approved
        dispatcher = self._dispatcher(offer(await read_tools(self.agent.tools))[0], 0)
        results: list[ToolResultBlock | None] = [None] * len(calls)
        try:
            await run_calls(dispatcher, calls, self.agent.execution == "parallel", results)
        except BaseException:  # every approved call gets a result: it never runs again
            await self._store_interrupted(calls, results)
            raise
        await self._store_dispatched(dispatcher, results)
        self.decided += ran(calls, results)

    async def resumed(self) -> AsyncGenerator[StreamEvent, None]:
        """A resume as events: those of the calls it decided (once they ran), then ``events``."""
        async with aclosing(self.events(None)) as events:
            async for event in events:
                for earlier in self.decided:
                    yield earlier
                self.decided = ()
                yield event

    def close(self, error: BaseException | None) -> list[StreamEvent]:
        """End the run: record how, and give its last events (``Error`` if failed, then the end)."""
        state = self.state
        if self.budget is not None:
            self.budget.stop()
            error = None if error is None else self.budget.instead_of(error)
        stop = self.answer if error is None else failure_stop(error)
        state.stop_reason, state.error, state.done = stop, error, True
        end = state.end = session_end(stop, state.usage, error, state.iterations, self.held)
        return [end] if error is None else [Error(error), end]

    def _fail(self, error: BaseException) -> list[StreamEvent] | None:
        """The last events of a run that ``error`` ended, or None when ``error`` goes on to the
        caller (a ``BaseException`` such as cancellation, or max_iterations set to raise)."""
        if not isinstance(error, Exception):
            if not self.state.done:  # closed or cancelled from outside
                self.state.stop_reason, self.state.done = StopReason.CANCELLED, True
            return None
        if isinstance(error, MaxIterationsError) and self.agent.on_max_iterations == "raise":
            self.close(error)
            return None
        return self.close(error)

    # -- the run ----------------------------------------------------------------------------------

    async def events(self, user_message: UserInput) -> AsyncGenerator[StreamEvent, None]:
        """The whole run as events: open, one pass of the body per iteration, close.

        One generator per run, not one per iteration or per part, keeps an iteration as cheap as
        in a hand-written loop; each line of the body is one step. A door that drives the run an
        iteration at a time stops reading after an iteration's last event: nothing of the next
        iteration (not even storing the results) runs until it reads on.
        """
        try:
            await self.open(user_message)
            while not self.finished:
                iteration = self._next_iteration()
                while self._injecting():
                    yield await self._inject()
                yield IterationStart(iteration)
                table, specs, sent, told = await self._prepare(iteration)
                if told is not None:
                    yield told
                if self.cancel is not None and self.cancel.cancelled:
                    raise RunCancelled("the run was cancelled")
                reply = self.streaming = ReplyBuilder()
                model_events = self._model_call(sent, specs, table, iteration, reply)
                try:
                    async for event in model_events:
                        yield event
                finally:  # as contextlib.aclosing, without its object held for the reply
                    await model_events.aclose()
                self.streaming = None
                end, calls = await self._store_answer(reply, iteration)
                try:
                    yield end
                except BaseException:  # closed before dispatch began: stored calls need results
                    await self._interrupt_reply(calls)
                    raise
                if not dispatched(calls, end.stop_reason):
                    if calls:
                        for event in await self._skip(calls, end.stop_reason):
                            yield event
                    await self._settle(bool(calls), end.stop_reason)
                    continue
                start = self.start
                dispatcher = start.dispatcher(self._dispatcher, table, iteration)
                results: list[ToolResultBlock | None] = [None] * len(calls)
                try:
                    running = start.tasks(dispatcher, calls, results)
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
                    await self._store_interrupted(calls, results)
                    raise
                await self._store_dispatched(dispatcher, results)
            closing = self.close(None)
        except BaseException as exc:
            closing = await self._failed(exc)
        for event in closing:
            yield event

    async def _failed(self, exc: BaseException) -> list[StreamEvent]:
        """The last events of a run ``exc`` ended (a reply cut short keeps its text; calls it
        started are stopped); raises ``exc`` when it goes on to the caller."""
        if self.budget is not None:
            self.budget.stop()
        reply, self.streaming = self.streaming, None
        if reply is not None:
            try:
                await self._keep_partial(reply)
            except BaseException as later:  # goes on in place of exc, as when the reply raised it
                exc = later
        await self.start.stop()
        closing = self._fail(exc)
        if closing is None:
            try:
                raise exc
            finally:
                del exc  # its traceback holds this frame: no cycle through it (as Future.result)
        return closing

    def _injecting(self) -> bool:
        """Whether a handoff or steering messages are told before the next model call."""
        return self.notice is not None or (self.steering is not None and self.steering.has_pending)

    async def _inject(self) -> Handoff | SteeringInjected:
        """The handoff to tell, else the steering messages, injected."""
        notice, self.notice = self.notice, None
        if notice is not None:
            return notice
        assert self.steering is not None
        injected = tuple(self.steering.drain())
        for message in injected:
            await self._append(message)
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
    ) -> tuple[dict[str, Tool], list[ToolSpec], Sequence[Message], Told | None]:
        """This iteration's tools (by name, and as sent), the messages to send (checked by the
        input guardrails) and the event that says what the context policy did, if anything."""
        told: Told | None = None
        if self.compactor is not None:
            told = await compact(self, self.compactor, iteration)
        tools = only_tools(self.agent.tools)  # no source to ask: no await
        if tools is None or self.agent.selector is not None:
            tools = await self._offered_tools()
        if self.handoffs is not None:
            tools = [*tools, *self.handoffs.tools]
        sent, trim = self._messages_to_send(iteration)
        for guardrail in self.agent.input_guardrails:
            await check_guardrail(guardrail, sent, "input")
        if trim is not None:
            told = ContextTrimmed(trim.removed, len(sent))
        table, specs = offer(tools)
        return table, specs, sent, told

    async def _offered_tools(self) -> list[Tool]:
        """This iteration's tools: sources read again, then trimmed by the selector."""
        agent = self.agent
        tools = only_tools(agent.tools)
        if tools is None:
            if self.listings is None:
                self.listings = {}
            tools = await read_tools(agent.tools, self.listings)
        if agent.selector is not None:
            tools = list(await agent.selector.select(self.history, tools))
        return tools

    def _dispatcher(self, table: dict[str, Tool], iteration: int) -> ToolDispatcher:
        return dispatcher_for(
            self.agent,
            table,
            iteration,
            self.cancel,
            middleware=self.middleware,
            run=self.request,
            usage=self.state.add_usage,
            budget=self.budget,
        )

    def _messages_to_send(self, iteration: int) -> tuple[Sequence[Message], Trim | None]:
        """The context policy's view of the history, with the last-iteration note."""
        agent = self.agent
        sent: Sequence[Message] = self.history
        trim = agent.context_policy.apply(sent) if agent.context_policy is not None else None
        if trim is not None:
            sent = trim.messages
        if iteration == agent.max_iterations and agent.last_iteration_message is not None:
            sent = [*sent, agent.last_iteration_message]
        return sent, trim

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
        events = stream_reply(ReplyRequest(self, sent, specs, iteration, reply))
        return self.start.streaming(events, self._dispatcher, table, iteration)

    async def _keep_partial(self, reply: ReplyBuilder) -> None:
        """A failed or cancelled reply keeps what the model already said (its text only)."""
        partial = reply.text()
        if partial:
            name = None if self.handoffs is None else self.agent.name
            await survive(self._append(Message("assistant", partial, name)))

    async def _store_answer(
        self, reply: ReplyBuilder, iteration: int
    ) -> tuple[IterationEnd, list[ToolUseBlock]]:
        """Count the reply's usage, check the answer with the output guardrails, store it; the
        reply's end event (numbered as this iteration) and its tool calls."""
        end, state = reply.end, self.state
        assert end is not None
        state.usage = state.usage + end.usage
        if self.budget is not None:
            self.budget.charge_reply(end.usage, end.model, self.model.transport)
        message, calls = reply.build()
        if message is not None and self.handoffs is not None:  # say who answered
            message = Message(message.role, message.content, self.agent.name)
        if message is not None:
            for guardrail in self.agent.output_guardrails:
                await check_guardrail(guardrail, message, "output")
            if self.agent.approval is not None and calls and end.stop_reason in DISPATCHABLE:
                message, calls, held = hold(self.agent.approval, message, calls)
                if held:  # the run ends paused after this iteration
                    self.held, self.finished, self.answer = held, True, StopReason.PAUSED
            await self.store.append(message)
            self.history.append(message)
            if self.compactor is not None:
                self.compactor.replied(end.usage, len(self.history))
        state.final_text = reply.text()
        numbered = IterationEnd(
            iteration, end.stop_reason, end.usage, end.raw_stop_reason, end.model
        )
        return numbered, calls

    async def _store_dispatched(
        self, dispatcher: ToolDispatcher, results: list[ToolResultBlock | None]
    ) -> None:
        """Store the finished calls' results; an unknown tool may end the run (per the agent)."""
        await self._store_results([r for r in results if r is not None])
        if self.handoffs is not None and self.handoffs.target is not None:
            self._hand_off(self.handoffs.take())
        if self.budget is not None:
            self.budget.check()
        if dispatcher.unknown and self.agent.unknown_tool == "raise":
            names = ", ".join(dispatcher.unknown)
            raise ToolNotFoundError(f"the model called unknown tool(s): {names}")

    def _hand_off(self, target: AgentConfig | None) -> None:
        """Go on as ``target`` (``_become``). The history, the iteration count, the limits
        and the middleware (a session's hooks, say, wrap the whole run) stay the run's."""
        assert target is not None
        self.notice = Handoff(self.agent.name, target.name)
        self._become(target)

    def _become(self, agent: AgentConfig) -> None:
        """Go on as ``agent`` (a handoff's target): its prompt, model, tools and handoffs."""
        assert self.handoffs is not None
        self.agent, self.model, self.listings = agent, self._model_of(agent), None
        self.handoffs.offer(agent)
        self.start = call_start(agent)

    def _resume_as(self, name: str) -> None:
        """A resume goes on as the agent that made the paused reply (its tools run the calls)."""
        if name != self.agent.name:
            self._become(resumer(self.agent, name))

    def _model_of(self, agent: AgentConfig) -> ModelSettings:
        """What ``agent``'s replies read: it, or a typed run's settings asking for the output."""
        return agent if self.output is None else typed_model(agent, self.output.spec)

    async def _skip(self, calls: list[ToolUseBlock], reason: StopReason) -> list[StreamEvent]:
        """Answer the calls of a reply that ended before they were complete (their events);
        calls started while it streamed did run, and keep their results."""
        why = f"the response ended with {reason.value!r} before the call was complete."
        try:
            ran = await self.start.finish(calls)
        except BaseException:
            await self._interrupt_reply(calls)
            raise
        skipped = [ran.get(b.id) or not_run_result(b, why) for b in calls]
        await self._store_results(skipped)
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
        self.finished = True
        return DONE if self.output is None else self._check_output(self.output)

    async def _check_output(self, check: OutputCheck) -> None:
        """Read a typed run's answer as its type; an invalid one goes back to the model (the
        run goes on) until ``output_retries`` are spent, then ends the run."""
        repair = check.read(self.state, self.agent.output_retries)
        if repair is not None:
            self.finished = False
            await self._append(repair)

    # -- storing ----------------------------------------------------------------------------------

    # The run's own history takes a message as its store is asked to (a failed append ends
    # the run, and with it that history); returning the store's awaitable saves a coroutine.

    def _append(self, message: Message) -> Awaitable[None]:
        self.history.append(message)
        return self.store.append(message)

    def _store_results(self, results: list[ToolResultBlock]) -> Awaitable[None]:
        """Store the full results; the history sent to the model gets the truncated copy."""
        full = Message("user", tuple(results))
        limit = self.agent.max_tool_result_chars
        self.history.append(full if limit is None else model_view(full, limit))
        return self.store.append(full)

    async def _interrupt_reply(self, calls: list[ToolUseBlock]) -> None:
        """A reply's stored calls get results though none is dispatched: those started while it
        streamed and finished keep theirs, the rest are interrupted."""
        if calls:
            ran = await self.start.interrupted()
            await self._store_interrupted(calls, [ran.get(b.id) for b in calls])

    async def _store_interrupted(
        self, calls: Sequence[ToolUseBlock], results: list[ToolResultBlock | None]
    ) -> None:
        """On the way out of a failed or closed run: store a result for every call, finished
        ones as they are and the rest as interrupted, even if cancelled again meanwhile."""

        async def store() -> None:
            open_calls = unanswered(await self.store.get_history(), calls)
            if open_calls:
                final = [
                    r if r is not None else interrupted_result(b)
                    for b, r in zip(calls, results, strict=True)
                    if b.id in open_calls
                ]
                await self._store_results(final)

        await survive(store())


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
    whole = run.events if decisions is None else lambda _: run.resumed()
    if not middleware:
        return whole(user_message)
    run.request = RunRequest(agent, state.context, user_message)

    def innermost(request: RunRequest) -> AsyncGenerator[StreamEvent, None]:
        run.request = request
        return whole(request.user_message)

    chain = run_chain(middleware, innermost)
    return whole(user_message) if chain is None else as_generator(chain(run.request))
