"""``Agent``: the configuration of the one loop (``tether.loop``) and its entry points."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .base.blocking import run_blocking
from .context import ContextStore, MemoryContextStore
from .errors import RunPaused
from .events import StreamEvent, ToolProgress
from .loop import (
    AgentConfig,
    AgentStream,
    Decisions,
    RunState,
    UserInput,
    agent_tool,
    dispatcher_for,
    observed,
    run_calls,
    run_loop,
    spec_for,
    tools_by_name,
)
from .messages import ToolResultBlock, ToolUseBlock
from .tools.needs_input import NeedsInput
from .tools.results import interrupted_result
from .tools.selector import read_tools
from .types import StopReason

if TYPE_CHECKING:
    from .loop import CancellationToken, Steering
    from .tools.tool import Tool

__all__ = ["Agent"]

T = TypeVar("T")
_PAUSED = StopReason.PAUSED


def _paused(state: RunState) -> RunPaused:
    """The error ``run`` raises for a run that paused for approval."""
    assert state.end is not None
    return RunPaused(state.end.pending)


@dataclass(slots=True)
class Agent(AgentConfig):
    """A model, its tools and the rules of the loop that joins them (fields: ``AgentConfig``).

    ``run_stream`` gives a run's events, ``run`` its answer; ``resume`` goes on from a run that
    paused for approval; ``dispatch_tools`` runs tool calls the way the loop does.
    """

    def _start(
        self,
        user_message: UserInput,
        context: ContextStore | None,
        cancel: CancellationToken | None,
        steering: Steering | None,
        output: Any = None,
        decisions: Decisions | None = None,
    ) -> tuple[AsyncGenerator[StreamEvent, None], RunState]:
        state = RunState(context if context is not None else MemoryContextStore())
        wanted = self.output_type if output is None else output
        spec = None if wanted is None else spec_for(wanted)
        events = run_loop(self, user_message, state, cancel, steering, spec, decisions)
        if self.on_event is not None:
            events = observed(events, self.on_event, state)
        return events, state

    def run_stream(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: Any = None,
    ) -> AgentStream:
        """Start a run; iterate the returned stream for its events.

        ``user_message`` may be text, blocks, a ``Message``, or None to go on from the history as
        it is. ``context`` defaults to a fresh ``MemoryContextStore``. ``output`` (else the
        agent's ``output_type``) makes the run typed: ``get_output()`` gives the value.
        """
        events, state = self._start(user_message, context, cancel, steering, output)
        return AgentStream(events, state)

    @overload
    async def run(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: None = None,
    ) -> Any: ...
    @overload
    async def run(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: type[T],
    ) -> T: ...
    async def run(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: Any = None,
    ) -> Any:
        """Run to the end and return the final answer: its text, or for a typed run (``output``,
        else the agent's ``output_type``) the validated value. Raises the error that ended the
        run (``OutputValidationError`` for an answer that stayed invalid), or ``RunPaused`` when
        calls wait for approval (``approval``)."""
        events, state = self._start(user_message, context, cancel, steering, output)
        async for _ in events:  # the same run as run_stream, without the stream object
            pass
        return self._answer(state, output)

    def _answer(self, state: RunState, output: Any) -> Any:
        """A finished run's answer, or the error that ended it (``RunPaused`` if it paused)."""
        if state.error is not None:
            raise state.error
        if state.stop_reason is _PAUSED:
            raise _paused(state)
        typed = output is not None or self.output_type is not None
        return state.output if typed else state.final_text

    def resume_stream(
        self,
        context: ContextStore,
        approve: Iterable[str] = (),
        deny: Mapping[str, str] | None = None,
        *,
        answers: Mapping[str, Mapping[str, Any]] | None = None,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: Any = None,
    ) -> AgentStream:
        """``resume`` as a stream: the events of the decided calls (once they ran), then the
        run's."""
        decisions = Decisions.of(approve, deny, answers)
        events, state = self._start(None, context, cancel, steering, output, decisions)
        return AgentStream(events, state)

    async def resume(
        self,
        context: ContextStore,
        approve: Iterable[str] = (),
        deny: Mapping[str, str] | None = None,
        *,
        answers: Mapping[str, Mapping[str, Any]] | None = None,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: Any = None,
    ) -> Any:
        """Go on from a run that paused for approval, in this process or any other with the same
        store: the calls ids in ``approve`` run with the arguments stored with the model's reply,
        those in ``deny`` get ``"Tool call denied: <reason>"``; a call that waits for the user's
        input (its ``PendingCall.asks``) runs again with ``answers[call id][question key]`` (a
        dict, checked against the question's schema, or None to decline). Then the run goes on
        as ``run`` does and returns the same. Only calls pending in the stored session can be
        decided, each once (else ``ValueError``, nothing stored); a pending call left undecided
        keeps waiting (``RunPaused`` again, at once). Of two resumes at once, one gets the
        store's ``ConflictError`` before any call runs."""
        decisions = Decisions.of(approve, deny, answers)
        events, state = self._start(None, context, cancel, steering, output, decisions)
        async for _ in events:
            pass
        return self._answer(state, output)

    def run_sync(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
        output: Any = None,
    ) -> Any:
        """``run`` from sync code; inside a running event loop (a notebook, an async app) the run
        goes on a fresh loop in a worker thread (``run_blocking``)."""
        return run_blocking(
            self.run(user_message, context, cancel=cancel, steering=steering, output=output)
        )

    async def dispatch_tools(
        self,
        blocks: Sequence[ToolUseBlock],
        iteration: int,
        *,
        on_progress: Callable[[ToolProgress], Awaitable[None]] | None = None,
        waiting: dict[str, NeedsInput] | None = None,
    ) -> list[ToolResultBlock]:
        """Run tool calls as the loop does (guards, middleware, timeouts, ``execution``); results
        in call order, failures as error results. ``on_progress`` hears each report of a tool
        that reports its progress, while the call runs (an MCP server passes them on);
        ``waiting`` takes the calls that asked for the user's input (``NeedsInput``), by id."""
        dispatcher = dispatcher_for(self, tools_by_name(await read_tools(self.tools)), iteration)
        dispatcher.waiting = waiting
        results: list[ToolResultBlock | None] = [None] * len(blocks)
        await run_calls(dispatcher, blocks, self.execution == "parallel", results, on_progress)
        return [
            r if r is not None else interrupted_result(b)
            for r, b in zip(results, blocks, strict=True)
        ]

    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """This agent as a tool for another: one string parameter, ``input``, the user message
        of a run on a fresh context; its answer (a typed agent's output, as JSON) is the result,
        its tokens count in the caller's run, its progress streams as the call's. ``name``
        defaults to the agent's ``name`` made a valid tool name, ``description`` to the first
        line of its system prompt (``tether.loop.delegation``)."""
        return agent_tool(self, name, description)
