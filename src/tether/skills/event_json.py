"""A SkillAgent run's events as JSON data and back: ``{"type": name, ...fields}``, read back
strictly (a value tagged with an event's type must be that event, or it is a ``ValueError``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from .events import (
    Action,
    CallSkillAction,
    EventStream,
    FinalAnswerAction,
    MaxIterationsObservation,
    ModelErrorObservation,
    Observation,
    SkillObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)

__all__ = ["event_from_json", "event_to_json"]

_TYPES: dict[str, type[Action | Observation]] = {
    t.__name__: t
    for t in (
        CallSkillAction,
        FinalAnswerAction,
        SkillObservation,
        ToolErrorObservation,
        ValidationErrorObservation,
        MaxIterationsObservation,
        ModelErrorObservation,
    )
}
_FIELD_TYPES: dict[str, type] = {
    "skill_name": str,
    "thought": str,
    "answer": str,
    "message": str,
    "validator_name": str,
    "feedback": str,
    "last_action_summary": str,
    "args": dict,
    "iterations": int,
    "attempts": int,
}
_JSON_NAMES = {str: "a string", dict: "an object", int: "an integer", list: "a list"}


def event_to_json(event: Any) -> Any:
    """An action or observation as ``{"type": name, ...fields}``; other values unchanged."""
    if not isinstance(event, Action | Observation):
        return event
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        out[f.name] = [event_to_json(e) for e in value] if isinstance(value, EventStream) else value
    return out


def event_from_json(data: Any) -> Any:
    """What ``event_to_json`` wrote, rebuilt; a value without a known ``type`` stays as it is.
    ``ValueError`` when a value names an event's type but does not hold that event."""
    kind = data.get("type") if isinstance(data, dict) else None
    cls = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return data
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            values[f.name] = _field(kind, f.name, data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"not a {kind}: it has no {f.name!r}")
    return cls(**values)


def _field(kind: Any, name: str, value: Any) -> Any:
    if name == "partial_state":
        if not isinstance(value, list):
            raise ValueError(f"not a {kind}: 'partial_state' must be a list of events")
        events = [event_from_json(e) for e in value]
        if not all(isinstance(e, Action | Observation) for e in events):
            raise ValueError(f"not a {kind}: 'partial_state' holds a value that is not an event")
        return EventStream(events)
    wanted = _FIELD_TYPES.get(name)
    if wanted is not None and (not isinstance(value, wanted) or isinstance(value, bool)):
        raise ValueError(f"not a {kind}: {name!r} must be {_JSON_NAMES[wanted]}")
    return value
