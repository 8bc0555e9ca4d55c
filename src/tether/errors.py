"""The exception tree, in one place.

TetherError
├── TransportError            a model call failed (``retryable``, ``retry_after``)
├── StreamContractError       a transport broke the event-stream contract
├── StreamError               a stream of events read on its own carried an ``Error`` (axio)
├── ModelStopError            the model stopped for a reason that is not an answer
├── MaxIterationsError        the loop hit ``max_iterations``
├── GuardrailError            an input or output guardrail denied the run
├── GuardError                a tool guard refused a call (axio's name; becomes an error result)
├── OutputValidationError     the answer is not the typed output asked for, after the repairs
├── LimitExceeded             the run passed one of its ``Limits`` (limit, value, maximum)
├── RunPaused                 tool calls wait for a person's approval (``pending``)
├── ToolNotFoundError         the model called an unknown tool (``unknown_tool="raise"``)
├── ToolArgumentError         a tool's arguments failed validation (becomes an error result)
├── RunCancelled              a ``CancellationToken`` stopped the run
├── ConflictError             another writer wrote to the stored session first
├── StoreDamagedError         a stored record cannot be read back (session, position)
├── StoreUnavailableError     a store's server could not be reached or dropped the connection
├── PayloadTooLargeError      a durable run's value is over Temporal's limit, nowhere to offload
├── RemoteError               an exception read back from JSON whose type is not known here
└── CassetteError             a cassette does not match the requests, or is damaged (``path``)

Warnings (``warnings.warn``, filtered by class):

UserWarning
└── ToolSchemaWarning         a tool tells the model too little (no description, an untyped
                              parameter): the message says what the model will see
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .events import PendingCall

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "CassetteError",
    "ConflictError",
    "ConnectionFailedError",
    "ContextWindowExceededError",
    "GuardError",
    "GuardrailError",
    "LimitExceeded",
    "MaxIterationsError",
    "ModelStopError",
    "OutputValidationError",
    "OverloadedError",
    "PayloadTooLargeError",
    "RateLimitError",
    "RemoteError",
    "RunCancelled",
    "RunPaused",
    "ServerError",
    "StoreDamagedError",
    "StoreUnavailableError",
    "StreamContractError",
    "StreamError",
    "StreamInterruptedError",
    "TetherError",
    "ToolArgumentError",
    "ToolNotFoundError",
    "ToolSchemaWarning",
    "TransportError",
]


class TetherError(Exception):
    """Base of every error tether raises on purpose."""


class TransportError(TetherError):
    """A model call failed. ``retryable`` says whether the same request may succeed later."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status_code = status_code


class AuthenticationError(TransportError):
    """The provider refused the credentials (401/403)."""


class RateLimitError(TransportError):
    """Too many requests (429); ``retry_after`` is the server's advice in seconds, if given."""


class ContextWindowExceededError(TransportError):
    """The request is larger than the model's context window."""


class BadRequestError(TransportError):
    """The provider rejected the request; the message is the provider's own."""


class OverloadedError(TransportError):
    """The provider is overloaded (503/529); worth retrying later."""


class ServerError(TransportError):
    """The provider failed (5xx); worth retrying."""


class ConnectionFailedError(TransportError):
    """No response arrived: connection refused, name not resolved, or a timeout."""


class StreamInterruptedError(TransportError):
    """The response stream broke after it had begun; what arrived before is kept."""


class StreamContractError(TetherError):
    """A transport's event stream broke the contract (e.g. it ended with no ``IterationEnd``)."""


class StreamError(TetherError):
    """An ``AgentStream`` made from events alone carried an ``Error`` event (its exception is
    the ``__cause__``) or ended without a ``SessionEndEvent``; axio code catches this name."""


class ModelStopError(TetherError):
    """The model stopped for a reason that is not a usable answer (max_tokens, context, error)."""

    def __init__(
        self, message: str, *, stop_reason: str = "unknown", partial_text: str = ""
    ) -> None:
        super().__init__(message)
        self.stop_reason = stop_reason
        self.partial_text = partial_text


