"""Hand-made cases for constrained tool calls on the local model (none from any benchmark):
two things asked at once, a question no tool fits, arguments with an enum, an integer and a
nested object. Shared by the tests and by the comparison with and without constraints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.types import ToolSpec

WEATHER = ToolSpec(
    "get_weather",
    "The current weather in a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)
CONVERT = ToolSpec(
    "convert_currency",
    "Convert an amount of money from one currency to another.",
    {
        "type": "object",
        "properties": {
            "amount": {"type": "number"},
            "source": {"type": "string", "description": "ISO code, e.g. USD."},
            "target": {"type": "string", "description": "ISO code, e.g. EUR."},
        },
        "required": ["amount", "source", "target"],
    },
)
MULTIPLY = ToolSpec(
    "multiply",
    "Multiply two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
ADD = ToolSpec(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
POPULATION = ToolSpec(
    "city_population",
    "The population of a town or city, from the latest census.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
BOOK = ToolSpec(
    "book_table",
    "Book a table at a restaurant.",
    {
        "type": "object",
        "properties": {
            "restaurant": {"type": "string"},
            "people": {"type": "integer", "minimum": 1},
            "seating": {"type": "string", "enum": ["window", "bar", "terrace"]},
            "contact": {"$ref": "#/$defs/Contact"},
        },
        "required": ["restaurant", "people", "seating", "contact"],
        "$defs": {
            "Contact": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "phone": {"type": "string"}},
                "required": ["name", "phone"],
            }
        },
    },
)


@dataclass(frozen=True, slots=True)
class Case:
    """A question, the tools on offer, and what a right first reply does: the tool names it
    calls (in any order; empty: it answers without a tool)."""

    name: str
    question: str
    tools: Sequence[ToolSpec]
    calls: tuple[str, ...]


CASES = (
    Case(
        "two cities",
        "What is the weather in Paris and in Berlin?",
        (WEATHER,),
        ("get_weather",) * 2,
    ),
    Case("a joke", "Tell me a short joke about cats.", (WEATHER,), ()),
    Case("who wrote", "Who wrote the novel Moby-Dick?", (WEATHER, CONVERT), ()),
    Case(
        "two sums",
        "What is 17 times 23, and what is 45 plus 12?",
        (MULTIPLY, ADD),
        ("multiply", "add"),
    ),
    Case(
        "one conversion",
        "How much is 250 US dollars in euros?",
        (WEATHER, CONVERT),
        ("convert_currency",),
    ),
    Case(
        "nested",
        "Book a table for 4 at Luigi's by the window, for Anna Berg, phone 555-0134.",
        (BOOK, WEATHER),
        ("book_table",),
    ),
    Case(
        "three cities",
        "Give me the temperature in Tokyo, Oslo and Lima, in celsius.",
        (WEATHER, CONVERT),
        ("get_weather",) * 3,
    ),
    Case(
        "a fact only a tool knows",
        "How many people live in Brackwater Falls?",
        (WEATHER, POPULATION),
        ("city_population",),
    ),
    Case("greeting", "Hello! How are you today?", (CONVERT, MULTIPLY), ()),
)


def schema_of(tools: Sequence[ToolSpec], name: str) -> dict[str, Any] | None:
    """The schema of the tool ``name`` among ``tools`` (None: not offered)."""
    for spec in tools:
        if spec.name == name:
            return dict(spec.schema)
    return None
