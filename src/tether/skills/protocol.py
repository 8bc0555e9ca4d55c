"""The JSON action protocol a SkillAgent's model speaks: the prompt it is given, how its reply
is parsed (leniently, in linear time, never into an invented answer) and the JSON Schema of a
valid reply, for decoders that can be held to one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .events import (
    Action,
    CallSkillAction,
    FinalAnswerAction,
    Observation,
    SkillObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from .registry import Registry
from .soul import Soul

__all__ = [
    "INSTRUCTIONS",
    "MAX_EVENT_CHARS",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_DEPTH",
    "PREVIEW_CHARS",
    "RECAP_CHARS",
    "RECAP_RESULTS",
    "action_schema",
    "build_prompt",
    "json_text",
    "parse_action",
    "preview",
    "recap",
]

INSTRUCTIONS = """\
You answer the query by using the skills listed under Skills, one per reply. Never guess a fact \
a skill can give you. Reply with one JSON object and nothing else:
- to use a skill: {"results": "<the results so far>", "thought": "<what the results say about \
the query; what is still missing>", "action": {"skill_name": "<name>", "args": {<arguments>}}}
- once the results answer the query: {"results": "<the results so far>", "thought": "<what the \
results say about the query; nothing is missing>", "action": {"final_answer": "<the answer, \
using those results>"}}
Never use a skill again with the same args: its result is already known.
Example. Query: "How long is the Nile in miles?", skills river_length_km and km_to_miles.
Reply 1: {"results": "none", "thought": "no results yet; still missing: the Nile's length", \
"action": {"skill_name": "river_length_km", "args": {"river": "Nile"}}}
Reply 2: {"results": "river_length_km(river=\\"Nile\\") = 6650", "thought": "the Nile is 6650 km \
long; still missing: that length in miles", "action": {"skill_name": "km_to_miles", "args": \
{"km": 6650}}}
Reply 3: {"results": "river_length_km(river=\\"Nile\\") = 6650; km_to_miles(km=6650) = 4132", \
"thought": "the Nile is 6650 km long, and 6650 km is 4132 miles, so the Nile is 4132 miles \
long; nothing is missing", "action": {"final_answer": "The Nile is about 4132 miles long."}}"""
PREVIEW_CHARS = 500
MAX_REPLY_CHARS = 200_000
MAX_REPLY_DEPTH = 64
MAX_EVENT_CHARS = 4_000
RECAP_CHARS = 120
RECAP_RESULTS = 3


def build_prompt(
    query: str, events: Sequence[Action | Observation], registry: Registry, soul: Soul | None
) -> str:
    """The soul (if any), the protocol, the skills, the query, the results so far (the recap a
    reply starts with), any failed calls and refused replies (one line each, oldest first), then
    the cue for the next reply."""
    skills = json.dumps(registry.spec_for_llm()["skill"], ensure_ascii=False)
    problems = [f"{n}. {line}" for n, line in enumerate(_problems(events), start=1)]
    lines = [
        *((soul.to_system_prompt(), "") if soul is not None else ()),
        INSTRUCTIONS,
        "",
        f"Skills: {skills}",
        f"Query: {json.dumps(query, ensure_ascii=False)}",
        f"Results so far: {recap(events, MAX_EVENT_CHARS, newest=None)}",
        *(("Failed or refused so far (fix these):", *problems) if problems else ()),
        "Your next reply (one JSON object):",
    ]
    return "\n".join(lines)


def recap(
    events: Sequence[Action | Observation],
    limit: int = RECAP_CHARS,
    newest: int | None = RECAP_RESULTS,
) -> str:
    """The skill results of ``events`` as ``name(arg=value, ...) = result`` (a result's JSON
    cut to ``limit`` characters), oldest first and joined by ``"; "``; ``"none"`` before any.
    Only the ``newest`` ones are given (``None``: all), after ``"…"`` when some are left out:
    the recap a constrained reply must copy stays short, however long the run."""
    done = [
        f"{_call_text(call)} = {_cut(json_text(value), limit)}"
        for call, value, ok in _outcomes(events)
        if ok
    ]
    if newest is not None and len(done) > newest:
        done = ["…", *done[-newest:]] if newest > 0 else ["…"]
    return "; ".join(done) if done else "none"


def _problems(events: Sequence[Action | Observation]) -> list[str]:
    """The skill calls that failed (a tool error, or a validator refusing the value) and the
    replies a check refused, as the model reads them."""
    out: list[str] = []
    for call, value, ok in _outcomes(events):
        if ok:
            continue
        if isinstance(value, ToolErrorObservation):
            out.append(f"{_call_text(call)} failed: {_cut(json_text(value.message))}")
        elif isinstance(value, ValidationErrorObservation):
            where = f"{_call_text(call)} was refused" if call is not None else "a reply was refused"
            out.append(f"{where} by {value.validator_name}: {_cut(json_text(value.feedback))}")
    return out


def _outcomes(
    events: Sequence[Action | Observation],
) -> list[tuple[CallSkillAction | None, Any, bool]]:
    """Each skill call with what came of it, and each refused reply (with no call): ``(call,
    result or the observation, whether it is a result)``, oldest first."""
    out: list[tuple[CallSkillAction | None, Any, bool]] = []
    pending: CallSkillAction | None = None
    for event in events:
        if isinstance(event, CallSkillAction):
            pending = event
        elif isinstance(event, SkillObservation):
            call = pending or CallSkillAction(skill_name=event.skill_name)
            out.append((call, event.result, True))
            pending = None
        elif isinstance(event, ToolErrorObservation):
            call = pending or CallSkillAction(skill_name=event.skill_name)
            out.append((call, event, False))
            pending = None
        elif isinstance(event, ValidationErrorObservation):
            out.append((pending, event, False))
            pending = None
    return out


def _call_text(call: CallSkillAction | None) -> str:
    if call is None:
        return "?"
    args = ", ".join(f"{k}={json_text(v)}" for k, v in call.args.items())
    return f"{call.skill_name}({args})"


def json_text(value: Any) -> str:
    """``value`` as JSON (what JSON cannot hold as its ``str``); a value no JSON can show (a
    cycle, nesting past Python's recursion limit, a ``str`` that raises) as a note saying so."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except Exception as exc:
        return f"<{type(value).__name__} that JSON cannot show: {type(exc).__name__}>"


def _cut(text: str, limit: int = MAX_EVENT_CHARS) -> str:
    return text[:limit] + "…[truncated]" if len(text) > limit else text


def preview(raw: str) -> str:
    """At most 500 characters of a reply, newlines shown as ``\\n``."""
    cut = raw[:PREVIEW_CHARS].replace("\n", "\\n")
    return cut + "…[truncated]" if len(raw) > PREVIEW_CHARS else cut


def _parse_error(error_type: str, detail: str, raw: str) -> ValidationErrorObservation:
    feedback = f"error_type: {error_type}\ndetail: {detail}\nraw_output_preview: {preview(raw)}"
    return ValidationErrorObservation("action_parse", feedback)


def _json_object(raw: str) -> Any:
    """The reply's JSON: the whole text, else (a fenced block or prose around it) the first
    object in it. ``ValueError`` when there is none."""
    text = raw.strip()
    try:
        return json.loads(text)
    except ValueError as first:
        start = text.find("{")
        if start < 0:
            raise first from None
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]
        except ValueError:
            raise first from None


