"""Every exception the Prompty door raises (spec §4.5, §9.9, §12.4, §13, §14), in one tree. Each
subclasses the type the spec names, so code written against the spec (``except ValueError``)
still catches it, and the agent loop's carry the matching tether error as a base, so code
written against tether (``except tether.RunCancelled``) catches them too.

PromptyError
├── LoadError (ValueError)          a .prompty file, or a file it references, is unusable
│   ├── MissingFileError            the file is not there (also a FileNotFoundError)
│   ├── EnvAccessError              the file reads a variable the caller did not allow
│   ├── CredentialEndpointError     a credential from the environment would go to a host the
│   │                               file wrote (raised before any request)
│   ├── OutsideRootError            a file it names lies outside the allowed folders
│   └── InputError                  the inputs given do not satisfy the agent's declared inputs
├── RenderError (ValueError)        a template could not be rendered
│   ├── TemplateSyntaxError, TemplateSecurityError, TemplateLimitError, StrictViolation
├── ParseError (ValueError)         rendered text could not become messages
│   └── RoleInjectionError          an input forged a role marker
├── RichInputError (ValueError)     a thread/image/file/audio input of the wrong shape
├── InvokerError (LookupError)      no renderer or parser for a key
├── WireError (ValueError)          the agent's model cannot be reached as written
├── ToolKindError (ValueError)      a tool of a built-in kind cannot be called as written
├── StructuredOutputError           the answer is not the JSON the agent's outputs ask for
└── DiscoveryError (ValueError)     a model record or list that cannot be read

The agent loop's, each with ``messages`` (the conversation as it was left):
ExecuteError (RuntimeError)                             the model call failed every retry
IterationLimitError (tether.MaxIterationsError)         tool rounds past ``max_iterations``
ToolNotRegisteredError (tether.ToolNotFoundError)       a tool the agent does not declare
ModelRefusedError (ValueError)                          the model refused
TurnCancelled (tether.RunCancelled)                     the spec's ``CancelledError``
TurnGuardrailError (tether.GuardrailError)              the spec's ``GuardrailError``
TurnLimitExceeded (tether.LimitExceeded)                the run passed one of its ``limits``

IndeterminateOutcome: raised by a host's transport or tool in a durable turn (§14).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import (
    GuardrailError,
    LimitExceeded,
    MaxIterationsError,
    RunCancelled,
    ToolNotFoundError,
)
from .env import hide

if TYPE_CHECKING:
    from .messages import PromptMessage

__all__ = [
    "CredentialEndpointError",
    "DiscoveryError",
    "EnvAccessError",
    "ExecuteError",
    "IndeterminateOutcome",
    "InputError",
    "InvokerError",
    "IterationLimitError",
    "LoadError",
    "MissingFileError",
    "ModelRefusedError",
    "OutsideRootError",
    "ParseError",
    "PromptyError",
    "RenderError",
    "RichInputError",
    "RoleInjectionError",
    "StrictViolation",
    "StructuredOutputError",
    "TemplateLimitError",
    "TemplateSecurityError",
    "TemplateSyntaxError",
    "ToolKindError",
    "ToolNotRegisteredError",
    "TurnCancelled",
    "TurnGuardrailError",
    "TurnLimitExceeded",
    "WireError",
]


class PromptyError(Exception):
    """Base of every error the Prompty door raises on purpose. A value the file read from the
    environment never shows in its message: its ``${env:NAME}`` reference does."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(hide(a) if isinstance(a, str) else a for a in args))


