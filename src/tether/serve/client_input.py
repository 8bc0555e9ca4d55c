"""What a front end sends beside its new message (AG-UI ``RunAgentInput``): its whole history
(``messages``), its tools, its readables (``context``), its shared ``state``, and whether a
history that differs from the stored one asks for a fork (``forwardedProps.tether.edit``);
each checked, with a clear 4xx for anything that does not fit."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .frontend import FrontendTool, frontend_tools
from .wire import Refused, ServeLimits

__all__ = [
    "MAX_CONTEXT_CHARS",
    "MAX_STATE_CHARS",
    "ClientInput",
    "ClientMessage",
    "client_input",
    "context_note",
]

MAX_CONTEXT_CHARS = 32_000  # the readables of one run, descriptions and values together
MAX_STATE_CHARS = 262_144  # the shared state, as JSON
_KNOWN_ROLES = {"user", "assistant", "tool", "system", "developer", "reasoning", "activity"}


@dataclass(frozen=True, slots=True)
class ClientMessage:
    """One message of the client's history, as far as the server compares it: its role, its
    text, the ids of the calls it makes (assistant) or answers (tool)."""

    id: str | None
    role: str
    text: str
    calls: tuple[str, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClientInput:
    """The rest of a ``RunAgentInput``, checked."""

    tools: tuple[FrontendTool, ...] = ()
    messages: tuple[ClientMessage, ...] = ()
    context: tuple[tuple[str, str], ...] = ()
    state: dict[str, Any] | None = None
    edit: bool = False
    results: dict[str, str] = field(default_factory=dict)


def client_input(body: dict[str, Any], limits: ServeLimits) -> ClientInput:
    """The front end's tools, history, readables, state and edit flag from ``body``."""
    messages = tuple(_messages(body.get("messages"), limits))
    props = body.get("forwardedProps")
    ours = props.get("tether") if isinstance(props, dict) else None
    if ours is not None and not isinstance(ours, dict):
        raise Refused(400, 'forwardedProps.tether must be an object (e.g. {"edit": true})')
    edit = isinstance(ours, dict) and ours.get("edit") is True
    return ClientInput(
        frontend_tools(body.get("tools")),
        messages,
        _context(body.get("context")),
        _state(body.get("state")),
        edit,
        _trailing_results(messages),
    )


def _trailing_results(messages: tuple[ClientMessage, ...]) -> dict[str, str]:
    """The tool results at the end of the history (before the user's new message, if any)."""
    at = len(messages) - (1 if messages and messages[-1].role == "user" else 0)
    results: dict[str, str] = {}
    while at > 0 and messages[at - 1].role == "tool":
        at -= 1
        call = messages[at].tool_call_id
        assert call is not None
        results.setdefault(call, messages[at].text)
    return dict(reversed(results.items()))


def _messages(given: Any, limits: ServeLimits) -> list[ClientMessage]:
    if given is None:
        return []
    if not isinstance(given, list):
        raise Refused(400, "messages must be a list of AG-UI messages")
    return [_message(at, entry, limits) for at, entry in enumerate(given)]


def _message(at: int, entry: Any, limits: ServeLimits) -> ClientMessage:
    if not isinstance(entry, dict) or entry.get("role") not in _KNOWN_ROLES:
        raise Refused(
            400, f"messages[{at}] must be an AG-UI message with a role ({', '.join(_KNOWN_ROLES)})"
        )
    role: str = entry["role"]
    id = entry.get("id")
    text = _loose_text(entry.get("content"))
    if len(text) > limits.max_message_chars:
        raise Refused(413, f"messages[{at}] is over {limits.max_message_chars} characters")
    if role == "tool":
        call = entry.get("toolCallId")
        if not isinstance(call, str) or not call:
            raise Refused(400, f"messages[{at}] (a tool result) needs its toolCallId")
        return ClientMessage(id if isinstance(id, str) else None, role, text, (), call)
    calls = entry.get("toolCalls") if role == "assistant" else None
    ids = tuple(
        c["id"] for c in calls or () if isinstance(c, dict) and isinstance(c.get("id"), str)
    )
    return ClientMessage(id if isinstance(id, str) else None, role, text, ids)


def _loose_text(content: Any) -> str:
    """A message's text, as far as it has any (text parts of a list; other content ignored:
    it is only compared)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


def _context(given: Any) -> tuple[tuple[str, str], ...]:
    """``context``: a list of ``{description, value}`` (strings), within ``MAX_CONTEXT_CHARS``."""
    if given is None:
        return ()
    if not isinstance(given, list) or not all(
        isinstance(c, dict) and isinstance(c.get("description"), str) and "value" in c
        for c in given
    ):
        raise Refused(400, "context must be a list of {description, value} objects")
    items = tuple((c["description"], _as_text(c["value"])) for c in given)
    if sum(len(d) + len(v) for d, v in items) > MAX_CONTEXT_CHARS:
        raise Refused(413, f"context is over {MAX_CONTEXT_CHARS} characters")
    return items


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def context_note(context: tuple[tuple[str, str], ...]) -> str:
    """The front end's readables as the note appended to the run's system prompt."""
    lines = [f"- {description}: {value}" for description, value in context]
    return "Context from the user's application, for this request:\n" + "\n".join(lines)


def _state(given: Any) -> dict[str, Any] | None:
    """``state``: a JSON object within ``MAX_STATE_CHARS`` (None: absent, null or empty, which
    leave the stored state as it is)."""
    if given is None or given == {}:
        return None
    if not isinstance(given, dict):
        raise Refused(400, "state must be a JSON object")
    try:
        size = len(json.dumps(given, allow_nan=False))
    except (ValueError, TypeError, RecursionError):
        raise Refused(400, "state must be plain JSON (no NaN or Infinity)") from None
    if size > MAX_STATE_CHARS:
        raise Refused(413, f"state is over {MAX_STATE_CHARS} characters as JSON")
    return given
