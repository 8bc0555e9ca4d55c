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

from .transports.base import TakesResponseFormat

if TYPE_CHECKING:
    from .config import AgentConfig

__all__ = ["DONE", "OutputCheck", "OutputSpec", "asking_for", "spec_for"]

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```[ \t]*$", re.DOTALL)
_MAX_ERRORS = 10  # validation errors quoted back to the model


@dataclass(frozen=True, slots=True)
class OutputSpec(Generic[T]):
    """What a typed run asks for and how it reads the answer (pydantic validates); the schema
    is made once, when the spec is."""

    target: type[T]
    adapter: Any
    schema: dict[str, Any]

    @classmethod
    def of(cls, output: type[T]) -> OutputSpec[T]:
        from pydantic import TypeAdapter  # noqa: PLC0415 - only typed answers load it

        adapter = TypeAdapter(output)
        return cls(output, adapter, adapter.json_schema())

    @property
    def name(self) -> str:
        """The type's name, as the response format and error messages give it."""
        return getattr(self.target, "__name__", None) or str(self.target)

    def instruction(self) -> str:
        """The shape the answer must take, for a model asked in words."""
        schema = json.dumps(self.schema, separators=(",", ":"))
        return (
            "Answer with only a JSON value (no prose, no code fence) that matches this JSON "
            f"Schema: {schema}"
        )

    def response_format(self) -> dict[str, Any]:
        """The provider's JSON-schema response format for this type."""
        name = re.sub(r"[^A-Za-z0-9_-]", "_", self.name)[:64] or "output"
        return {"name": name, "schema": self.schema}

    def read(self, text: str) -> T:
        """The answer as a ``T``; raises pydantic's ``ValidationError`` if it is not one."""
        body = text.strip()
        fenced = _FENCE.match(body)
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


def asking_for(agent: AgentConfig, spec: OutputSpec[Any]) -> AgentConfig:
    """``agent`` for one typed run: its transport with the response format set where it takes
    one, else its system prompt with the instruction added."""
    transport = agent.transport
    if _takes_format(type(transport)):
        assert isinstance(transport, TakesResponseFormat)
        return agent.copy(transport=transport.with_response_format(spec.response_format()))
    system = f"{agent.system}\n\n{spec.instruction()}" if agent.system else spec.instruction()
    return agent.copy(system=system)


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


class _Done:
    """An awaitable already done: what a step returns when it has nothing to wait for, cheaper
    to await than a coroutine made for nothing."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


DONE = _Done()