def parse_action(raw: Any, registry: Registry) -> Action | ValidationErrorObservation:
    """The model's reply as an action, or the feedback that says why it is not one."""
    if not isinstance(raw, str):
        return _parse_error("json_syntax", f"the model returned {type(raw).__name__}", "")
    if len(raw) > MAX_REPLY_CHARS:
        return _parse_error("json_syntax", f"reply over {MAX_REPLY_CHARS} characters", raw)
    try:
        data = _json_object(raw)
    except (ValueError, RecursionError) as exc:
        detail = f"expected JSON object, got {type(exc).__name__}: {getattr(exc, 'msg', exc)}"
        return _parse_error("json_syntax", detail, raw)
    if not isinstance(data, dict):
        return _parse_error(
            "json_syntax", f"top-level must be a JSON object, got {type(data).__name__}", raw
        )
    if _deeper_than(data, MAX_REPLY_DEPTH):
        detail = f"the reply is nested deeper than {MAX_REPLY_DEPTH} levels; send flatter args"
        return _parse_error("json_syntax", detail, raw)
    return _action(data, raw, registry)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests lists and objects more than ``limit`` deep; one
    pass with a stack of its own, so no depth can overflow Python's."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item)
    return False


def _action(
    data: dict[str, Any], raw: str, registry: Registry
) -> Action | ValidationErrorObservation:
    thought = str(data.get("thought", ""))
    action = data.get("action")
    if not isinstance(action, dict):
        return _parse_error(
            "missing_field",
            "action object missing or not a JSON object; required keys: skill_name or final_answer",
            raw,
        )
    if "final_answer" in action:
        answer = action["final_answer"]
        if not isinstance(answer, str) or not answer.strip():
            return ValidationErrorObservation(
                "non_empty_final_answer",
                "FinalAnswerAction.answer must be non-empty after str.strip(); "
                "call a skill or write a substantive answer",
            )
        return FinalAnswerAction(answer=answer, thought=thought)
    return _skill_call(action, thought, raw, registry)


