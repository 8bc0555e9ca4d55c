"""Plain value types shared by messages, events and transports: stop reasons, usage, tool specs,
and an ``Elicitation`` (a question a tool's server puts to the user)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal

__all__ = ["Elicitation", "StopReason", "ToolSpec", "Usage"]


class StopReason(StrEnum):
    """Why a model turn (or a whole run) ended, normalised across providers.

    Each member is also reachable under axio's lowercase name (``StopReason.end_turn is
    StopReason.END_TURN``); the aliases share the value and are not listed when iterating.
    """

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    PAUSE_TURN = "pause_turn"
    CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
    CANCELLED = "cancelled"
    ERROR = "error"
    UNKNOWN = "unknown"
    PAUSED = "paused"  # a run only: calls wait for a person's approval (``Agent(approval=)``)
    REPEATED_CALLS = "repeated_calls"  # a run only: ``Limits(repeated_calls=)`` stopped it

    # axio's spellings. Type checkers see each alias as the member itself, the runtime as an alias.
    if TYPE_CHECKING:
        end_turn: ClassVar[Literal[StopReason.END_TURN]]
        tool_use: ClassVar[Literal[StopReason.TOOL_USE]]
        max_tokens: ClassVar[Literal[StopReason.MAX_TOKENS]]
        refusal: ClassVar[Literal[StopReason.REFUSAL]]
        pause_turn: ClassVar[Literal[StopReason.PAUSE_TURN]]
        context_window_exceeded: ClassVar[Literal[StopReason.CONTEXT_WINDOW_EXCEEDED]]
        cancelled: ClassVar[Literal[StopReason.CANCELLED]]
        error: ClassVar[Literal[StopReason.ERROR]]
        unknown: ClassVar[Literal[StopReason.UNKNOWN]]
        paused: ClassVar[Literal[StopReason.PAUSED]]
        repeated_calls: ClassVar[Literal[StopReason.REPEATED_CALLS]]
    else:
        end_turn = END_TURN
        tool_use = TOOL_USE
        max_tokens = MAX_TOKENS
        refusal = REFUSAL
        pause_turn = PAUSE_TURN
        context_window_exceeded = CONTEXT_WINDOW_EXCEEDED
        cancelled = CANCELLED
        error = ERROR
        unknown = UNKNOWN
        paused = PAUSED
        repeated_calls = REPEATED_CALLS


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model call or, summed with ``+``, for a whole run.

    ``input_tokens`` counts every prompt token, cached ones included; ``cache_read_tokens`` and
    ``cache_write_tokens`` say how many of those were read from or written to a prompt cache.
    ``reasoning_tokens`` is the part of ``output_tokens`` spent on reasoning.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens (cache and reasoning tokens are already inside those)."""
        return self.input_tokens + self.output_tokens


ZERO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a transport sends to the model for one tool: name, description, JSON Schema.

    ``strict`` asks providers that support it to constrain arguments to the schema exactly.
    """

    name: str
    description: str
    schema: Mapping[str, Any]
    strict: bool | None = None


@dataclass(frozen=True, slots=True)
class Elicitation:
    """What a server asks: ``message`` for the user and, in ``"form"`` mode, ``schema`` (the
    requested JSON Schema: a flat object of strings, numbers, booleans and enums); in
    ``"url"`` mode ``url``, a page the user is to open (``schema`` is empty). ``server`` is the
    server's label (its command line or URL, credentials left out); ``tool`` and ``arguments``
    name the call that asked, when it is known. ``key`` is the server's name for the question
    when a run paused for it: a resume's ``answers`` give each answer under its key."""

    message: str
    schema: Mapping[str, Any]
    server: str
    tool: str | None = None
    arguments: Mapping[str, Any] | None = None
    mode: Literal["form", "url"] = "form"
    url: str | None = None
    key: str | None = None

    @property
    def fields(self) -> Mapping[str, Any]:
        """The fields asked for, by name (each a JSON Schema of one value)."""
        properties = self.schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}
