"""What the server reads from a request: a JSON body within its size cap, and an AG-UI
``RunAgentInput`` checked field by field (a clear 4xx for anything else, before anything runs)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

__all__ = ["Refused", "RunAsked", "ServeLimits", "json_body", "run_input"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeLimits:
    """Caps on what a client may send: a request body's bytes, a message's characters, and how
    many of a session's last messages one read returns."""

    max_body: int = 1 << 20
    max_message_chars: int = 100_000
    max_shown: int = 1000


class Refused(Exception):
    """A request the server turns down: the HTTP status and what to tell the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class RunAsked:
    """A run asked for: a new user message, or decisions on calls waiting for approval, and
    ``answers`` to the questions of calls waiting for the user's input (by call id, then by
    question key)."""

    thread_id: str | None
    run_id: str | None
    message: str | None
    approve: tuple[str, ...] = ()
    deny: dict[str, str] = field(default_factory=dict)
    cancel_on_disconnect: bool = False
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)


async def json_body(request: Request, limits: ServeLimits) -> Any:
    """The request's JSON body: 415 unless it says it is JSON (which also keeps plain HTML forms
    of other sites out), 413 past ``limits.max_body`` bytes, 400 if it does not parse."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, "send the body as application/json")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body:
        raise Refused(413, f"the body is over {limits.max_body} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body:
            raise Refused(413, f"the body is over {limits.max_body} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        raise Refused(400, "the body is not valid JSON") from None


def run_input(body: Any, limits: ServeLimits) -> RunAsked:
    """An AG-UI ``RunAgentInput`` as the run it asks for."""
    if not isinstance(body, dict):
        raise Refused(400, "the body must be an AG-UI RunAgentInput object")
    thread, run = _optional_id(body, "threadId"), _optional_id(body, "runId")
    props = body.get("forwardedProps")
    leave = isinstance(props, dict) and props.get("cancelOnDisconnect") is True
    resume = body.get("resume")
    if resume:
        approve, deny, answers = _decisions(resume)
        return RunAsked(thread, run, None, approve, deny, leave, answers)
    messages = body.get("messages")
    if isinstance(messages, list) and messages and _role(messages[-1]) == "tool":
        return RunAsked(thread, run, None, (), {}, leave)  # front-end results (client_input)
    return RunAsked(thread, run, _last_user_text(messages, limits), (), {}, leave)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _optional_id(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 256:
        raise Refused(400, f"{key} must be a string of at most 256 characters")
    return value


def _last_user_text(messages: Any, limits: ServeLimits) -> str:
    if not isinstance(messages, list) or not messages:
        raise Refused(
            400, "messages must end with the user's new message (or the front end's tool results)"
        )
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        raise Refused(
            400, "the last message must be the user's (role 'user') or a tool result (role 'tool')"
        )
    text = _text(last.get("content"))
    if not text.strip():
        raise Refused(400, "the user's message is empty")
    if len(text) > limits.max_message_chars:
        raise Refused(413, f"the message is over {limits.max_message_chars} characters")
    return text


def _text(content: Any) -> str:
    """A user message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        if texts and len(texts) == len(parts):
            return "\n".join(texts)
    raise Refused(400, "a message's content must be text or a list of text parts")


def _decisions(
    resume: Any,
) -> tuple[tuple[str, ...], dict[str, str], dict[str, dict[str, Any]]]:
    """Resume entries as the calls approved, those denied (with the reason given), and the
    answers to calls that wait for input (a resolved entry whose payload has ``answers``)."""
    if not isinstance(resume, list):
        raise Refused(400, "resume must be a list of AG-UI resume entries")
    approve: list[str] = []
    deny: dict[str, str] = {}
    answers: dict[str, dict[str, Any]] = {}
    for entry in resume:
        call = entry.get("interruptId") if isinstance(entry, dict) else None
        if not isinstance(call, str) or not call or call in deny or call in approve:
            raise Refused(400, "each resume entry needs an interruptId of its own (a call's id)")
        if call in answers:
            raise Refused(400, "each resume entry needs an interruptId of its own (a call's id)")
        payload = entry.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        if entry.get("status") == "resolved" and "answers" in payload:
            answers[call] = _answers(payload["answers"])
            continue
        if entry.get("status") == "resolved" and payload.get("approved") is True:
            approve.append(call)
            continue
        reason = payload.get("reason")
        deny[call] = reason if isinstance(reason, str) and reason else "denied by the user"
        if len(deny[call]) > 2000:
            raise Refused(413, "a reason is over 2000 characters")
    return tuple(approve), deny, answers


def _answers(given: Any) -> dict[str, Any]:
    """A resume entry's answers: each question's key to an object of fields, or null to
    decline it (checked against the question by the run, before anything is stored)."""
    if not isinstance(given, dict) or not all(
        isinstance(key, str) and (answer is None or isinstance(answer, dict))
        for key, answer in given.items()
    ):
        raise Refused(
            400, "payload.answers maps each question's key to an object of fields, or null"
        )
    return given