def _skill_call(
    action: dict[str, Any], thought: str, raw: str, registry: Registry
) -> Action | ValidationErrorObservation:
    if "skill_name" not in action:
        return _parse_error(
            "missing_field", "action object must contain either 'skill_name' or 'final_answer'", raw
        )
    name = action["skill_name"]
    if not isinstance(name, str):
        return _parse_error(
            "missing_field", f"skill_name must be a string, got {type(name).__name__}", raw
        )
    if name not in registry:
        known = registry.names_for("skill")
        return _parse_error(
            "unknown_skill",
            f"skill_name {name!r} not in current skill registry; available: {known}",
            raw,
        )
    args = action.get("args", {})
    if not isinstance(args, dict):
        kind = "null" if args is None else type(args).__name__
        given = json_text(args)
        detail = f"args must be a JSON object of the skill's arguments, got {kind}: {given}"
        return _parse_error("invalid_args", _cut(detail, PREVIEW_CHARS), raw)
    return CallSkillAction(skill_name=name, args=args, thought=thought)


def action_schema(
    registry: Registry, events: Sequence[Action | Observation] | None = None
) -> dict[str, Any]:
    """The JSON Schema of a valid reply: a known skill with its arguments, or a non-empty
    answer. For constrained decoding (grammar-based samplers).

    Given the run's ``events``, the reply's ``results`` is fixed to their ``recap``: the model
    restates the results it was given, word for word, before it thinks and acts. Left to
    itself, a small model writes results it was never given here (and then answers from
    them); held to the recap, its thought starts from the facts it has. Without ``events``,
    ``results`` is any string."""
    choices: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"skill_name": {"enum": [s.name]}, "args": s.args_schema},
            "required": ["skill_name", "args"],
            "additionalProperties": False,
        }
        for s in registry.skills()
    ]
    choices.append(
        {
            "type": "object",
            "properties": {"final_answer": {"type": "string", "minLength": 1}},
            "required": ["final_answer"],
            "additionalProperties": False,
        }
    )
    results = {"type": "string"} if events is None else {"const": recap(events)}
    return {
        "type": "object",
        "properties": {
            "results": results,
            "thought": {"type": "string"},
            "action": {"anyOf": choices},
        },
        "required": ["results", "thought", "action"],
        "additionalProperties": False,
    }
