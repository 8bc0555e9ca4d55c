"""Lossless JSON forms of messages and events, shared by every store and durable run.

Each value becomes plain JSON data tagged with ``"type"``; ``*_from_dict`` reads it back into the
same frozen dataclasses. Exceptions carry their type name and message and come back as the same
tether exception class where it is one of ours, else as ``RemoteError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, Literal

from .. import errors
from ..events import (
    Compacted,
    CompactionFailed,
    ContextTrimmed,
    Error,
    Handoff,
    IterationEnd,
    IterationStart,
    PendingCall,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    SteeringInjected,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolInputDelta,
    ToolProgress,
    ToolResult,
    ToolUseStart,
)
from ..messages import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
    text_message,
)
from ..types import Elicitation, StopReason, Usage

__all__ = [
    "block_from_dict",
    "block_to_dict",
    "dumps_messages",
    "elicitation_from_dict",
    "elicitation_to_dict",
    "event_from_dict",
    "event_to_dict",
    "exception_from_dict",
    "exception_to_dict",
    "loads_messages",
    "message_from_dict",
    "message_from_json",
    "message_to_dict",
    "message_to_json",
    "pending_from_dict",
    "pending_to_dict",
]

# -- blocks and messages ---------------------------------------------------------------------


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    """One content block as JSON data."""
    if type(block) is TextBlock:
        return {"type": "text", "text": block.text}
    if type(block) is ToolUseBlock:
        d: dict[str, Any] = {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": dict(block.input),
        }
        if block.raw_arguments is not None:
            d["raw_arguments"] = block.raw_arguments
        if block.parse_error is not None:
            d["parse_error"] = block.parse_error
        return d
    if type(block) is ToolResultBlock:
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": _content_to_json(block.content),
            "is_error": block.is_error,
        }
    if type(block) is ReasoningBlock:
        return {
            "type": "reasoning",
            "text": block.text,
            "signature": block.signature,
            "redacted": block.redacted,
            "id": block.id,
            "provider": block.provider,
        }
    if type(block) is ImageBlock:
        d = {"type": "image", "media_type": block.media_type}
        if block.data is not None:
            d["data"] = block.data
        else:
            d["url"] = block.url
        return d
    if type(block) is AudioBlock:
        return {"type": "audio", "media_type": block.media_type, "data": block.data}
    raise TypeError(f"not a content block: {block!r}")


def block_from_dict(d: Mapping[str, Any]) -> ContentBlock:
    """Read back what ``block_to_dict`` wrote."""
    kind = d.get("type")
    if kind == "text":
        return TextBlock(d["text"])
    if kind == "tool_use":
        return ToolUseBlock(
            d["id"], d["name"], d.get("input", {}), d.get("raw_arguments"), d.get("parse_error")
        )
    if kind == "tool_result":
        return ToolResultBlock(
            d["tool_use_id"], _content_from_json(d["content"]), bool(d.get("is_error", False))
        )
    if kind == "reasoning":
        return ReasoningBlock(
            d.get("text", ""),
            d.get("signature"),
            bool(d.get("redacted")),
            d.get("id"),
            d.get("provider"),
        )
    if kind == "image":
        return ImageBlock(d["media_type"], d.get("data"), d.get("url"))
    if kind == "audio":
        return AudioBlock(d["media_type"], d["data"])
    raise ValueError(f"unknown content block type {kind!r}")


def _content_to_json(content: ToolResultContent) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [block_to_dict(b) for b in content]


def _content_from_json(data: Any) -> ToolResultContent:
    if isinstance(data, str):
        return data
    out: list[TextBlock | ImageBlock] = []
    for item in data:
        block = block_from_dict(item)
        if not isinstance(block, TextBlock | ImageBlock):
            raise ValueError("tool result content may hold only text and image blocks")
        out.append(block)
    return tuple(out)


def message_to_dict(message: Message) -> dict[str, Any]:
    """One message as JSON data (``name`` only when it has one)."""
    d: dict[str, Any] = {
        "role": message.role,
        "content": [block_to_dict(b) for b in message.content],
    }
    if message.name is not None:
        d["name"] = message.name
    return d


def message_from_dict(d: Mapping[str, Any]) -> Message:
    """Read back what ``message_to_dict`` wrote."""
    content, name = d["content"], d.get("name")
    if type(content) is list and len(content) == 1 and name is None:  # the common case, cheaper
        only = content[0]
        if type(only) is dict and len(only) == 2 and only.get("type") == "text":
            return text_message(d["role"], only["text"])
    return Message(d["role"], tuple(block_from_dict(b) for b in content), name)


def message_to_json(message: Message) -> str:
    """One message as a compact JSON string."""
    return json.dumps(message_to_dict(message), ensure_ascii=False, separators=(",", ":"))


def message_from_json(text: str | bytes) -> Message:
    """Read back what ``message_to_json`` wrote."""
    return message_from_dict(json.loads(text))


def dumps_messages(messages: Iterable[Message]) -> str:
    """A whole history as one JSON array."""
    return json.dumps(
        [message_to_dict(m) for m in messages], ensure_ascii=False, separators=(",", ":")
    )


def loads_messages(text: str | bytes) -> list[Message]:
    """Read back what ``dumps_messages`` wrote."""
    return [message_from_dict(d) for d in json.loads(text)]


# -- exceptions ------------------------------------------------------------------------------

_TRANSPORT_ERRORS: tuple[type[errors.TransportError], ...] = (
    errors.TransportError,
    errors.AuthenticationError,
    errors.RateLimitError,
    errors.ContextWindowExceededError,
    errors.BadRequestError,
    errors.OverloadedError,
    errors.ServerError,
    errors.ConnectionFailedError,
    errors.StreamInterruptedError,
)
_OTHER_ERRORS: tuple[type[errors.TetherError], ...] = (
    errors.TetherError,
    errors.StreamContractError,
    errors.ModelStopError,
    errors.MaxIterationsError,
    errors.GuardrailError,
    errors.ToolNotFoundError,
    errors.RunCancelled,
    errors.ConflictError,
    errors.StoreDamagedError,
    errors.StoreUnavailableError,
    errors.PayloadTooLargeError,
    errors.LimitExceeded,
    errors.OutputValidationError,
    errors.RunPaused,
)
_ERROR_TYPES: dict[str, type[errors.TetherError]] = {
    cls.__name__: cls for cls in (*_TRANSPORT_ERRORS, *_OTHER_ERRORS)
}


def exception_to_dict(exc: BaseException) -> dict[str, Any]:
    """An exception's type name, message and the attributes tether's own errors carry."""
    d: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, errors.RemoteError):
        d["type"] = exc.type_name
    for attr in (
        "retryable",
        "retry_after",
        "status_code",
        "stop_reason",
        "partial_text",
        "reason",
        "limit",
        "value",
        "maximum",
        "text",
    ):
        if hasattr(exc, attr):
            d[attr] = getattr(exc, attr)
    if isinstance(exc, errors.RunPaused):
        d["pending"] = [pending_to_dict(call) for call in exc.pending]
    return d


def exception_from_dict(d: Mapping[str, Any]) -> BaseException:
    """Rebuild an exception: tether's own classes come back as themselves, others as RemoteError."""
    name, message = d["type"], d["message"]
    cls = _ERROR_TYPES.get(name)
    if cls is None:
        return errors.RemoteError(name, message)
    if cls in _TRANSPORT_ERRORS:
        assert issubclass(cls, errors.TransportError)
        return cls(
            message,
            retryable=bool(d.get("retryable")),
            retry_after=d.get("retry_after"),
            status_code=d.get("status_code"),
        )
    if cls is errors.ModelStopError:
        return errors.ModelStopError(
            message,
            stop_reason=d.get("stop_reason", "unknown"),
            partial_text=d.get("partial_text", ""),
        )
    if cls is errors.GuardrailError:
        return errors.GuardrailError(message, d.get("reason"))
    if cls is errors.LimitExceeded:
        return errors.LimitExceeded(d["limit"], d["value"], d["maximum"])
    if cls is errors.OutputValidationError:
        return errors.OutputValidationError(message, text=d.get("text", ""), errors=[])
    if cls is errors.RunPaused:
        return errors.RunPaused([pending_from_dict(p) for p in d.get("pending", ())])
    return cls(message)


