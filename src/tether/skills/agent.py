"""``SkillAgent``: the door for small local models without native tool calling (cantus's
agent). The model speaks the JSON action protocol through a ``ModelHandle``; the run is tether's
one loop, configured: each model reply is one ``step``, skills are the engine's tools, and every
error the model causes is an observation on the stream, never an exception."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

from ..agent import Agent
from ..base.blocking import run_blocking
from ..base.clock import SYSTEM_CLOCK, Clock
from ..context import MemoryContextStore
from ..errors import MaxIterationsError
from ..loop import Middleware
from ..tools.results import describe_exception
from ..tools.tool import Guard
from ..transports.retry import RetryPolicy
from .adapter import (
    CHECK_TOOL,
    ModelCallFailed,
    StepRecorder,
    StepTransport,
    check_tool,
    format_error,
)
from .events import (
    Action,
    AgentState,
    CallSkillAction,
    EventStream,
    FinalAnswerAction,
    MaxIterationsObservation,
    ModelErrorObservation,
    Observation,
    SkillObservation,
    ValidationErrorObservation,
)
from .mock import MockModelExhausted
from .protocol import action_schema, build_prompt, json_text, parse_action
from .registry import Registry, get_registry
from .soul import Soul

__all__ = ["ModelHandle", "SkillAgent"]


class ModelHandle(Protocol):
    """A text model: a prompt in, its reply out. A handle whose ``generate`` takes a
    ``json_schema`` keyword is given the action schema, to constrain its decoding."""

    def generate(self, prompt: str, **kwargs: Any) -> str: ...


def _takes_schema(model: ModelHandle) -> bool:
    try:
        parameters = inspect.signature(model.generate).parameters
    except (TypeError, ValueError):
        return False
    return "json_schema" in parameters


@dataclass
class SkillAgent:
    """Runs a query to an answer with the skills of ``registry``; ``soul`` is the system
    prompt's identity. ``guards`` and ``middleware`` are the engine's, applied to skill calls.

    ``refuse_repeats`` refuses a call of a skill with the very arguments of an earlier call
    that gave a result: the skill is not run again, and the reply is answered by a
    ``ValidationErrorObservation("repeated_call", ...)`` that quotes that result (small models
    tend to ask again for what they were already told). ``clock`` times the waits before a
    failed model call is tried again (inject one so tests need not wait)."""

    model: ModelHandle
    registry: Registry = field(default_factory=get_registry)
    soul: Soul | None = field(default=None, kw_only=True)
    guards: Sequence[Guard] = field(default=(), kw_only=True)
    middleware: Sequence[Middleware] = field(default=(), kw_only=True)
    refuse_repeats: bool = field(default=False, kw_only=True)
    clock: Clock = field(default=SYSTEM_CLOCK, kw_only=True)

    def __post_init__(self) -> None:
        if self.model is None or not callable(getattr(self.model, "generate", None)):
            raise TypeError("SkillAgent needs a model with a generate(prompt) method")
        if CHECK_TOOL in self.registry:
            raise ValueError(f"{CHECK_TOOL!r} is the agent's own tool; rename that skill")

    def prompt(self, state: AgentState) -> str:
        """What the model is shown for the next step of ``state``."""
        return build_prompt(state.query, list(state.stream), self.registry, self.soul)

    async def step_async(self, state: AgentState) -> Action | Observation:
        """One decision: the prompt, the model's reply, the reply parsed into an action or the
        validation error that says why it is not one (with ``refuse_repeats``, a repeated call
        is one), or a ``ModelErrorObservation`` when the handle raised; the stream is not
        changed."""
        schema = action_schema(self.registry, list(state.stream))
        kwargs = {"json_schema": schema} if _takes_schema(self.model) else {}
        prompt = self.prompt(state)
        try:
            raw = await asyncio.to_thread(self.model.generate, prompt, **kwargs)
        except MockModelExhausted:
            raise  # a test script too short is the caller's bug, not the model's behaviour
        except Exception as exc:
            return ModelErrorObservation(describe_exception(exc))
        action = parse_action(raw, self.registry)
        if self.refuse_repeats and isinstance(action, CallSkillAction):
            return _repeat(action, state) or action
        return action

    def step(self, state: AgentState) -> Action | Observation:
        """``step_async`` for sync code."""
        return run_blocking(self.step_async(state))

    async def run_async(
        self,
        workflow_or_query: Any,
        query: str | None = None,
        max_iterations: int = 8,
        max_retries: int = 3,
    ) -> AgentState:
        """Run until the model answers or ``max_iterations`` steps are spent (then the stream
        ends with a ``MaxIterationsObservation``). A workflow object (anything with ``run``)
        is run on ``query`` instead, its value the final answer.

        As in cantus, a validation error does not reset the count of steps, and the model
        goes on seeing its feedback; only ``max_iterations`` ends a run for replies. A model
        handle that raises is tried again up to ``max_retries`` times (waiting 1 s, then
        twice as long each time, on ``clock``); when it still fails, the stream ends with a
        ``ModelErrorObservation`` and the run returns."""
        text = _query(workflow_or_query, query)
        if max_iterations < 1 or max_retries < 0:
            raise ValueError("max_iterations must be >= 1 and max_retries >= 0")
        state = AgentState(text)
        if workflow_or_query is not None and not isinstance(workflow_or_query, str):
            value = await asyncio.to_thread(workflow_or_query.run, text)
            state.stream.append(FinalAnswerAction(answer=str(value), thought="workflow"))
            return state
        await self._loop(state, max_iterations, max_retries)
        return state

    async def _loop(self, state: AgentState, max_iterations: int, max_retries: int) -> None:
        engine = Agent(
            system="",
            transport=StepTransport(self.step_async, state),
            tools=[*(s.as_tool() for s in self.registry.skills()), check_tool()],
            max_iterations=max_iterations,
            execution="sequential",
            guards=tuple(self.guards),
            middleware=(StepRecorder(state, self.registry), *self.middleware),
            format_tool_error=format_error,
            tool_timeout=None,
            retry=RetryPolicy(max_attempts=max_retries + 1, retry_on=_model_failed),
            clock=self.clock,
            name="skill-agent",
        )
        try:
            await engine.run(state.query, MemoryContextStore())
        except ModelCallFailed as failed:
            state.stream.append(failed.observation)
        except MaxIterationsError:
            actions = [e for e in state.stream if isinstance(e, Action)]
            last = repr(actions[-1]) if actions else ""
            partial = EventStream([_copy(e) for e in state.stream])
            state.stream.append(MaxIterationsObservation(max_iterations, last, partial))

    def run(
        self,
        workflow_or_query: Any,
        query: str | None = None,
        max_iterations: int = 8,
        max_retries: int = 3,
    ) -> AgentState:
        """``run_async`` for sync code (also from inside a running event loop)."""
        return run_blocking(self.run_async(workflow_or_query, query, max_iterations, max_retries))

    def answer(self, query: str) -> str | None:
        """The final answer to ``query``, or None when the run ended without one: a step a
        workflow can use."""
        return self.run(query).final_answer

    __call__ = answer


_QUOTE_CHARS = 500


def _model_failed(exc: BaseException) -> bool:
    return isinstance(exc, ModelCallFailed)


def _copy(event: Action | Observation) -> Action | Observation:
    """A deep copy of ``event``, or the event itself where its values cannot be copied (a
    skill's result may hold a lock, or nest past Python's recursion limit)."""
    try:
        return copy.deepcopy(event)
    except (RecursionError, TypeError, ValueError, copy.Error):
        return event


def _repeat(call: CallSkillAction, state: AgentState) -> ValidationErrorObservation | None:
    """The refusal of ``call`` when an earlier call with its skill and arguments gave a result
    (the latest such result is quoted), else None."""
    result: Any = None
    found = False
    for earlier, after in pairwise(state.stream):
        if (
            isinstance(earlier, CallSkillAction)
            and isinstance(after, SkillObservation)
            and (earlier.skill_name, earlier.args) == (call.skill_name, call.args)
        ):
            result, found = after.result, True
    if not found:
        return None
    args = json_text(call.args)
    value = json_text(result)
    if len(value) > _QUOTE_CHARS:
        value = value[:_QUOTE_CHARS] + "…[truncated]"
    return ValidationErrorObservation(
        "repeated_call",
        f"{call.skill_name} was already used with args {args}; its result {value} is in the "
        "results so far. Use it: answer with final_answer if the results answer the query, "
        "else use a skill with other args.",
    )


def _query(workflow_or_query: Any, query: str | None) -> str:
    if query is None and isinstance(workflow_or_query, str):
        query = workflow_or_query
    if workflow_or_query is None:
        workflow_or_query = query
    if not isinstance(query, str):
        raise ValueError(
            "SkillAgent.run needs a query string (run(query) or run(workflow, query=))"
        )
    if not isinstance(workflow_or_query, str) and not callable(
        getattr(workflow_or_query, "run", None)
    ):
        raise TypeError(f"not a query or a workflow: {type(workflow_or_query).__name__}")
    return query