class LoadError(PromptyError, ValueError):
    """A .prompty file cannot be loaded; ``path``, ``line`` (1-based) and ``field`` (a dotted
    frontmatter path such as ``model.connection.endpoint``) say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = hide(message)
        self.path = path
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = [
            part
            for part in (
                self.path,
                None if self.line is None else f"line {self.line}",
                None if self.field is None else f"field {self.field}",
            )
            if part
        ]
        return f"{self.message} ({', '.join(where)})" if where else self.message

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"path": self.path, "line": self.line, "field": self.field}
        return (_rebuild, (type(self), self.message, fields))


class MissingFileError(LoadError, FileNotFoundError):
    """The .prompty file, or a file a ``${file:...}`` reference names, does not exist."""


class EnvAccessError(LoadError):
    """The file references ``${env:NAME}`` and the caller did not allow ``NAME`` (``load(...,
    env=[...])``); ``variable`` is the name. The variable was not read."""

    def __init__(self, message: str, *, variable: str | None = None, **where: Any) -> None:
        super().__init__(message, **where)
        self.variable = variable

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"path": self.path, "line": self.line, "field": self.field}
        return (_rebuild, (type(self), self.message, {**fields, "variable": self.variable}))


class CredentialEndpointError(LoadError):
    """A credential the file read from the environment (``variable``, at ``field``) would go to
    ``host``, an endpoint written in the file itself rather than the provider's own host, one from
    the environment, or one the application's code set. Raised before any request is made; the
    message names the variable and the host, never the value."""

    def __init__(
        self,
        message: str,
        *,
        variable: str | None = None,
        host: str | None = None,
        **where: Any,
    ) -> None:
        super().__init__(message, **where)
        self.variable = variable
        self.host = host

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"path": self.path, "line": self.line, "field": self.field}
        more = {"variable": self.variable, "host": self.host}
        return (_rebuild, (type(self), self.message, {**fields, **more}))


class OutsideRootError(LoadError):
    """A file the .prompty names (``${file:}``, a tool's ``path`` or ``specification``) lies
    outside its folder and the allowed roots, by its path or through a symbolic link."""


class InputError(LoadError):
    """An input the agent declares as required was not given (spec §12.2); ``field`` is the
    input's name and ``path``/``line`` where it is declared."""


def _rebuild(cls: type[LoadError], message: str, fields: dict[str, Any]) -> LoadError:
    return cls(message, **fields)


class InvokerError(PromptyError, LookupError):
    """No implementation is registered for a key (spec §12.4, Discovery)."""


class RenderError(PromptyError, ValueError):
    """A template could not be rendered."""


class TemplateSyntaxError(RenderError):
    """The template is not valid in its engine's syntax."""


class TemplateSecurityError(RenderError):
    """The template tried something the sandbox refuses (internals, code, loading files)."""


class TemplateLimitError(RenderError):
    """The template or its output went past a size, depth or work cap."""


class StrictViolation(RenderError):
    """A ``strict`` input's value carries a would-be role boundary (jinja-subset §8.4)."""


class ParseError(PromptyError, ValueError):
    """Rendered text could not be parsed into messages."""


class RoleInjectionError(ParseError):
    """A role marker carried a nonce other than this render's, or a signed marker was altered
    by a rendered value: an input forged it."""


class RichInputError(PromptyError, ValueError):
    """A thread/image/file/audio input's value has a shape that cannot become messages/parts."""


class WireError(PromptyError, ValueError):
    """The agent's model cannot be reached as written (unknown provider, API type, connection)."""


class ToolKindError(PromptyError, ValueError):
    """A tool call cannot be made as its definition or arguments say (the model sees the text)."""


class StructuredOutputError(PromptyError, ValueError):
    """The model's answer is not the JSON the agent's ``outputs`` (or ``target_type``) ask for."""


class DiscoveryError(PromptyError, ValueError):
    """A model record or model list that cannot be read; the message names the field."""


class ExecuteError(RuntimeError):
    """The model call failed ``max_llm_retries`` times; ``messages`` is the conversation so far
    (pass it back as the thread of the next ``turn`` to go on)."""

    def __init__(self, message: str, messages: Sequence[PromptMessage]) -> None:
        super().__init__(hide(message))
        self.messages = list(messages)


class IterationLimitError(MaxIterationsError, RuntimeError):
    """The model still called tools after ``max_iterations`` rounds of them; ``messages`` is the
    conversation so far."""

    def __init__(self, message: str, messages: Sequence[PromptMessage]) -> None:
        super().__init__(message)
        self.messages = list(messages)


class ToolNotRegisteredError(ToolNotFoundError, ValueError):
    """The model called a tool the agent does not declare: a configuration error (§9.9)."""

    def __init__(self, message: str, messages: Sequence[PromptMessage]) -> None:
        super().__init__(hide(message))
        self.messages = list(messages)


class ModelRefusedError(ValueError):
    """The model refused to answer (§12.4: ``Model refused: {message}``); ``messages`` is the
    conversation, the refusal last."""

    def __init__(self, refusal: str, messages: Sequence[PromptMessage]) -> None:
        super().__init__(f"Model refused: {refusal}")
        self.refusal = refusal
        self.messages = list(messages)


class TurnCancelled(RunCancelled):
    """The run's cancellation token was cancelled (§13.2); ``reason`` says where it stopped,
    ``messages`` is the conversation as it was left (every call answered)."""

    def __init__(self, reason: str, messages: Sequence[PromptMessage]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.messages = list(messages)


class TurnGuardrailError(GuardrailError):
    """A guardrail denied the run (§13.4); ``reason`` is what it said, ``messages`` the
    conversation so far."""

    def __init__(self, message: str, reason: str, messages: Sequence[PromptMessage]) -> None:
        super().__init__(message, reason)
        self.messages = list(messages)


class TurnLimitExceeded(LimitExceeded):
    """The turn passed one of its ``limits`` (``tether.Limits``); ``messages`` is the
    conversation so far, every call in it answered."""

    def __init__(
        self, limit: str, value: float, maximum: float, messages: Sequence[PromptMessage]
    ) -> None:
        super().__init__(limit, value, maximum)
        self.messages = list(messages)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.limit, self.value, self.maximum, self.messages))


class IndeterminateOutcome(Exception):
    """Raised by a model transport or a tool when it cannot tell whether its effect happened.

    The engine never retries such an outcome: the turn ends ``reconciliation_required`` with the
    stable invocation or execution id, for the host to query before going on.
    """
