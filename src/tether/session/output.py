"""Typed final answers: the schema asked for, the answer read and validated, and the text that
sends an invalid answer back to the model for repair."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["OutputSpec"]

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```[ \t]*$", re.DOTALL)
_MAX_ERRORS = 10  # validation errors quoted back to the model


@dataclass(frozen=True, slots=True)
class OutputSpec(Generic[T]):
    """What ``send(..., output=T)`` asks for and how it reads the answer (pydantic validates)."""

    target: type[T]
    adapter: Any

    @classmethod
    def of(cls, output: type[T]) -> OutputSpec[T]:
        from pydantic import TypeAdapter  # noqa: PLC0415 - only typed answers load it

        return cls(output, TypeAdapter(output))

    def instruction(self) -> str:
        """Added to the user's message: the shape the answer must take."""
        schema = json.dumps(self.adapter.json_schema(), separators=(",", ":"))
        return (
            "Answer with only a JSON value (no prose, no code fence) that matches this JSON "
            f"Schema: {schema}"
        )

    def read(self, text: str) -> T:
        """The answer as a ``T``; raises pydantic's ``ValidationError`` if it is not one."""
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        value: T = self.adapter.validate_json(body)
        return value

    @staticmethod
    def repair(error: Any) -> str:
        """The message that sends a failed answer back: what was wrong, where."""
        problems = [
            f"- {'.'.join(str(p) for p in e['loc']) or '(the value)'}: {e['msg']}"
            for e in error.errors(include_url=False)[:_MAX_ERRORS]
        ]
        return (
            "Your answer did not match the required JSON Schema:\n"
            + "\n".join(problems)
            + "\nReply again with only the corrected JSON value."
        )