# -- calls waiting for approval --------------------------------------------------------------


def pending_to_dict(call: PendingCall) -> dict[str, Any]:
    """A call that waits for approval (or for the user's input) as JSON data."""
    d: dict[str, Any] = {"id": call.id, "name": call.name, "input": dict(call.input)}
    if call.asks:
        d["asks"] = [elicitation_to_dict(ask) for ask in call.asks]
    return d


def pending_from_dict(d: Mapping[str, Any]) -> PendingCall:
    """Read back what ``pending_to_dict`` wrote."""
    asks = tuple(map(elicitation_from_dict, d.get("asks", ())))
    return PendingCall(d["id"], d["name"], d.get("input", {}), asks)


def elicitation_to_dict(ask: Elicitation) -> dict[str, Any]:
    """A server's question to the user as JSON data."""
    return {
        "message": ask.message,
        "schema": dict(ask.schema),
        "server": ask.server,
        "tool": ask.tool,
        "arguments": None if ask.arguments is None else dict(ask.arguments),
        "mode": ask.mode,
        "url": ask.url,
        "key": ask.key,
    }


def elicitation_from_dict(d: Mapping[str, Any]) -> Elicitation:
    """Read back what ``elicitation_to_dict`` wrote."""
    mode: Literal["form", "url"] = "url" if d.get("mode") == "url" else "form"
    return Elicitation(
        d["message"],
        d.get("schema") or {},
        d.get("server", ""),
        d.get("tool"),
        d.get("arguments"),
        mode,
        d.get("url"),
        d.get("key"),
    )


