"""``AgentConfig``: everything that shapes a run of the loop. ``Agent`` adds the entry points; the
loop reads only this, so it never imports the agent."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Self, TypeAlias

from ..base.clock import SYSTEM_CLOCK, Clock
from ..events import StreamEvent
from ..messages import Message
from ..tools.decisions import GuardDecision
from ..tools.results import ErrorFormatter
from ..tools.selector import ToolSelector, ToolSource, as_tool_list
from ..tools.tool import Guard, Tool
from ..transports.base import CompletionTransport
from ..transports.retry import RetryPolicy
from .approval import Approval, check_approval
from .middleware import Middleware, check_middleware

if TYPE_CHECKING:
    from ..context import ContextPolicy
    from .limits import Limits

__all__ = ["AgentConfig", "EventCallback", "InputGuardrail", "OutputGuardrail"]

InputGuardrail: TypeAlias = Callable[[Sequence[Message]], GuardDecision | Awaitable[GuardDecision]]
OutputGuardrail: TypeAlias = Callable[[Message], GuardDecision | Awaitable[GuardDecision]]
EventCallback: TypeAlias = Callable[[StreamEvent], Awaitable[None] | None]

_DEFAULT_RETRY = RetryPolicy()
DEFAULT_TOOL_TIMEOUT = 300.0


@dataclass(slots=True)
class AgentConfig:
    """A model, its tools and the rules of the loop that joins them.

    - ``tools``: ``Tool``s, ``ToolSource``s (read again at every iteration) and plain functions
      (made tools as ``@tool`` makes them).
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
    - ``middleware``: wraps every model call and tool call, the first outermost.
    - ``tool_timeout``: seconds a call of a tool without its own ``timeout`` may take (None: no
      limit); a synchronous handler running on the event loop cannot be cut short.
    - ``clock``: time, waiting and jitter for retries (inject one for deterministic replay).
    - ``name``: what traces call this agent (``gen_ai.agent.name``).
    - ``start_tools_early``: with ``"parallel"`` execution, start each call as soon as its
      arguments are complete (a later block of the response began), before the reply ends.
    - ``output_type``: the answer is JSON validated as this type (any type pydantic reads), and
      ``run`` returns the value; an invalid answer goes back to the model ``output_retries``
      times, then ``OutputValidationError``. ``run(..., output=T)`` sets it for one run.
    - ``handoffs``: agents the model may hand the rest of the run to (``transfer_to_{name}``
      tools); the run goes on with that agent's prompt, model, tools and handoffs, on the same
      context (middleware and limits stay the run's).
    - ``limits``: the run's budget (``Limits``: tool calls, tokens, cost, seconds); past one the
      run ends with ``LimitExceeded``.
    - ``approval``: the calls that wait for a person: a set of tool names, or a predicate
      ``(name, input) -> bool`` (True: wait). A reply that asks for one is stored, its other calls
      run, and the run ends ``StopReason.PAUSED`` (``run`` raises ``RunPaused``) with those calls
      pending in the stored session until ``Agent.resume`` decides them, in any process.
    - ``constrained_calls``: hold each reply with tools on offer to an answer or a list of calls
      whose names and arguments the server checks against the tools' schemas (a JSON-schema
      response format); ``None`` turns it on where the transport says so (the local model).
      ``True`` on a transport that cannot is a ``ValueError`` here. ``transport`` is then a
      ``ConstrainedCalls`` over the one given.
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
    middleware: Sequence[Middleware] = ()
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    clock: Clock = SYSTEM_CLOCK
    start_tools_early: bool = False
    name: str = "agent"
    output_type: Any = None
    output_retries: int = 2
    limits: Limits | None = None
    handoffs: Sequence[AgentConfig] = ()
    approval: Approval | None = None
    constrained_calls: bool | None = None

    def __post_init__(self) -> None:
        wanted = self.constrained_calls
        if wanted is not None or getattr(self.transport, "constrains_calls", None) is True:
            from ..transports.constrained import with_constrained_calls  # noqa: PLC0415 - when used

            self.transport = with_constrained_calls(self.transport, wanted)
        self.tools = as_tool_list(self.tools)  # plain functions become tools, as @tool makes them
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
        if self.output_retries < 0:
            raise ValueError("output_retries must be >= 0")
        if self.tool_timeout is not None and not self.tool_timeout > 0:
            raise ValueError("tool_timeout must be > 0 (or None for no limit)")
        if self.start_tools_early and self.output_guardrails:
            raise ValueError(
                "start_tools_early cannot be used with output_guardrails: a call would start "
                "before the guardrails could refuse the answer that makes it"
            )
        if self.approval is not None:
            self._check_approval()
        self.middleware = tuple(self.middleware)
        check_middleware(self.middleware)

    def _check_approval(self) -> None:
        check_approval(self.approval)
        if self.start_tools_early:
            raise ValueError(
                "start_tools_early cannot be used with approval: a call would start before it "
                "could be held for a person"
            )

    def copy(self, **overrides: Any) -> Self:
        """A new agent with some fields replaced; the rest (transport, tools list) are shared."""
        return replace(self, **overrides)

    def current_tools(self) -> list[Tool]:
        """The tools on offer right now, for code without an event loop at hand.

        Sources are asked again on every call; one whose ``list_tools`` is a coroutine needs
        ``await tether.tools.selector.read_tools(agent.tools)`` instead.
        """
        out: list[Tool] = []
        for item in self.tools:
            if isinstance(item, Tool):
                out.append(item)
                continue
            if not isinstance(item, ToolSource):
                raise TypeError(f"the tool list holds {item!r}: neither a Tool nor a ToolSource")
            listed = item.list_tools()
            if inspect.isawaitable(listed):
                if inspect.iscoroutine(listed):
                    listed.close()
                raise TypeError(
                    f"tool source {item!r} lists its tools asynchronously; "
                    "use await read_tools(agent.tools)"
                )
            out.extend(listed)
        return out
