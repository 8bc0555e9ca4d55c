"""A person's approval asked of an MCP client through elicitation, in either era of the spec.

Each call that waits is one question: a form, "Run the tool X with these arguments?", with one
boolean. Over the handshake (up to 2025-11-25) the server asks mid-call (``elicitation/create``);
from 2026-07-28 it answers ``input_required`` and the client retries the call with the answers.
The retry is trusted only through a *ticket*: a one-use id the server keeps (with what waits on
it, a paused run for ``ask``) and sends in the request state the SDK's boundary seals and binds to
the call's name and arguments, so an answer nobody asked for, or a state replayed, approves
nothing. A client that declared no elicitation is never asked. The SDK is imported on first use.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CALL",
    "FIELD",
    "Held",
    "Question",
    "Tickets",
    "answered",
    "ask_now",
    "asking",
    "can_elicit",
    "declined",
    "input_required_era",
    "ticket_of",
]

FIELD = "approve"  # the form's one field: yes or no
CALL = "call"  # the question's key for a direct call (a run's questions are keyed by call id)
INPUT_REQUIRED = "2026-07-28"  # the first revision that asks through ``input_required``
_SHOWN = 2_000  # characters of the arguments the question shows
_TTL = 600.0  # seconds a ticket is kept (the SDK's request-state tokens expire as soon)
_KEPT = 256  # tickets kept at most: the oldest go first


@dataclass(frozen=True, slots=True)
class Question:
    """One call that waits for a person: the key its answer comes under, its name, its input."""

    key: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Held:
    """What waits on a ticket: the questions asked, (for ``ask``) the paused run's context, and
    the questions a tool asked for the user (``inputs``: ``tether.mcp.inputs.Input``), with the
    ``state`` a direct call goes on from and how many ``rounds`` it asked so far."""

    questions: tuple[Question, ...]
    context: Any = None
    inputs: tuple[Any, ...] = ()
    state: Mapping[str, Any] | None = None
    rounds: int = 0


class Tickets:
    """Tickets given out with ``input_required``, each taken back once (or dropped when old)."""

    def __init__(self) -> None:
        self._held: OrderedDict[str, tuple[float, Held]] = OrderedDict()

    def put(self, held: Held) -> str:
        """A new ticket for ``held``."""
        now = time.monotonic()
        while self._held and (len(self._held) >= _KEPT or next(iter(self._held.values()))[0] < now):
            self._held.popitem(last=False)
        ticket = secrets.token_urlsafe(16)
        self._held[ticket] = (now + _TTL, held)
        return ticket

    def take(self, ticket: str | None) -> Held | None:
        """What waits on ``ticket``, once; None for a ticket unknown, taken or expired."""
        if ticket is None:
            return None
        kept = self._held.pop(ticket, None)
        return kept[1] if kept is not None and kept[0] >= time.monotonic() else None


def input_required_era(ctx: Any) -> bool:
    """Whether this request asks through ``input_required`` (2026-07-28 and later)."""
    from mcp_types.version import is_version_at_least  # noqa: PLC0415 - the SDK, on first use

    version = getattr(ctx, "protocol_version", None)
    return isinstance(version, str) and is_version_at_least(version, INPUT_REQUIRED)


def can_elicit(ctx: Any) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` counts), and,
    over the handshake, whether this request can reach it."""
    capabilities = ctx.session.client_capabilities
    elicitation = None if capabilities is None else capabilities.elicitation
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return False
    return input_required_era(ctx) or bool(ctx.session.can_send_request)


def _form(question: Question) -> tuple[str, dict[str, Any]]:
    shown = json.dumps(dict(question.arguments), ensure_ascii=False, default=str)
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + f"... ({len(shown) - _SHOWN} more characters)"
    message = f"Run the tool {question.name!r} with these arguments? {shown}"
    schema = {
        "type": "object",
        "properties": {
            FIELD: {
                "type": "boolean",
                "title": "Run it",
                "description": f"yes runs {question.name!r} with the arguments shown",
                "default": False,
            }
        },
        "required": [FIELD],
    }
    return message, schema


def _yes(result: Any) -> bool:
    """Whether an ``ElicitResult`` says yes: accepted, with the field true."""
    content = result.content or {}
    return bool(result.action == "accept" and content.get(FIELD) is True)


async def ask_now(ctx: Any, questions: Sequence[Question]) -> dict[str, bool]:
    """Over the handshake: each question asked of the client now, one after another."""
    decisions: dict[str, bool] = {}
    for question in questions:
        message, schema = _form(question)
        result = await ctx.session.elicit_form(message, schema, ctx.request_id)
        decisions[question.key] = _yes(result)
    return decisions


def asking(
    questions: Sequence[Question], ticket: str, more: Mapping[str, Any] | None = None
) -> Any:
    """From 2026-07-28: the ``input_required`` result asking ``questions`` (and the requests
    ``more``), with ``ticket``."""
    import mcp_types as types  # noqa: PLC0415

    requests: dict[str, Any] = dict(more or {})
    for question in questions:
        message, schema = _form(question)
        requests[question.key] = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
        )
    state = json.dumps({"ticket": ticket})
    return types.InputRequiredResult(input_requests=requests, request_state=state)


def ticket_of(params: Any) -> str | None:
    """The ticket in a retried call's request state (already checked by the SDK's boundary)."""
    try:
        ticket = json.loads(params.request_state or "null")["ticket"]
    except (ValueError, TypeError, KeyError):
        return None
    return ticket if isinstance(ticket, str) else None


def answered(params: Any, held: Held) -> dict[str, bool] | None:
    """The answers a retried call carries to each question ``held`` asked; None when one is
    missing (the questions are asked again)."""
    import mcp_types as types  # noqa: PLC0415

    responses = params.input_responses or {}
    decisions: dict[str, bool] = {}
    for key in (question.key for question in held.questions):
        response = responses.get(key)
        if not isinstance(response, types.ElicitResult):
            return None
        decisions[key] = _yes(response)
    return decisions


def declined(name: str) -> str:
    """What a call the user said no to answers."""
    return f"the user declined the call of {name!r}: it did not run"
