"""Tests for ``@tool``: schema, descriptions, validation and the docstring reader."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal, assert_type

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from tether.errors import ToolArgumentError
from tether.tools.decorator import tool
from tether.tools.docstrings import parse_docstring
from tether.tools.tool import Tool, ToolSpec


class Address(BaseModel):
    """A postal address."""

    city: str
    zip_code: int = 0


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


# --- decorator forms ----------------------------------------------------------------------


def test_bare_decorator_builds_tool() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert_type(add, Tool)
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.validator is not None
    assert add.schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


def test_parametrised_decorator_forwards_options() -> None:
    def guard(call: Any) -> None:
        return None

    deco = tool(
        name="adder",
        description="Custom.",
        guards=[guard],
        concurrency=2,
        timeout=1.5,
        thread=True,
    )
    assert_type(deco, Callable[[Callable[..., Any]], Tool])

    @deco
    def add(a: int, b: int) -> int:
        """Ignored docstring."""
        return a + b

    assert add.name == "adder"
    assert add.description == "Custom."
    assert add.guards == (guard,)
    assert add.concurrency == 2
    assert add.timeout == 1.5
    assert add.thread is True


def test_called_as_function() -> None:
    def mul(a: int, b: int) -> int:
        return a * b

    t = tool(mul, name="times")
    assert_type(t, Tool)
    assert t.name == "times"
    assert t.handler is mul
    assert t.description == ""


def test_spec_matches_tool() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert t_spec_ok(ping.spec, ping)


def t_spec_ok(spec: ToolSpec, t: Tool) -> bool:
    return (spec.name, spec.description, spec.schema) == (t.name, t.description, t.schema)


def test_zero_parameter_schema_has_properties() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.schema == {"type": "object", "properties": {}}


async def test_sync_invoke() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    assert await add.invoke({"a": 2, "b": 3}) == 5


async def test_async_invoke() -> None:
    @tool
    async def add(a: int, b: int = 10) -> int:
        return a + b

    assert add.is_async
    assert await add.invoke({"a": 2}) == 12


async def test_callable_object_and_partial() -> None:
    class Scaler:
        """Scale a number."""

        def __call__(self, x: int, factor: int = 2) -> int:
            return x * factor

    t = tool(Scaler(), name="scale")
    assert t.description == "Scale a number."
    assert set(t.schema["properties"]) == {"x", "factor"}
    assert await t.invoke({"x": "4"}) == 8

    def power(base: int, exp: int) -> int:
        """Raise base to exp."""
        return int(base**exp)

    p = tool(functools.partial(power, exp=2))
    assert p.name == "power"
    assert p.description == "Raise base to exp."
    assert await p.invoke({"base": 3}) == 9


def test_rejects_var_args_and_kwargs() -> None:
    def star(*args: int) -> None: ...

    def double_star(a: int, **kwargs: Any) -> None: ...

    def pos_only(a: int, /) -> None: ...

    with pytest.raises(TypeError, match=r"\*args"):
        tool(star)
    with pytest.raises(TypeError, match=r"\*\*kwargs"):
        tool(double_star)
    with pytest.raises(TypeError, match="positional-only"):
        tool(pos_only)


def test_rejects_existing_tool() -> None:
    @tool
    def ping() -> None: ...

    with pytest.raises(TypeError, match="already a Tool"):
        tool(ping)  # type: ignore[call-overload]


def test_invalid_name_propagates_from_tool() -> None:
    with pytest.raises(ValueError, match="must be"):
        tool(lambda: None, name="bad name!")


# --- schema -------------------------------------------------------------------------------


def test_schema_types_defaults_and_constraints() -> None:
    @tool
    def f(  # type: ignore[no-untyped-def]
        count: Annotated[int, Field(description="How many.", ge=1, le=10)],
        label: str = "x",
        ratio: float = 0.5,
        flag: bool = False,
        anything=None,
    ) -> None: ...

    props = f.schema["properties"]
    assert props["count"] == {
        "type": "integer",
        "description": "How many.",
        "minimum": 1,
        "maximum": 10,
    }
    assert props["label"] == {"type": "string", "default": "x"}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["flag"] == {"type": "boolean", "default": False}
    assert props["anything"] == {"default": None}
    assert f.schema["required"] == ["count"]
    assert "title" not in f.schema


def test_schema_literal_enum_containers_optional_datetime() -> None:
    @tool
    def f(
        mode: Literal["fast", "slow"],
        color: Color = Color.RED,
        xs: list[int] | None = None,
        weights: dict[str, float] | None = None,
        when: datetime.datetime | None = None,
    ) -> None: ...

    props = f.schema["properties"]
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["color"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert f.schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert props["xs"]["anyOf"] == [
        {"type": "array", "items": {"type": "integer"}},
        {"type": "null"},
    ]
    assert props["weights"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert props["when"]["anyOf"][0] == {"type": "string", "format": "date-time"}


def test_schema_nested_model_and_dataclass() -> None:
    @tool
    def ship(to: Address, at: Point) -> None:
        """Ship it.

        Args:
            to: Where to.
        """

    schema = ship.schema
    assert schema["properties"]["to"] == {"$ref": "#/$defs/Address", "description": "Where to."}
    assert schema["properties"]["at"] == {"$ref": "#/$defs/Point"}
    address = schema["$defs"]["Address"]
    assert address["description"] == "A postal address."
    assert address["properties"] == {
        "city": {"type": "string"},
        "zip_code": {"type": "integer", "default": 0},
    }
    assert address["required"] == ["city"]
    assert schema["$defs"]["Point"]["required"] == ["x"]


def test_explicit_field_title_kept() -> None:
    @tool
    def f(a: Annotated[int, Field(title="The A")]) -> None: ...

    assert f.schema["properties"]["a"]["title"] == "The A"


def test_awkward_parameter_names() -> None:
    @tool
    def f(json: str, model_config: int = 1, _private: int = 2) -> tuple[str, int, int]:
        return json, model_config, _private

    assert set(f.schema["properties"]) == {"json", "model_config", "_private"}
    assert f.validator is not None
    assert f.validator({"json": "j", "_private": "5"}) == {
        "json": "j",
        "model_config": 1,
        "_private": 5,
    }


def test_field_alias_is_the_argument_name() -> None:
    @tool
    def f(from_: Annotated[str, Field(alias="from")]) -> str:
        return from_

    assert list(f.schema["properties"]) == ["from"]
    assert f.validator is not None
    assert f.validator({"from": "a"}) == {"from_": "a"}


def test_unschemable_type_gets_empty_schema_and_can_be_bound() -> None:
    class Client:
        pass

    client = Client()

    @tool(bindings={"client": client})
    def f(q: str, client: Client) -> Client:
        return client

    assert f.schema["properties"] == {"q": {"type": "string"}}
    assert f.validator is not None
    assert f.validator({"q": "x", **f.bindings})["client"] is client
    with pytest.raises(ToolArgumentError, match="'client'"):
        f.validator({"q": "x", "client": "not a client"})


def test_string_annotations_resolve() -> None:
    # this module uses ``from __future__ import annotations``: every annotation is a string
    @tool
    def f(a: int, b: list[Address]) -> None: ...

    assert f.schema["properties"]["a"] == {"type": "integer"}
    assert f.schema["properties"]["b"]["items"] == {"$ref": "#/$defs/Address"}


def test_unresolvable_annotation_is_type_error() -> None:
    def f(a: Missing) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match="type hints"):
        tool(f)


# --- descriptions -------------------------------------------------------------------------


def test_google_docstring() -> None:
    @tool
    def search(query: str, limit: int = 5) -> None:
        """Search the index
        for documents.

        Args:
            query: What to look for,
                in plain words.
            limit (int): At most this many.

        Returns:
            The hits.
        """

    assert search.description == "Search the index for documents."
    props = search.schema["properties"]
    assert props["query"]["description"] == "What to look for, in plain words."
    assert props["limit"]["description"] == "At most this many."


def test_numpy_docstring() -> None:
    @tool
    def search(query: str, limit: int = 5) -> None:
        """Search the index.

        Parameters
        ----------
        query : str
            What to look for,
            in plain words.
        limit : int, optional
            At most this many.

        Returns
        -------
        list
            The hits.
        """

    assert search.description == "Search the index."
    props = search.schema["properties"]
    assert props["query"]["description"] == "What to look for, in plain words."
    assert props["limit"]["description"] == "At most this many."


def test_sphinx_docstring() -> None:
    @tool
    def search(query: str, limit: int = 5) -> None:
        """Search the index.

        :param query: What to look for,
            in plain words.
        :param int limit: At most this many.
        :type limit: int
        :returns: The hits.
        """

    assert search.description == "Search the index."
    props = search.schema["properties"]
    assert props["query"]["description"] == "What to look for, in plain words."
    assert props["limit"]["description"] == "At most this many."


def test_field_description_beats_docstring() -> None:
    @tool
    def f(a: Annotated[int, Field(description="From Field.")], b: int) -> None:
        """F.

        Args:
            a: From docstring.
            b: Bee.
        """

    assert f.schema["properties"]["a"]["description"] == "From Field."
    assert f.schema["properties"]["b"]["description"] == "Bee."


def test_explicit_description_and_no_docstring() -> None:
    @tool(description="Given.")
    def f(a: int) -> None:
        """Docstring summary.

        Args:
            a: Still used for the parameter.
        """

    @tool
    def g(a: int) -> None: ...

    assert f.description == "Given."
    assert f.schema["properties"]["a"]["description"] == "Still used for the parameter."
    assert g.description == ""
    assert "description" not in g.schema["properties"]["a"]


def test_parse_docstring_edge_cases() -> None:
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("") == ("", {})
    assert parse_docstring("  One   line.  ") == ("One line.", {})
    summary, params = parse_docstring(
        """Numpy with shared type.

        Parameters
        ----------
        a, b : int
            Both.
        flag
            No type.
        """
    )
    assert summary == "Numpy with shared type."
    assert params == {"a": "Both.", "b": "Both.", "flag": "No type."}
    _, params = parse_docstring(
        """Google, description on the next line.

        Args:
            a:
                Below.
            *rest: Star.
        Raises:
            ValueError: not a parameter.
        """
    )
    assert params == {"a": "Below.", "rest": "Star."}


_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
_WORDS = st.lists(st.from_regex(r"[A-Za-z0-9.,]{1,8}", fullmatch=True), min_size=1, max_size=6)


@given(st.dictionaries(_NAMES, _WORDS, min_size=1, max_size=5))
def test_parse_google_roundtrip(entries: dict[str, list[str]]) -> None:
    lines = ["Summary here.", "", "Args:"]
    for name, words in entries.items():
        lines.append(f"    {name}: {words[0]}")
        lines.extend(f"        {w}" for w in words[1:])
    summary, params = parse_docstring("\n".join(lines))
    assert summary == "Summary here."
    assert params == {name: " ".join(words) for name, words in entries.items()}


# --- validation ---------------------------------------------------------------------------


async def test_lax_coercion() -> None:
    seen: dict[str, Any] = {}

    @tool
    def f(n: int, x: float, flag: bool, when: datetime.date) -> None:
        seen.update(n=n, x=x, flag=flag, when=when)

    await f.invoke({"n": "3", "x": "1.5", "flag": "yes", "when": "2024-02-03"})
    assert seen == {"n": 3, "x": 1.5, "flag": True, "when": datetime.date(2024, 2, 3)}
    assert type(seen["n"]) is int


async def test_error_wrong_type_and_missing() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ToolArgumentError) as info:
        await add.invoke({"a": "x"})
    assert str(info.value) == (
        "Invalid arguments for tool 'add': "
        "'a': Input should be a valid integer, unable to parse string as an integer (got 'x'); "
        "'b': Field required"
    )


async def test_error_names_nested_path() -> None:
    @tool
    def ship(to: Address, items: list[int]) -> None: ...

    with pytest.raises(ToolArgumentError) as info:
        await ship.invoke({"to": {"zip_code": "q"}, "items": [1, "two"]})
    message = str(info.value)
    assert "'to.city': Field required" in message
    assert "'to.zip_code': Input should be a valid integer" in message
    assert "'items.1': Input should be a valid integer" in message


async def test_error_literal_and_constraint() -> None:
    @tool
    def f(mode: Literal["a", "b"], n: Annotated[int, Field(ge=0)] = 0) -> None: ...

    with pytest.raises(ToolArgumentError, match=r"'mode': Input should be 'a' or 'b'"):
        await f.invoke({"mode": "c"})
    with pytest.raises(ToolArgumentError, match=r"'n': Input should be greater than or equal"):
        await f.invoke({"mode": "a", "n": -1})


async def test_error_input_repr_is_truncated() -> None:
    @tool
    def f(n: int) -> None: ...

    with pytest.raises(ToolArgumentError) as info:
        await f.invoke({"n": "z" * 500})
    assert len(str(info.value)) < 250


async def test_non_mapping_arguments() -> None:
    @tool
    def f(n: int) -> None: ...

    assert f.validator is not None
    with pytest.raises(ToolArgumentError, match="expected an object"):
        f.validator([1, 2])  # type: ignore[arg-type]


async def test_nested_values_arrive_as_objects() -> None:
    seen: dict[str, Any] = {}

    @tool
    def f(to: Address, at: Point, color: Color, when: datetime.datetime) -> None:
        seen.update(to=to, at=at, color=color, when=when)

    await f.invoke(
        {
            "to": {"city": "Oslo"},
            "at": {"x": "1"},
            "color": "blue",
            "when": "2024-01-02T03:04:05Z",
        }
    )
    assert seen["to"] == Address(city="Oslo")
    assert isinstance(seen["to"], Address)
    assert seen["at"] == Point(1, 0)
    assert seen["color"] is Color.BLUE
    assert seen["when"] == datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


async def test_extra_keys_ignored_and_defaults_filled() -> None:
    @tool
    def f(a: int, b: str = "d") -> tuple[int, str]:
        return a, b

    assert f.validator is not None
    assert f.validator({"a": 1, "unknown": 2}) == {"a": 1, "b": "d"}
    assert await f.invoke({"a": 1, "unknown": 2}) == (1, "d")


async def test_mutable_default_not_shared() -> None:
    @tool
    def f(xs: list[int] = []) -> list[int]:  # noqa: B006
        xs.append(1)
        return xs

    assert await f.invoke({}) == [1]
    assert await f.invoke({}) == [1]


# --- bindings -----------------------------------------------------------------------------


async def test_bindings_hidden_and_applied() -> None:
    seen: dict[str, Any] = {}

    @tool(bindings={"user_id": 7})
    def lookup(query: str, user_id: int) -> str:
        """Look something up.

        Args:
            query: The query.
            user_id: Whose data.
        """
        seen["user_id"] = user_id
        return f"{query}:{user_id}"

    assert lookup.schema["properties"] == {"query": {"type": "string", "description": "The query."}}
    assert lookup.schema["required"] == ["query"]
    assert lookup.spec.schema == lookup.schema
    model_args = {"query": "q", "user_id": 99}
    assert await lookup.invoke({**model_args, **lookup.bindings}) == "q:7"
    assert seen["user_id"] == 7


async def test_bind_keeps_validator() -> None:
    @tool
    def lookup(query: str, user_id: int) -> str:
        return f"{query}:{user_id}"

    bound = lookup.bind(user_id="8")
    assert bound.validator is lookup.validator
    assert "user_id" not in bound.schema["properties"]
    assert "user_id" in lookup.schema["properties"]
    assert await bound.invoke({"query": "q", **bound.bindings}) == "q:8"
