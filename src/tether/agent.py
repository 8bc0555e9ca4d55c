"""``Agent``: the configuration of the one loop (``tether.loop``) and its entry points."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from .context import ContextStore, MemoryContextStore
from .dispatch import ErrorFormatter, ToolDispatcher, tools_by_name
from .events import StreamEvent
from .loop import InputGuardrail, OutputGuardrail, RunState, UserInput, run_loop
from .messages import Message, ToolResultBlock, ToolUseBlock
from .stream import AgentStream, EventCallback, observed
from .tools.guards import Guard
from .tools.selector import ToolSelector, ToolSource
from .tools.tool import Tool
from .transports.base import CompletionTransport
from .transports.retry import RetryPolicy

if TYPE_CHECKING:
    from .budget import ContextPolicy
    from .control import CancellationToken, Steering

__all__ = ["Agent"]

_DEFAULT_RETRY = RetryPolicy()


@dataclass(slots=True)
class Agent:
    """A model, its tools and the rules of the loop that joins them.

    - ``tools``: ``Tool``s and ``ToolSource``s, read again at every iteration.
    - ``selector``: trims the tool list before every iteration.
    - ``max_iterations``: model calls per run; ``last_iteration_message`` is added to what is sent
      on the last allowed one only.
    - ``execution``: ``"parallel"`` runs the calls of one response at once; ``"sequential"``
      one after another.
    - ``guards``: run before every tool's own guards on every call (allow, deny, rewrite).
    - ``input_guardrails`` / ``output_guardrails``: check what is sent / what the model answered;
      a denial ends the run with ``GuardrailError``.
    - ``context_policy``: chooses what part of the history is sent (e.g. ``CharBudget``).
    - ``max_tool_result_chars``: cut the copy of each result the model sees (events and the
      store keep it whole).
    - ``retry``: retries of model calls that fail before their first event.
    - ``unknown_tool``: ``"error"`` answers the model with an error result; ``"raise"`` also ends
      the run with ``ToolNotFoundError``.
    - ``on_max_iterations``: ``"error"`` ends with an ``Error`` event; ``"raise"`` raises from the
      stream.
    - ``on_event``: called with every event (sync or async); its failures are logged only.
    - ``format_tool_error``: the text the model sees when a tool raises.
    """

    system: str
    transport: CompletionTransport
    tools: list[Tool | ToolSource] = field(default_factory=list)
    selector: ToolSelector | None = None
    max_iterations: int = 50
    last_iteration_message: Message | None = None
    execution: Literal["parallel", "sequential"] = "parallel"
    guards: Sequence[Guard] = ()
    input_guardrails: Sequence[InputGuardrail] = ()
    output_guardrails: Sequence[OutputGuardrail] = ()
    context_policy: ContextPolicy | None = None
    max_tool_result_chars: int | None = None
    retry: RetryPolicy = _DEFAULT_RETRY
    unknown_tool: Literal["error", "raise"] = "error"
    on_max_iterations: Literal["error", "raise"] = "error"
    on_event: EventCallback | None = None
    format_tool_error: ErrorFormatter | None = None

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be >= 1")
        if self.execution not in ("parallel", "sequential"):
            raise ValueError("execution must be 'parallel' or 'sequential'")
        if self.unknown_tool not in ("error", "raise"):
            raise ValueError("unknown_tool must be 'error' or 'raise'")
        if self.on_max_iterations not in ("error", "raise"):
            raise ValueError("on_max_iterations must be 'error' or 'raise'")
        if self.max_tool_result_chars is not None and self.max_tool_result_chars < 1:
            raise ValueError("max_tool_result_chars must be >= 1")

    def copy(self, **overrides: Any) -> Agent:
        """A new agent with some fields replaced; the rest (transport, tools list) are shared."""
        return replace(self, **overrides)

    def current_tools(self) -> list[Tool]:
        """The tools on offer right now (sources are asked again on every call)."""
        out: list[Tool] = []
        for item in self.tools:
            if type(item) is Tool or isinstance(item, Tool):
                out.append(item)
            elif isinstance(item, ToolSource):
                out.extend(item.list_tools())
            else:
                raise TypeError(
                    f"Agent.tools holds {item!r}, which is neither a Tool nor a ToolSource"
                )
        return out

    def _start(
        self,
        user_message: UserInput,
        context: ContextStore | None,
        cancel: CancellationToken | None,
        steering: Steering | None,
    ) -> tuple[AsyncGenerator[StreamEvent, None], RunState]:
        state = RunState(context if context is not None else MemoryContextStore())
        events = run_loop(self, user_message, state, cancel, steering)
        if self.on_event is not None:
            events = observed(events, self.on_event)
        return events, state

    def run_stream(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
    ) -> AgentStream:
        """Start a run; iterate the returned stream for its events.

        ``user_message`` may be text, blocks, a ``Message``, or None to go on from the history as
        it is. ``context`` defaults to a fresh ``MemoryContextStore``.
        """
        events, state = self._start(user_message, context, cancel, steering)
        return AgentStream(events, state)

    async def run(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
    ) -> str:
        """Run to the end and return the final answer; raises the error that ended the run."""
        events, state = self._start(user_message, context, cancel, steering)
        async for _ in events:  # the same run as run_stream, without the stream object
            pass
        if state.error is not None:
            raise state.error
        return state.final_text

    def run_sync(
        self,
        user_message: UserInput,
        context: ContextStore | None = None,
        *,
        cancel: CancellationToken | None = None,
        steering: Steering | None = None,
    ) -> str:
        """``run`` for code without an event loop (scripts, notebooks without one running)."""
        return asyncio.run(self.run(user_message, context, cancel=cancel, steering=steering))

    async def dispatch_tools(
        self, blocks: Sequence[ToolUseBlock], iteration: int
    ) -> list[ToolResultBlock]:
        """Run tool calls through guards and handlers; results in call order, errors as results."""
        dispatcher = ToolDispatcher(
            tools_by_name(self.current_tools()),
            self.guards,
            iteration,
            self.format_tool_error,
        )
        if self.execution == "sequential":
            return [await dispatcher.execute(b) for b in blocks]
        return list(await asyncio.gather(*(dispatcher.execute(b) for b in blocks)))