class MaxIterationsError(TetherError):
    """The loop reached ``max_iterations`` while the model still wanted to call tools."""


class GuardrailError(TetherError):
    """An input or output guardrail denied the run; ``reason`` is what it said, the message says
    which guardrail."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


class GuardError(TetherError):
    """A tool guard refused a call: axio's guards raise it from ``check`` (any exception a guard
    raises denies the call; the model reads its message)."""


class ToolNotFoundError(TetherError):
    """The model called a tool the agent lacks (raised only under ``unknown_tool="raise"``)."""


class RunCancelled(TetherError):
    """A ``CancellationToken`` was cancelled; the context was left valid."""


class ConflictError(TetherError):
    """Another writer appended to the session first; nothing of this append was stored."""


class StoreUnavailableError(TetherError):
    """The store's server could not be reached, or the connection broke during a call. A
    context settles an append whose outcome this hid before its next write."""


class StoreDamagedError(TetherError, ValueError):
    """A stored record cannot be read back. ``session_id`` and ``position`` (the message's
    index in the session) say where; other sessions are not affected."""

    def __init__(
        self, message: str, *, session_id: str | None = None, position: int | None = None
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.position = position


class PayloadTooLargeError(TetherError):
    """A durable run would hand Temporal a value over its payload limit (2 MB by default) and
    has nowhere to offload it: give the ``TemporalAgent`` a store or ``blobs=``."""


class RemoteError(TetherError):
    """An exception deserialised from JSON whose type is not one of tether's own."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


class ToolArgumentError(TetherError):
    """A tool's arguments failed validation; the message names the bad fields for the model."""


class ToolSchemaWarning(UserWarning):
    """A tool tells the model too little: it has no description, or a parameter has no type the
    model can read (no annotation, or a type with no JSON Schema). The tool still works; the
    message says what the model will see and how to say more."""


class OutputValidationError(TetherError):
    """The model's answer did not validate as the typed output asked for, even after the repair
    attempts; ``text`` is the last answer and ``errors`` what was wrong with it."""

    def __init__(self, message: str, *, text: str, errors: list[Any]) -> None:
        super().__init__(message)
        self.text = text
        self.errors = errors


class LimitExceeded(TetherError):
    """The run passed one of its ``Limits``: ``limit`` names it (``"total_tokens"``, ``"cost"``,
    ...), ``value`` is what the run reached, ``maximum`` what was allowed. Every call the run
    stored has a result."""

    def __init__(self, limit: str, value: float, maximum: float) -> None:
        super().__init__(
            f"the run reached its {limit} limit ({maximum:g})"
            if value == maximum  # a limit that ends the run as it is reached (seconds, repeats)
            else f"the run passed its {limit} limit: {value:g} > {maximum:g}"
        )
        self.limit = limit
        self.value = value
        self.maximum = maximum

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.limit, self.value, self.maximum))


class RunPaused(TetherError):
    """The run stopped because tool calls wait for a person (``Agent(approval=...)``), or for
    the user's input (a tool's server asked): ``pending`` holds them (``PendingCall``s; one
    that waits for input has ``asks``). They stay unanswered in the stored session until
    ``agent.resume(context, approve=[...], deny={...}, answers={...})`` decides them, in any
    process."""

    def __init__(self, pending: Sequence[PendingCall]) -> None:
        self.pending: tuple[PendingCall, ...] = tuple(pending)
        calls = ", ".join(f"{call.name} ({call.id})" for call in self.pending)
        asking = sum(1 for call in self.pending if call.asks)
        what = (
            "approval"
            if not asking
            else "the user's input"
            if asking == len(self.pending)
            else "approval or the user's input"
        )
        super().__init__(
            f"the run paused: {len(self.pending)} tool call(s) wait for {what}: {calls}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.pending,))


class CassetteError(TetherError):
    """A cassette (``tether.testing.Cassette``) that does not match what the run sent, or that is
    missing, damaged or edited: ``path`` names its file, the message what to do."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(f"cassette {path}: {message}")
        self.path = path
