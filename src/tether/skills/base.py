"""Skills: what a SkillAgent's model may call. A ``Skill`` is a tether tool (its arguments'
schema and pydantic validator come from the typed signature and docstring, as ``@tool``'s do)
with an optional pre-hook and post-hook around it; ``observe`` turns one call into the
observation the model is shown next."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, overload

from ..tools.results import describe_exception
from ..tools.tool import Tool
from .events import Observation, SkillObservation, ToolErrorObservation, ValidationErrorObservation
from .result import Result

__all__ = ["FunctionSkill", "Skill", "SkillFailed", "observed", "skill_summary"]


class SkillFailed(Exception):
    """A skill call ended in an error or a rejection; ``observation`` says which, for the model."""

    def __init__(self, observation: ToolErrorObservation | ValidationErrorObservation) -> None:
        text = (
            observation.message
            if isinstance(observation, ToolErrorObservation)
            else observation.feedback
        )
        super().__init__(text)
        self.observation = observation


@dataclass(slots=True)
class _Slot:
    observation: Observation | None = None


_SLOT: ContextVar[_Slot | None] = ContextVar("tether_skill_observation", default=None)


@contextmanager
def observed() -> Iterator[_Slot]:
    """Collect the observation of the skill call made inside (the door's middleware uses it)."""
    slot = _Slot()
    token = _SLOT.set(slot)
    try:
        yield slot
    finally:
        _SLOT.reset(token)


def skill_summary(doc: str | None) -> str:
    """A docstring's first paragraph, on one line."""
    first = inspect.cleandoc(doc or "").split("\n\n", 1)[0]
    return " ".join(first.split())


class Skill:
    """A capability the model can use. Subclass it (set ``name`` and ``description`` or let the
    class name and docstring give them; define a typed ``run``), or decorate a function with
    ``@skill``. Calling a skill runs it directly; ``as_tool()`` gives the engine's tool."""

    name: str = ""
    description: str = ""
    is_remote = False

    def __init__(
        self,
        *,
        pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None,
    ) -> None:
        self.pre_hook = pre_hook
        self.post_hook = post_hook
        self.name = self.name or type(self).__name__
        self.description = self.description or skill_summary(type(self).__doc__)
        probe = Tool(self.name, self._target(), self.description)
        self.args_schema: dict[str, Any] = dict(probe.schema or {})
        self._validator = probe.validator

    def _target(self) -> Callable[..., Any]:
        return self.run

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """What the skill does (override it with typed parameters)."""
        raise NotImplementedError(f"skill {self.name!r} defines no run()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def spec_for_llm(self) -> dict[str, Any]:
        """What the model is told of this skill: name, description, arguments' JSON Schema."""
        return {"name": self.name, "description": self.description, "args_schema": self.args_schema}

    def validate_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments checked and coerced by the signature's model; raises on bad ones."""
        return dict(self._validator(args)) if self._validator is not None else dict(args)

    def observe(self, args: Mapping[str, Any]) -> Observation:
        """One call, start to end, as an observation: never raises for what the skill does."""
        try:
            kwargs = self.validate_args(args)
        except Exception as exc:
            return self._error(f"args validation failed: {describe_exception(exc)}")
        return self.outcome(kwargs)

    def outcome(self, kwargs: Mapping[str, Any]) -> Observation:
        """Pre-hook, the skill, post-hook on already validated ``kwargs``, as an observation."""
        call: Callable[[], Any] = lambda: self._target()(**kwargs)  # noqa: E731
        if self.pre_hook is not None:
            try:
                shaped = self.pre_hook(**kwargs)
            except Exception as exc:
                return self._error(f"pre_hook {describe_exception(exc)}")
            call = self._shaped_call(shaped)
        try:
            value = call()
        except Exception as exc:
            return self._error(describe_exception(exc))
        checked = value
        if self.post_hook is not None:
            try:
                checked = self.post_hook(value)
            except Exception as exc:
                return self._error(f"post_hook {describe_exception(exc)}")
        return self._observation(value, checked)

    def _shaped_call(self, shaped: Any) -> Callable[[], Any]:
        if isinstance(shaped, Mapping):
            return lambda: self._target()(**shaped)
        return lambda: self._target()(shaped)

    def _observation(self, value: Any, checked: Any) -> Observation:
        """``checked`` is what the post-hook made of ``value``: a ``Result`` accepts (its value,
        when it has one, replaces the skill's) or rejects; anything else is the new value."""
        if not isinstance(checked, Result):
            return SkillObservation(self.name, checked)
        if checked.ok:
            own = checked is value  # the skill returned a Result itself
            kept = checked.value if own or checked.value is not None else value
            return SkillObservation(self.name, kept)
        hook = self.post_hook if checked is not value else None
        who = getattr(hook, "name", None) or getattr(hook, "__name__", None) or self.name
        return ValidationErrorObservation(str(who), checked.feedback or "validation failed")

    def _error(self, message: str) -> ToolErrorObservation:
        return ToolErrorObservation(self.name, message)

    def as_tool(self) -> Tool:
        """This skill as the engine's tool: arguments validated by the engine, hooks and the
        skill run in a worker thread; a failure is raised as ``SkillFailed`` (an error result)."""
        return Tool(
            self.name,
            self._engine_call,
            self.description,
            schema=self.args_schema,
            validator=self._validator,
            thread=True,
        )

    def _engine_call(self, **kwargs: Any) -> Any:
        observation = self.outcome(kwargs)
        slot = _SLOT.get()
        if slot is not None:
            slot.observation = observation
        if isinstance(observation, SkillObservation):
            return observation.result
        assert isinstance(observation, ToolErrorObservation | ValidationErrorObservation)
        raise SkillFailed(observation)


class FunctionSkill(Skill):
    """A skill made from a typed function (``@skill``): its name, docstring and signature."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a skill is made from a function, not {type(fn).__name__}")
        self.fn = fn
        self.name = getattr(fn, "__name__", "") or type(fn).__name__
        self.description = skill_summary(fn.__doc__)
        super().__init__(pre_hook=pre_hook, post_hook=post_hook)
        self.__doc__ = fn.__doc__

    def _target(self) -> Callable[..., Any]:
        return self.fn


@overload
def make_skill(fn: Callable[..., Any], /) -> FunctionSkill: ...
@overload
def make_skill(
    fn: None = None,
    /,
    *,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], FunctionSkill]: ...
def make_skill(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
) -> FunctionSkill | Callable[[Callable[..., Any]], FunctionSkill]:
    """A ``FunctionSkill`` from ``fn`` (bare decorator) or a decorator with hooks."""
    if fn is not None:
        return FunctionSkill(fn)
    return lambda f: FunctionSkill(f, pre_hook=pre_hook, post_hook=post_hook)
