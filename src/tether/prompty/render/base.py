"""What every Prompty template engine shares: the caps, the errors, the render results, the
engine protocols, and the budget a render spends (one per render, in a context variable): loop
steps, and work, the characters its operations read or build (``ITEM_COST`` per container
item), charged before a large value is built wherever its size can be known first."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import TemplateLimitError
from ..serial import JsonShape

__all__ = [
    "BUDGET",
    "ITEM_COST",
    "MAX_EXPRESSION_DEPTH",
    "MAX_INPUT_DEPTH",
    "MAX_LOOP_ITERATIONS",
    "MAX_OUTPUT_CHARS",
    "MAX_TEMPLATE_CHARS",
    "MAX_TEMPLATE_NODES",
    "MAX_WORK",
    "NONCE_PREFIX",
    "RICH_KINDS",
    "Budget",
    "RenderSegment",
    "Rendered",
    "RichInput",
    "SegmentRenderer",
    "TemplateRenderer",
    "charge",
    "check_container_size",
    "counted",
    "is_container",
    "text_of",
    "weight_of",
]

RICH_KINDS = frozenset({"thread", "image", "file", "audio"})
NONCE_PREFIX = "__PROMPTY_THREAD_"
MAX_TEMPLATE_CHARS = 100_000
MAX_OUTPUT_CHARS = 4_000_000
MAX_LOOP_ITERATIONS = 250_000
MAX_EXPRESSION_DEPTH = 16
MAX_TEMPLATE_NODES = 10_000
MAX_INPUT_DEPTH = 64
MAX_WORK = 4 * MAX_OUTPUT_CHARS
"""The work one render may do: characters read or built by its operations, all told."""
ITEM_COST = 8
"""What one item of a list, tuple, dict or set counts as work (a pointer's bytes)."""


@dataclass(frozen=True, slots=True)
class RichInput:
    """A rich-kind input the template saw only as its nonce."""

    name: str
    kind: str
    value: Any


@dataclass(frozen=True, slots=True)
class Rendered:
    """A render's text and its nonce map (nonce → the rich input it stands for)."""

    text: str
    rich: Mapping[str, RichInput] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RenderSegment(JsonShape):
    """One piece of rendered text: author ``literal`` text or an ``interp``olated value."""

    kind: Literal["literal", "interp"]
    text: str
    source: str | None = None
    strict: bool = False


class TemplateRenderer(Protocol):
    """A template engine (spec §5.6): template text and inputs in, text out."""

    def render(self, template: str, inputs: Mapping[str, Any]) -> str: ...


@runtime_checkable
class SegmentRenderer(Protocol):
    """An engine that can also say which rendered text came from which input."""

    def render_segments(
        self, template: str, inputs: Mapping[str, Any], strict: Collection[str]
    ) -> list[RenderSegment]: ...


# --- work budget, shared by both engines ----------------------------------------------------


class Budget:
    """One render's allowance: ``left`` loop steps and ``work`` units of work."""

    __slots__ = ("left", "work")

    def __init__(self) -> None:
        self.left = MAX_LOOP_ITERATIONS
        self.work = MAX_WORK

    def spend(self, work: int = 0) -> None:
        """One loop step, and ``work`` units (the text a step of the loop emits)."""
        self.left -= 1
        if self.left < 0:
            raise TemplateLimitError(f"the template ran over {MAX_LOOP_ITERATIONS} loop steps")
        if work:
            self.charge(work)

    def charge(self, work: int) -> None:
        """``work`` units of work; past ``MAX_WORK`` a ``TemplateLimitError``."""
        self.work -= work
        if self.work < 0:
            raise TemplateLimitError(
                f"the template did over {MAX_WORK} units of work (characters read or built)"
            )


BUDGET: ContextVar[Budget | None] = ContextVar("prompty_render_budget", default=None)


def counted(items: Iterable[Any], work: int = 0) -> Iterator[Any]:
    """Yields ``items``, spending one step (and ``work`` units) of the render's budget on each."""
    budget = BUDGET.get()
    for item in items:
        if budget is not None:
            budget.spend(work)
        yield item


def charge(work: int) -> None:
    """Spends ``work`` units of the current render's budget (nothing outside a render)."""
    budget = BUDGET.get()
    if budget is not None and work > 0:
        budget.charge(work)


def weight_of(value: Any) -> int:
    """The work ``value`` stands for: its characters or bytes, ``ITEM_COST`` per container
    item, an integer's bytes; 0 for anything else (constant-size)."""
    if isinstance(value, str | bytes | bytearray):
        return len(value)
    if isinstance(value, list | tuple | dict | set | frozenset):
        return len(value) * ITEM_COST
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 8
    return 0


def text_of(value: Any) -> str:
    """``str(value)``, refusing containers too large to print (shared references can
    otherwise turn a small template into gigabytes)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if is_container(value):
        charge(check_container_size(value))
    return str(value)


def is_container(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict, set, frozenset))


def check_container_size(value: Any) -> int:
    """How many characters (and items) printing ``value`` visits; ``TemplateLimitError`` past
    ``MAX_OUTPUT_CHARS``, found without printing it."""
    stack, seen = [value], 0
    while stack:
        item = stack.pop()
        seen += len(item) if isinstance(item, str) else 1
        if seen > MAX_OUTPUT_CHARS:
            raise TemplateLimitError("a value is too large to print")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return seen
