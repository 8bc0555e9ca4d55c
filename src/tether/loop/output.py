"""Typed final answers: the schema asked for (the provider's JSON-schema response format where the
transport has one, else in the instructions), the answer read and validated, and the text that
sends an invalid answer back to the model for repair."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import OutputValidationError
from ..messages import Message
from ..transports.base import TakesResponseFormat

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ..base.clock import Clock
    from ..transports.base import CompletionTransport
    from ..transports.retry import RetryPolicy
    from .config import AgentConfig
    from .state import RunState

__all__ = ["DONE", "OutputCheck", "OutputSpec", "TypedModel", "spec_for", "typed_model"]

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```[ \t]*$", re.DOTALL)
_MAX_ERRORS = 10  # validation errors quoted back to the model


@dataclass(frozen=True, slots=True)
class OutputSpec(Generic[T]):
    """What a typed run asks for and how it reads the answer (pydantic validates); the schema
    and the instruction that quotes it are made once, when the spec is."""

    target: type[T]
    adapter: Any
    schema: dict[str, Any]
    instruction: str  # the shape the answer must take, for a model asked in words
    invalid: type[ValidationError]  # what the adapter raises for an invalid answer

    @classmethod
    def of(cls, output: type[T]) -> OutputSpec[T]:
        from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415 - only typed runs

        adapter = TypeAdapter(output)
        schema = adapter.json_schema()
        shape = json.dumps(schema, separators=(",", ":"))
        instruction = (
            "Answer with only a JSON value (no prose, no code fence) that matches this JSON "
            f"Schema: {shape}"
        )
        return cls(output, adapter, schema, instruction, ValidationError)

    @property
    def name(self) -> str:
        """The type's name, as the response format and error messages give it."""
        return getattr(self.target, "__name__", None) or str(self.target)

    def response_format(self) -> dict[str, Any]:
        """The provider's JSON-schema response format for this type."""
        name = re.sub(r"[^A-Za-z0-9_-]", "_", self.name)[:64] or "output"
        return {"name": name, "schema": self.schema}

    def read(self, text: str) -> T:
        """The answer as a ``T``; raises pydantic's ``ValidationError`` if it is not one."""
        body = text.strip()
        fenced = _FENCE.match(body) if body.startswith("```") else None
        if fenced:
            body = fenced.group(1).strip()
        value: T = self.adapter.validate_json(body)
        return value

    @staticmethod
    def repair(error: Any) -> str:
        """The message that sends a failed answer back: what was wrong, where."""
        problems = [
            f"- {'.'.join(str(p) for p in e['loc']) or '(the value)'}: {e['msg']}"
            for e in error.errors(include_url=False)[:_MAX_ERRORS]
        ]
        return (
            "Your answer did not match the required JSON Schema:\n"
            + "\n".join(problems)
            + "\nReply again with only the corrected JSON value."
        )


@dataclass(slots=True)  # not frozen: made once per run, and a frozen init costs twice as much
class TypedModel:
    """An agent's model settings for a typed run (what a reply reads: a ``ModelSettings``),
    made without copying the agent: a copy costs more than the rest of a short run."""

    transport: CompletionTransport
    system: str
    retry: RetryPolicy
    clock: Clock


def typed_model(agent: AgentConfig, spec: OutputSpec[Any]) -> TypedModel:
    """``agent``'s model settings asking for ``spec``: its transport with the response format
    set where it takes one, else its system prompt with the instruction added."""
    transport, system = agent.transport, agent.system
    if _takes_format(type(transport)):
        assert isinstance(transport, TakesResponseFormat)
        transport = transport.with_response_format(spec.response_format())
    else:
        system = f"{system}\n\n{spec.instruction}" if system else spec.instruction
    return TypedModel(transport, system, agent.retry, agent.clock)


@functools.cache
def _takes_format(kind: type) -> bool:
    """Whether transports of ``kind`` take a response format (a protocol check is slow: once
    per class)."""
    return callable(getattr(kind, "with_response_format", None))


def spec_for(output: Any) -> OutputSpec[Any]:
    """The spec of ``output``, built once per type (a pydantic adapter is costly to build)."""
    try:
        return _cached_spec(output)
    except TypeError:  # an unhashable type form
        return OutputSpec.of(output)


@functools.lru_cache(maxsize=128)
def _cached_spec(output: Any) -> OutputSpec[Any]:
    return OutputSpec.of(output)


@dataclass(slots=True)
class OutputCheck:
    """One typed run's spec and how many repairs it has asked for."""

    spec: OutputSpec[Any]
    repairs: int = 0

    def read(self, state: RunState, retries: int) -> Message | None:
        """Read the run's answer into ``state.output``; an invalid one gives the message that
        sends it back for repair, or ``OutputValidationError`` once ``retries`` are spent."""
        spec = self.spec
        try:
            state.output = spec.read(state.final_text)
        except spec.invalid as exc:
            if self.repairs >= retries:
                raise OutputValidationError(
                    f"the answer is not a valid {spec.name} after {self.repairs} repair "
                    f"attempt(s): {exc}",
                    text=state.final_text,
                    errors=exc.errors(include_url=False),
                ) from exc
            self.repairs += 1
            return Message("user", spec.repair(exc))
        return None


class _Done:
    """An awaitable already done: what a step returns when it has nothing to wait for, cheaper
    to await than a coroutine made for nothing."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


DONE = _Done()
