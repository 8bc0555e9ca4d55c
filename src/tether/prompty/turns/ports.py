"""The turn engine's host bindings (turn-engine.md, "Runtime-Local Ports"): permission policy,
the wall clock, identifiers, provider-state classification and post-commit effects. Each is a
``Protocol`` with a small default, so a one-shot turn needs none of them configured."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from ..messages import PromptMessage
from .data import ContextState, TurnModelRequest, TurnModelResponse

__all__ = [
    "AllowAllPermissions",
    "DenyTools",
    "FixedClock",
    "IdGenerator",
    "PermissionDecision",
    "PermissionPort",
    "PermissionRequest",
    "PostCommitEffect",
    "PostCommitRequest",
    "ProviderStatePort",
    "SequentialIds",
    "TurnClock",
    "UtcClock",
    "post_commit_id",
    "resolved",
]

T = TypeVar("T")


async def resolved(value: T | Awaitable[T]) -> T:
    """``value``, awaited when a port answered with an awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """Asks whether one tool call may run; ``id`` is derived from the call's execution id."""

    id: str
    execution_id: str
    request_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    session_id: str
    turn_id: str
    iteration: int


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """The host's answer; a denial's ``reason`` is what the model sees."""

    approved: bool
    reason: str = ""


class PermissionPort(Protocol):
    """Host permission policy, resolved before every tool execution."""

    def decide(
        self, request: PermissionRequest
    ) -> PermissionDecision | Awaitable[PermissionDecision]:
        """Approve or deny the call."""
        ...


class AllowAllPermissions:
    """Approves every call (the default policy)."""

    __slots__ = ()

    def decide(self, request: PermissionRequest) -> PermissionDecision:
        return PermissionDecision(True, "allowed")


class DenyTools:
    """Denies calls of the named tools and approves the rest."""

    __slots__ = ("names", "reason")

    def __init__(self, names: Iterable[str], reason: str = "permission denied") -> None:
        self.names = frozenset(names)
        self.reason = reason

    def decide(self, request: PermissionRequest) -> PermissionDecision:
        if request.tool_name in self.names:
            return PermissionDecision(False, self.reason)
        return PermissionDecision(True, "allowed")


class TurnClock(Protocol):
    """The wall clock that stamps events."""

    def now(self) -> str:
        """The current time as an ISO-8601 string."""
        ...


class UtcClock:
    """The system clock, in UTC with a ``Z`` suffix."""

    __slots__ = ()

    def now(self) -> str:
        return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class FixedClock:
    """A clock that always says ``value`` (deterministic journals)."""

    value: str

    def now(self) -> str:
        return self.value


class IdGenerator(Protocol):
    """Identifiers for runs, snapshots, invocations, checkpoints and tool executions."""

    def next_id(self, kind: str) -> str:
        """A new id of ``kind`` (e.g. ``exec``), unique within the turn at least."""
        ...


class SequentialIds:
    """``kind-1``, ``kind-2``, … counted per kind: deterministic, so journals compare exactly."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def next_id(self, kind: str) -> str:
        self._counts[kind] += 1
        return f"{kind}-{self._counts[kind]}"


class ProviderStatePort(Protocol):
    """Says what provider-held state a response leaves for the next invocation (a previous
    response id, a conversation handle); None keeps the current state."""

    def next_state(
        self, request: TurnModelRequest, response: TurnModelResponse
    ) -> ContextState | Awaitable[ContextState | None] | None:
        """The context state after ``response``, or None for no change."""
        ...


@dataclass(frozen=True, slots=True)
class PostCommitRequest:
    """What a post-commit effect gets: the identity it must be idempotent on, and the turn."""

    effect_id: str
    session_id: str
    turn_id: str
    output: str | None
    messages: tuple[PromptMessage, ...]


class PostCommitEffect(Protocol):
    """Work after a successful commit (memory consolidation, indexing); must be idempotent."""

    def __call__(self, request: PostCommitRequest) -> Awaitable[None] | None:
        """Run the effect."""
        ...


def post_commit_id(session_id: str, turn_id: str) -> str:
    """The post-commit identity of a turn, encoded so no two (session, turn) pairs share one."""
    return "post-commit:" + json.dumps([session_id, turn_id], ensure_ascii=True)
