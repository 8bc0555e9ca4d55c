"""How a SkillAgent runs on tether's one loop: ``StepTransport`` makes a ``ModelHandle`` a
transport (each model reply is one ``step``: a skill call becomes a tool call, an answer the
reply's text, a refused reply a call to the check that refused it), and ``StepRecorder`` is the
middleware that writes each call's observation into the run's ``EventStream``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..events import (
    IterationEnd,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from ..loop import Middleware, ToolHandler, ToolRequest
from ..messages import Message, ToolResultBlock
from ..tools.results import default_error_text
from ..tools.tool import Tool
from ..types import StopReason, ToolSpec
from .base import SkillFailed, observed
from .events import (
    Action,
    AgentState,
    CallSkillAction,
    FinalAnswerAction,
    ModelErrorObservation,
    Observation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from .registry import Registry

__all__ = [
    "CHECK_TOOL",
    "ModelCallFailed",
    "StepRecorder",
    "StepTransport",
    "check_tool",
    "format_error",
]

CHECK_TOOL = "reply_check"
"""The tool a refused reply is routed to: its result is the check's feedback."""

Step = Callable[[AgentState], Awaitable[Action | Observation]]


class ModelCallFailed(Exception):
    """A step could not ask the model (its handle raised): the engine retries the reply, and a
    run that still fails ends with ``observation``, which counts the ``attempts`` in a row."""

    def __init__(self, observation: ModelErrorObservation) -> None:
        super().__init__(observation.message)
        self.observation = observation


class StepTransport:
    """A transport whose every reply is ``step(state)``; the reply's action or refusal is put on
    the stream as it is made, and said to the engine as events. A step that could not ask the
    model raises ``ModelCallFailed`` before the reply's first event, so the engine retries it."""

    def __init__(self, step: Step, state: AgentState) -> None:
        self._step = step
        self._state = state
        self._calls = 0
        self._failures = 0  # failed tries of the reply now being made

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        """One step, as the events of one model reply."""
        event = await self._step(self._state)
        if isinstance(event, ModelErrorObservation):
            self._failures += 1
            raise ModelCallFailed(ModelErrorObservation(event.message, self._failures))
        self._failures = 0
        self._state.stream.append(event)
        self._calls += 1
        for out in _reply_events(event, f"step_{self._calls}", self._calls):
            yield out


def _reply_events(event: Action | Observation, call_id: str, iteration: int) -> list[StreamEvent]:
    thought = getattr(event, "thought", "")
    out: list[StreamEvent] = [ReasoningDelta(0, thought)] if thought else []
    if isinstance(event, FinalAnswerAction):
        return [*out, TextDelta(1, event.answer), IterationEnd(iteration, StopReason.END_TURN)]
    if isinstance(event, CallSkillAction):
        name, arguments = event.skill_name, json.dumps(event.args, default=str)
    elif isinstance(event, ValidationErrorObservation):
        name = CHECK_TOOL
        arguments = json.dumps({"validator_name": event.validator_name, "feedback": event.feedback})
    else:
        raise TypeError(f"a step returned {type(event).__name__}")
    return [
        *out,
        ToolUseStart(1, call_id, name),
        ToolInputDelta(1, call_id, arguments),
        IterationEnd(iteration, StopReason.TOOL_USE),
    ]


def _refused(validator_name: str, feedback: str) -> str:
    raise SkillFailed(ValidationErrorObservation(validator_name, feedback))


def check_tool() -> Tool:
    """The agent's own checks of a reply, as one tool: a refused reply is answered by the
    feedback of the check that refused it."""
    schema = {
        "type": "object",
        "properties": {"validator_name": {"type": "string"}, "feedback": {"type": "string"}},
        "required": ["validator_name", "feedback"],
    }
    return Tool(CHECK_TOOL, _refused, "The agent's checks of the model's reply.", schema=schema)


def format_error(name: str, arguments: Mapping[str, Any], exc: BaseException) -> str:
    """A skill's failure as the model sees it: the observation's own text."""
    if isinstance(exc, SkillFailed):
        return str(exc)
    return default_error_text(name, arguments, exc)


class StepRecorder(Middleware):
    """Puts each skill call's observation on the stream: the skill's own, or, when the engine
    answered the call itself (a guard's denial, bad arguments, a timeout), a tool error. A tool
    error names the skills there are."""

    def __init__(self, state: AgentState, registry: Registry) -> None:
        self._state = state
        self._registry = registry

    async def wrap_tool_call(self, request: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        if request.name == CHECK_TOOL:
            return await call_next(request)  # its observation is already on the stream
        with observed() as slot:
            result = await call_next(request)
        seen = slot.observation
        if seen is None:
            seen = ToolErrorObservation(request.name, result.text)
        if isinstance(seen, ToolErrorObservation):
            available = self._registry.names_for("skill")
            seen = ToolErrorObservation(seen.skill_name, f"{seen.message}; available: {available}")
        self._state.stream.append(seen)
        return result
