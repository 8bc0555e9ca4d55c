"""A served tool's questions for the user (it raised ``NeedsInput``) asked of the MCP client
through form elicitation, in either era: over the handshake mid-call (``elicitation/create``),
from 2026-07-28 as requests of an ``input_required`` result, whose answers come back with the
client's retry. An answer is checked against the question's schema (defaults filled in) before
any tool sees it: a client is untrusted. The SDK is imported on first use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .answers import Unanswerable, accepted
from .elicitation import Elicitation

__all__ = [
    "MAX_ROUNDS",
    "Answers",
    "Input",
    "ask_inputs_now",
    "input_answers",
    "input_requests",
    "inputs_of",
    "refusal",
    "unaskable",
]

MAX_ROUNDS = 10  # times one call may ask again before it is ended
_MAX_QUESTIONS = 10  # questions one round may ask

Answers = dict[str, dict[str, Mapping[str, Any] | None]]
"""Answers by call id (``""`` for a direct call), then by question key: content, or None."""


@dataclass(frozen=True, slots=True)
class Input:
    """One question put to the client: its key on the wire, the call it is for (its id in a
    run, ``""`` for a direct call), the tool's name, and the question."""

    key: str
    call: str
    tool: str
    ask: Elicitation


def inputs_of(asks: Sequence[Elicitation], tool: str, call: str = "") -> tuple[Input, ...]:
    """The questions a call of ``tool`` asks (``NeedsInput.asks``), keyed for the wire (a
    run's by ``<call id>/<key>``)."""
    prefix = f"{call}/" if call else ""
    return tuple(Input(prefix + (ask.key or ""), call, tool, ask) for ask in asks)


def unaskable(inputs: Sequence[Input]) -> str | None:
    """Why these questions cannot be put to a client, or None: a page to open (url mode), two
    questions under one key, too many at once."""
    keys = [item.key for item in inputs]
    if len(keys) > _MAX_QUESTIONS:
        return f"it asked {len(keys)} questions at once (at most {_MAX_QUESTIONS})"
    if len(set(keys)) < len(keys):
        return "it asked two questions under one key: give each Elicitation a key of its own"
    for item in inputs:
        if item.ask.mode != "form":
            return "it asked the user to open a page (url mode), which a served tool cannot ask"
    return None


def _key(item: Input) -> str:
    return item.ask.key or ""


def _checked(item: Input, result: Any) -> Mapping[str, Any] | None:
    """The content of the client's ``ElicitResult`` for ``item`` (None: declined or cancelled),
    checked against the question; ``Unanswerable`` when it does not fit."""
    if result.action != "accept":
        return None
    named = f"the client's answer to {item.tool!r}'s question {_key(item)!r}"
    return accepted(item.ask, dict(result.content or {}), f"the tool {item.tool!r}", named)


async def ask_inputs_now(ctx: Any, inputs: Sequence[Input]) -> Answers:
    """Over the handshake: each question asked of the client now, one after another."""
    answers: Answers = {}
    for item in inputs:
        result = await ctx.session.elicit_form(
            item.ask.message, dict(item.ask.schema), ctx.request_id
        )
        answers.setdefault(item.call, {})[_key(item)] = _checked(item, result)
    return answers


def input_requests(inputs: Sequence[Input]) -> dict[str, Any]:
    """From 2026-07-28: the questions as an ``input_required`` result's requests, by key."""
    import mcp_types as types  # noqa: PLC0415 - the SDK, on first use

    return {
        item.key: types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=item.ask.message, requested_schema=dict(item.ask.schema)
            )
        )
        for item in inputs
    }


def input_answers(params: Any, inputs: Sequence[Input]) -> Answers | None:
    """The answers a retried call carries to each question; None when one is missing (the
    questions are asked again); ``Unanswerable`` when one does not fit its question."""
    import mcp_types as types  # noqa: PLC0415

    responses = params.input_responses or {}
    answers: Answers = {}
    for item in inputs:
        response = responses.get(item.key)
        if not isinstance(response, types.ElicitResult):
            return None
        answers.setdefault(item.call, {})[_key(item)] = _checked(item, response)
    return answers


def refusal(exc: Unanswerable, tool: str) -> str:
    """What a call answers when the client's answer does not fit the question."""
    return f"the call of {tool!r} did not run with the client's answer: {exc}"
