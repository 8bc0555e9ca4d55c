"""Plain functions in ``Agent(tools=[...])``, made tools by ``@tool``'s one mechanism, and the
``ToolSchemaWarning`` that says what the model will see when a signature or docstring says too
little (for plain functions, ``@tool`` and ``Tool(...)`` alike)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent, Tool, ToolResultBlock, tool
from tether.errors import ToolSchemaWarning
from tether.testing import Call, Reply, ScriptedTransport


def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


class Client:
    """Something with no JSON form (a database handle, say)."""


async def test_a_plain_function_is_a_tool_the_model_can_call() -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("add", {"a": 2, "b": 40})]), Reply("The sum is 42.")]
    )
    agent = Agent("You add.", model, tools=[add])
    assert await agent.run("2 + 40?") == "The sum is 42."
    [offered] = model.requests[0].tools
    assert offered == tool(add).spec  # the schema and description @tool makes, exactly
    sent = [b for m in model.requests[1].messages for b in m.content]
    assert [b.content for b in sent if isinstance(b, ToolResultBlock)] == ["42"]


def test_plain_functions_sit_beside_tools_and_sources_in_order() -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    agent = Agent("x", ScriptedTransport([]), tools=[ping, add])
    assert [t.name for t in agent.current_tools()] == ["ping", "add"]
    assert all(isinstance(t, Tool) for t in agent.tools)
    assert agent.copy(name="other").tools[1].name == "add"  # a copy keeps them as tools


def test_a_plain_function_may_name_a_local_class() -> None:
    class Place(BaseModel):
        city: str

    def visit(place: Place) -> str:
        """Visit a place."""
        return place.city

    agent = Agent("x", ScriptedTransport([]), tools=[visit])
    assert agent.current_tools()[0].schema is not None
    assert "$defs" in agent.current_tools()[0].schema


@pytest.mark.parametrize("item", [42, "add", Client], ids=["int", "str", "class"])
def test_what_is_not_a_tool_is_refused_with_what_is_accepted(item: Any) -> None:
    with pytest.raises(TypeError) as caught:
        Agent("x", ScriptedTransport([]), tools=[add, item])
    text = str(caught.value)
    assert "tools[1]" in text
    assert "a Tool, a ToolSource or a function" in text


def test_a_function_that_cannot_be_a_tool_says_which_and_why() -> None:
    def spread(*values: int) -> int:
        """Sum them."""
        return sum(values)

    with pytest.raises(TypeError, match=r"tools\[0\].*\*values is not supported"):
        Agent("x", ScriptedTransport([]), tools=[spread])


# --- what the model will see ----------------------------------------------------------------


def _made(how: str, fn: Any, **options: Any) -> Tool:
    if how == "plain":
        [made] = Agent("x", ScriptedTransport([]), tools=[fn]).current_tools()
        return made
    if how == "decorator":
        return tool(fn, **options)
    return Tool(fn.__name__, fn, **options)


HOW = ["plain", "decorator", "Tool"]


@pytest.mark.parametrize("how", HOW)
def test_a_parameter_without_annotation_warns_what_the_model_sees(how: str) -> None:
    def look(query, limit: int = 3) -> str:  # type: ignore[no-untyped-def]
        """Look something up."""
        return str(query)

    with pytest.warns(ToolSchemaWarning) as caught:
        made = _made(how, look)
    assert made.schema is not None
    assert made.schema["properties"]["query"] == {}
    [warning] = caught
    text = str(warning.message)
    assert "'look'" in text
    assert "'query'" in text
    assert "no type annotation" in text
    assert "any value" in text
    assert warning.filename == __file__  # it points at the user's line, not tether's


@pytest.mark.parametrize("how", HOW)
def test_a_parameter_of_a_type_with_no_json_form_warns(how: str) -> None:
    def fetch(client: Client, key: str) -> str:
        """Fetch a key."""
        return key

    with pytest.warns(ToolSchemaWarning, match=r"'client'.*Client.*no JSON Schema.*any value"):
        _made(how, fetch)


@pytest.mark.parametrize("how", HOW)
def test_a_tool_without_description_warns_that_the_model_sees_only_its_name(how: str) -> None:
    def mystery(x: int) -> int:
        return x

    with pytest.warns(ToolSchemaWarning, match=r"'mystery' has no description.*only its name"):
        _made(how, mystery)


def test_a_tool_described_in_full_is_quiet() -> None:
    def anything(value: Any) -> str:  # Any is a deliberate choice, not an oversight
        """Echo anything."""
        return str(value)

    def get(client, key: str) -> str:  # type: ignore[no-untyped-def]
        return key

    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolSchemaWarning)
        for how in HOW:
            _made(how, add)
            _made(how, anything)
        tool(get, description="Get a key.", bindings={"client": 1})
        Tool("given", add, "Given.", schema={"type": "object", "properties": {}})


def test_a_bound_parameter_never_warns() -> None:
    def fetch(client: Client, key: str) -> str:
        """Fetch a key."""
        return key

    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolSchemaWarning)
        made = tool(fetch, bindings={"client": Client()})
        Tool("fetch", fetch, bindings={"client": Client()})
        Agent("x", ScriptedTransport([]), tools=[made.bind(client=Client())])
    assert made.schema is not None
    assert list(made.schema["properties"]) == ["key"]


def test_an_explicit_schema_with_an_untyped_property_warns() -> None:
    schema = {"type": "object", "properties": {"q": {"description": "what to find"}}}
    with pytest.warns(ToolSchemaWarning, match=r"'q'.*declares no type.*any value"):
        Tool("find", add, "Find.", schema=schema)


def test_a_copy_of_a_tool_does_not_warn_again() -> None:
    def mystery(x: int) -> int:
        return x

    with pytest.warns(ToolSchemaWarning):
        made = tool(mystery)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolSchemaWarning)
        made.bind(x=1)
        dataclasses.replace(made, name="renamed")