# -- events ----------------------------------------------------------------------------------

_EVENT_TAGS: dict[type[Any], str] = {
    TextDelta: "text_delta",
    ReasoningDelta: "reasoning_delta",
    ToolUseStart: "tool_use_start",
    ToolInputDelta: "tool_input_delta",
    IterationStart: "iteration_start",
    IterationEnd: "iteration_end",
    ToolDispatch: "tool_dispatch",
    ToolProgress: "tool_progress",
    ToolResult: "tool_result",
    Retrying: "retrying",
    SteeringInjected: "steering_injected",
    Handoff: "handoff",
    ContextTrimmed: "context_trimmed",
    Compacted: "compacted",
    CompactionFailed: "compaction_failed",
    Error: "error",
    SessionEndEvent: "session_end",
}
_EVENT_TYPES = {tag: cls for cls, tag in _EVENT_TAGS.items()}


def _encode(name: str, value: Any) -> Any:
    if isinstance(value, Usage):
        return {f.name: getattr(value, f.name) for f in fields(Usage)}
    if isinstance(value, StopReason):
        return value.value
    if isinstance(value, BaseException):
        return exception_to_dict(value)
    if name == "content":
        return _content_to_json(value)
    if name == "messages":
        return [message_to_dict(m) for m in value]
    if name == "input":
        return dict(value)
    if name == "pending":
        return [pending_to_dict(call) for call in value]
    return value


def _decode(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in ("usage", "total_usage"):
        return Usage(**value)
    if name == "stop_reason":
        return StopReason(value)
    if name in ("exception", "error"):
        return exception_from_dict(value)
    if name == "content":
        return _content_from_json(value)
    if name == "messages":
        return tuple(message_from_dict(m) for m in value)
    if name == "pending":
        return tuple(pending_from_dict(p) for p in value)
    return value


def event_to_dict(event: StreamEvent) -> dict[str, Any]:
    """One event as JSON data, tagged with ``"type"``."""
    tag = _EVENT_TAGS.get(type(event))
    if tag is None:
        raise TypeError(f"not a stream event: {event!r}")
    d: dict[str, Any] = {"type": tag}
    for f in fields(event):
        d[f.name] = _encode(f.name, getattr(event, f.name))
    return d


def event_from_dict(d: Mapping[str, Any]) -> StreamEvent:
    """Read back what ``event_to_dict`` wrote."""
    cls = _EVENT_TYPES.get(d.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown event type {d.get('type')!r}")
    kwargs = {f.name: _decode(f.name, d[f.name]) for f in fields(cls) if f.name in d}
    event: StreamEvent = cls(**kwargs)
    return event
