"""Typed final answers: the schema asked for, the answer read and validated, and the text that
sends an invalid answer back to the model for repair.

The schema goes where the model can use it on each turn (``TypedModels``): in the instructions
while tools are on offer (a response format would rule tool calls out on servers that enforce
it as a grammar, llama.cpp's among them), in the provider's JSON-schema response format when
the model is to answer (no tools on offer, or repairing an answer, tool calls then turned off)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..errors import OutputValidationError
from ..messages import Message
from ..transports.base import TakesResponseFormat

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ..base.clock import Clock
    from ..messages import ToolUseBlock
    from ..transports.base import CompletionTransport, TakesOptions
    from ..transports.retry import RetryPolicy
    from .config import AgentConfig
    from .state import RunState

__all__ = ["DONE", "OutputCheck", "OutputSpec", "TypedModel", "TypedModels", "spec_for"]

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```[ \t]*$", re.DOTALL)
_MAX_ERRORS = 10  # validation errors quoted back to the model
_TOOLS_FIRST = "Call the tools you need first. Then, for your final answer: "


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
            "Answer with only a JSON value (no prose, no code fence) that is an instance of "
            f"this JSON Schema: {shape}\n{_instance(schema)}"
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


def _instance(schema: dict[str, Any]) -> str:
    """What an instance is, in words: small models otherwise often answer with the schema."""
    keys = schema.get("properties") if schema.get("type") == "object" else None
    if isinstance(keys, dict) and keys:
        named = ", ".join(json.dumps(k) for k in keys)
        return f"That is, an object with the keys {named} holding your answer, not the schema."
    return "That is, your answer's value itself, not the schema."


@dataclass(slots=True)  # not frozen: made once per run, and a frozen init costs twice as much
class TypedModel:
    """An agent's model settings for a typed run (what a reply reads: a ``ModelSettings``),
    made without copying the agent: a copy costs more than the rest of a short run."""

    transport: CompletionTransport
    system: str
    retry: RetryPolicy
    clock: Clock


class TypedModels:
    """A typed run's model settings by turn, each made when first needed: ``asking`` (tools on
    offer: the schema in the instructions, no response format), ``answering`` (no tools: the
    response format where the transport takes one, else the instructions) and ``repairing``
    (tools on offer after an invalid answer: the instructions, the response format and no tool
    calls, where the transport takes them). Constrained calls hold no typed turn: asked for an
    answer in a schema of its own, a small model held to ``{"answer"}`` or ``{"calls"}`` made
    the answer up instead of calling the tool that knew it."""

    __slots__ = ("_answering", "_asking", "_repairing", "agent", "spec")

    def __init__(self, agent: AgentConfig, spec: OutputSpec[Any]) -> None:
        self.agent, self.spec = agent, spec
        self._asking: TypedModel | None = None
        self._answering: TypedModel | None = None
        self._repairing: TypedModel | None = None

    def pick(self, tools: bool, repairing: bool) -> TypedModel:
        """The settings of a turn with ``tools`` on offer (or none), ``repairing`` an answer."""
        if not tools:
            if self._answering is None:
                self._answering = self._answer()
            return self._answering
        if repairing:
            if self._repairing is None:
                self._repairing = self._repair()
            return self._repairing
        if self._asking is None:  # the schema in words, on the transport's own tool calls
            from ..transports.constrained import unconstrained  # noqa: PLC0415 - typed runs only

            self._asking = self._made(unconstrained(self.agent.transport), self._told())
        return self._asking

    def _told(self) -> str:
        """The agent's system prompt with the schema in words, tools first."""
        system, told = self.agent.system, _TOOLS_FIRST + self.spec.instruction
        return f"{system}\n\n{told}" if system else told

    def _answer(self) -> TypedModel:
        transport, system = self.agent.transport, self.agent.system
        if _takes_format(type(transport)):
            assert isinstance(transport, TakesResponseFormat)
            return self._made(transport.with_response_format(self.spec.response_format()), system)
        told = self.spec.instruction
        return self._made(transport, f"{system}\n\n{told}" if system else told)

    def _repair(self) -> TypedModel:
        transport = self.agent.transport
        if _takes_options(type(transport)):
            fmt = self.spec.response_format()
            options = cast("TakesOptions", transport)
            transport = options.with_options(response_format=fmt, tool_choice="none")
        elif _takes_format(type(transport)):
            assert isinstance(transport, TakesResponseFormat)
            transport = transport.with_response_format(self.spec.response_format())
        return self._made(transport, self._told())

    def _made(self, transport: CompletionTransport, system: str) -> TypedModel:
        agent = self.agent
        return TypedModel(transport, system, agent.retry, agent.clock)


@functools.cache
def _takes_format(kind: type) -> bool:
    """Whether transports of ``kind`` take a response format (a protocol check is slow: once
    per class)."""
    return callable(getattr(kind, "with_response_format", None))


@functools.cache
def _takes_options(kind: type) -> bool:
    """Whether transports of ``kind`` take model options (a tool choice with the format)."""
    return _takes_format(kind) and callable(getattr(kind, "with_options", None))


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
    """One typed run's spec, its model settings by turn, how many repairs it has asked for,
    the calls made so far and whether the model is taken to be ready to answer."""

    spec: OutputSpec[Any]
    models: TypedModels
    repairs: int = 0
    made: set[tuple[str, str]] = field(default_factory=set)
    ready: bool = False

    def model(self, tools: bool) -> TypedModel:
        """The settings of a turn with ``tools`` on offer (or none): see ``TypedModels``."""
        return self.models.pick(tools, self.ready or self.repairs > 0)

    def ran(self, calls: Sequence[ToolUseBlock]) -> None:
        """Note a reply's calls. A reply whose calls all repeat earlier ones (name and
        arguments) is taken as the model ready to answer: a small model writes its JSON answer
        in a call's form, which a tool-call grammar turns into the call it made last. Its next
        turn asks for the answer, tool calls off."""
        keys = {(c.name, json.dumps(c.input, sort_keys=True, default=str)) for c in calls}
        if keys and keys <= self.made:
            self.ready = True
        self.made |= keys

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
