"""What a server's elicitation may be, and what an answer to it may be: a request past the caps
(its message, its schema) never reaches the application, and an answer that does not fit the
requested schema is never sent. Both are ``Unanswerable``, with the reason in words."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from .elicitation import Elicitation
from .schemacheck import schema_problem

__all__ = [
    "MAX_FIELDS",
    "MAX_MESSAGE_CHARS",
    "MAX_SCHEMA_BYTES",
    "Unanswerable",
    "accepted",
    "checked_request",
]

MAX_MESSAGE_CHARS = 10_000  # a question for a person, not a document
MAX_SCHEMA_BYTES = 64 * 1024  # the requested schema, as JSON
MAX_FIELDS = 100
_MAX_ERRORS = 3  # schema errors quoted of one answer
_VALUE_TYPES = (str, int, float, bool, type(None))


class Unanswerable(Exception):
    """An elicitation that is not put to the application, or an answer that is not sent."""


def checked_request(elicitation: Elicitation, who: str) -> Elicitation:
    """``elicitation`` if it is within the caps and its schema is one an answer can fit
    (``who``: the server, in words, for the reason)."""
    if len(elicitation.message) > MAX_MESSAGE_CHARS:
        raise Unanswerable(
            f"{who} asked for input with a message of {len(elicitation.message):,} "
            f"characters (at most {MAX_MESSAGE_CHARS:,}); it was refused"
        )
    if elicitation.mode == "url":
        return elicitation
    schema = elicitation.schema
    size = len(json.dumps(schema, default=str))
    if size > MAX_SCHEMA_BYTES or len(elicitation.fields) > MAX_FIELDS:
        raise Unanswerable(
            f"{who} asked for input with a schema of {size:,} bytes and "
            f"{len(elicitation.fields)} fields (at most {MAX_SCHEMA_BYTES:,} bytes and "
            f"{MAX_FIELDS} fields); it was refused"
        )
    problem = schema_problem(schema, "the requested schema") or _shape_problem(schema)
    if problem is not None:
        raise Unanswerable(f"{who} asked for input: {problem}; it was refused")
    return elicitation


def _shape_problem(schema: Mapping[str, Any]) -> str | None:
    if schema.get("type", "object") != "object":
        return "the requested schema is not an object of fields"
    validators = importlib.import_module("jsonschema.validators")
    try:
        validators.validator_for(schema).check_schema(schema)
    except Exception as exc:  # jsonschema's SchemaError
        return f"the requested schema is no JSON Schema ({getattr(exc, 'message', exc)})"
    return None


def accepted(
    elicitation: Elicitation, answer: object, who: str, named: str | None = None
) -> dict[str, Any] | None:
    """The content to send for the application's ``answer`` (None: declined), the schema's
    defaults filled in; ``Unanswerable`` when it does not fit what was asked. ``named`` is
    how the reasons name the answer (else as ``on_elicit``'s)."""
    if answer is None:
        return None
    what = "on_elicit's answer" if named is None else named
    if not isinstance(answer, Mapping):
        raise Unanswerable(
            ("on_elicit must return" if named is None else f"{named} must be")
            + f" a dict (to accept) or None (to decline), got {type(answer).__name__}"
        )
    if elicitation.mode == "url":
        if answer:
            raise Unanswerable(
                f"{'on_elicit' if named is None else named} answered a url elicitation with "
                f"fields: {'return' if named is None else 'give'} {{}} to accept (the user "
                "opened the page) or None to decline"
            )
        return {}
    fields = elicitation.fields
    unknown = sorted(str(name) for name in answer if name not in fields)
    if unknown:
        raise Unanswerable(
            f"{what} has fields {who} did not ask for: "
            f"{', '.join(unknown)} (it asked for: {', '.join(fields) or 'nothing'})"
        )
    content = {
        name: spec["default"]
        for name, spec in fields.items()
        if isinstance(spec, Mapping) and "default" in spec and name not in answer
    }
    content.update(answer)
    _check_values(content, what)
    _check_fit(elicitation, content, who, what)
    return content


def _check_values(content: Mapping[str, Any], what: str) -> None:
    for name, value in content.items():
        plain = isinstance(value, _VALUE_TYPES) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not plain:
            raise Unanswerable(
                f"{what} gives {name!r} a {type(value).__name__}: a field takes a "
                "string, a number, a boolean, a list of strings or None"
            )


def _check_fit(elicitation: Elicitation, content: Mapping[str, Any], who: str, what: str) -> None:
    validators = importlib.import_module("jsonschema.validators")
    kind = validators.validator_for(elicitation.schema)
    validator = kind(elicitation.schema, format_checker=kind.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(dict(content)), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    said = "; ".join(
        f"{'.'.join(map(str, e.absolute_path)) or 'the answer'}: {e.message[:200]}"
        for e in errors[:_MAX_ERRORS]
    )
    raise Unanswerable(f"{what} does not fit what {who} asked for ({said}); it was not sent")
