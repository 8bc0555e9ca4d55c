"""A SkillAgent run's record: the actions the model chose, the observations they led to, the
``EventStream`` that keeps them in order and the ``AgentState`` a run returns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, overload

__all__ = [
    "Action",
    "AgentState",
    "CallSkillAction",
    "EventStream",
    "FinalAnswerAction",
    "MaxIterationsObservation",
    "ModelErrorObservation",
    "Observation",
    "SkillObservation",
    "ToolErrorObservation",
    "ValidationErrorObservation",
]


@dataclass(frozen=True, slots=True)
class Action:
    """Something the model decided to do."""


@dataclass(frozen=True, slots=True)
class CallSkillAction(Action):
    """Run ``skill_name`` with ``args``."""

    skill_name: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    thought: str = ""


@dataclass(frozen=True, slots=True)
class FinalAnswerAction(Action):
    """The model's answer; the run ends with it."""

    answer: str = ""
    thought: str = ""


@dataclass(frozen=True, slots=True)
class Observation:
    """Something that happened because of an action, shown to the model next round."""


@dataclass(frozen=True, slots=True)
class SkillObservation(Observation):
    """A skill ran; ``result`` is its value (after its post-hook)."""

    skill_name: str
    result: Any


@dataclass(frozen=True, slots=True)
class ToolErrorObservation(Observation):
    """A skill could not run or raised; ``message`` says why and lists the skills there are."""

    skill_name: str
    message: str


@dataclass(frozen=True, slots=True)
class ValidationErrorObservation(Observation):
    """A check refused the model's reply or a skill's value; ``feedback`` says what to fix."""

    validator_name: str
    feedback: str


@dataclass(frozen=True, slots=True)
class ModelErrorObservation(Observation):
    """The model could not be asked: its handle raised on every one of ``attempts`` tries;
    ``message`` is the last error. The run ends with it."""

    message: str
    attempts: int = 1


@dataclass(slots=True)
class EventStream:
    """The run's events in order: append-only, iterable, indexable."""

    events: list[Action | Observation] = field(default_factory=list)

    def append(self, event: Action | Observation) -> None:
        """Add ``event`` at the end (only actions and observations are events)."""
        if not isinstance(event, Action | Observation):
            raise TypeError(
                f"EventStream only accepts Action or Observation, got {type(event).__name__}"
            )
        self.events.append(event)

    def __iter__(self) -> Iterator[Action | Observation]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @overload
    def __getitem__(self, index: int) -> Action | Observation: ...
    @overload
    def __getitem__(self, index: slice) -> list[Action | Observation]: ...
    def __getitem__(self, index: int | slice) -> Action | Observation | list[Action | Observation]:
        return self.events[index]

    def replay(self) -> str:
        """The run as text, one line per event: ``[i] Action|Observation :: Type :: repr``."""
        return "\n".join(
            f"[{i}] {'Action' if isinstance(e, Action) else 'Observation'} :: "
            f"{type(e).__name__} :: {e!r}"
            for i, e in enumerate(self.events)
        )


@dataclass(frozen=True, slots=True)
class MaxIterationsObservation(Observation):
    """The run used all its iterations without an answer: how many, the last event, and a
    deep copy of the stream as it was (the run's partial state)."""

    iterations: int
    last_action_summary: str = ""
    partial_state: EventStream = field(default_factory=EventStream)


@dataclass(slots=True)
class AgentState:
    """What a run works on and returns: the query and the stream of its events."""

    query: str
    stream: EventStream = field(default_factory=EventStream)

    @property
    def final_answer(self) -> str | None:
        """The answer the run ended with, if it ended with one."""
        last = self.stream[-1] if len(self.stream) else None
        return last.answer if isinstance(last, FinalAnswerAction) else None
