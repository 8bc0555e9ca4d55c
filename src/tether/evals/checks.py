"""Evaluators of the answer: equal to the expected one, containing a text, matching a pattern,
or valid as a type."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .grading import EvalContext, Verdict

__all__ = ["Contains", "Equals", "Regex", "Typed", "as_plain", "as_text"]

_UNSET: Any = object()


def as_plain(value: Any) -> Any:
    """``value`` as plain JSON data where it is a pydantic model or dataclass, else itself."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    from dataclasses import asdict, is_dataclass  # noqa: PLC0415 - rare

    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return value


def as_text(value: Any) -> str:
    """The text an answer is searched in: itself when a string, else its JSON-like form."""
    if isinstance(value, str):
        return value
    import json  # noqa: PLC0415 - only for typed answers

    return json.dumps(as_plain(value), default=str, ensure_ascii=False)


def _wanted(value: Any, ctx: EvalContext, who: str) -> Any:
    if value is not _UNSET:
        return value
    if ctx.expected is None:
        raise ValueError(f"{who} has no value and the case no 'expected'")
    return ctx.expected


@dataclass(frozen=True, slots=True)
class Equals:
    """The answer equals ``value`` (else the case's ``expected``); typed answers compare as plain
    data, text after stripping the ends (``ignore_case`` to ignore case too)."""

    value: Any = _UNSET
    ignore_case: bool = False
    name: str = "equals"

    def evaluate(self, ctx: EvalContext) -> Verdict:
        wanted = as_plain(_wanted(self.value, ctx, "equals"))
        got = as_plain(ctx.output)
        if isinstance(wanted, str) and isinstance(got, str):
            wanted, got = wanted.strip(), got.strip()
            if self.ignore_case:
                wanted, got = wanted.casefold(), got.casefold()
        if got == wanted:
            return Verdict(True)
        return Verdict(False, reason=f"expected {_short(wanted)}, got {_short(got)}")


@dataclass(frozen=True, slots=True)
class Contains:
    """The answer's text contains ``value`` (each of them, for a list), else the case's
    ``expected``; case ignored unless ``ignore_case`` is False."""

    value: Any = _UNSET
    ignore_case: bool = True
    name: str = "contains"

    def evaluate(self, ctx: EvalContext) -> Verdict:
        wanted = _wanted(self.value, ctx, "contains")
        parts = [wanted] if isinstance(wanted, str) else list(wanted)
        text = as_text(ctx.output) if ctx.output is not None else ""
        fold = str.casefold if self.ignore_case else str
        missing = [str(p) for p in parts if fold(str(p)) not in fold(text)]
        if not missing:
            return Verdict(True)
        return Verdict(False, reason=f"missing {', '.join(map(repr, missing))} in {_short(text)}")


@dataclass(frozen=True, slots=True)
class Regex:
    """The answer's text matches ``pattern`` somewhere (``re.search``; ``flags`` as in ``re``)."""

    pattern: str
    flags: int = 0
    name: str = "regex"

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern, self.flags)  # a bad pattern fails where it is written
        except re.error as exc:
            raise ValueError(f"{self.pattern!r} is not a valid pattern: {exc}") from None

    def evaluate(self, ctx: EvalContext) -> Verdict:
        text = as_text(ctx.output) if ctx.output is not None else ""
        if re.search(self.pattern, text, self.flags):
            return Verdict(True)
        return Verdict(False, reason=f"{self.pattern!r} not found in {_short(text)}")


@dataclass(frozen=True, slots=True)
class Typed:
    """The answer is valid as ``type_`` (anything pydantic validates: a model, a TypedDict,
    ``list[int]``...); text is parsed as JSON first."""

    type_: Any
    name: str = "typed"

    def evaluate(self, ctx: EvalContext) -> Verdict:
        from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415 - pydantic is heavy

        adapter: TypeAdapter[Any] = TypeAdapter(self.type_)
        try:
            if isinstance(ctx.output, str) and self.type_ is not str:
                adapter.validate_json(ctx.output)
            else:
                adapter.validate_python(as_plain(ctx.output))
        except ValidationError as exc:
            return Verdict(
                False, reason=f"not a valid {_type_name(self.type_)}: {exc.errors()[0]['msg']}"
            )
        return Verdict(True)


def _type_name(type_: Any) -> str:
    return getattr(type_, "__name__", None) or repr(type_)


def _short(value: Any, most: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= most else text[: most - 3] + "..."
