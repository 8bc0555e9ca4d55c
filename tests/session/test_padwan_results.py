"""What padwan-ai handlers return, as the model sees it: pydantic models, dataclasses and containers
of them as JSON (never Python reprs), and MCP-shaped results reduced to their text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
from pydantic import BaseModel

from tether import ImageBlock, Tool, ToolResultBlock
from tether.mcp.content import reduce_mcp_result
from tether.session import AgentSession
from tether.testing import Call, Reply, ScriptedTransport
from tether.tools.results import to_content


class Item(BaseModel):
    id: int
    name: str


class Dated(BaseModel):
    day: date


@dataclass
class Box:
    label: str
    items: list[Item]


# -- JSON for structured values --------------------------------------------------------------------


def test_a_list_of_models_is_json() -> None:
    text = to_content([Item(id=1, name="x"), Item(id=2, name="y")])
    assert isinstance(text, str)
    assert json.loads(text) == [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]


def test_models_nested_in_containers_are_json_in_json_mode() -> None:
    text = to_content({"found": (Item(id=1, name="x"),), "when": Dated(day=date(2024, 5, 1))})
    assert isinstance(text, str)
    assert json.loads(text) == {"found": [{"id": 1, "name": "x"}], "when": {"day": "2024-05-01"}}


def test_dataclasses_and_models_inside_them_are_json() -> None:
    text = to_content([Box("b", [Item(id=3, name="z")])])
    assert isinstance(text, str)
    assert json.loads(text) == [{"label": "b", "items": [{"id": 3, "name": "z"}]}]


def test_sets_are_json_arrays() -> None:
    text = to_content({"tags": frozenset({"a"})})
    assert isinstance(text, str)
    assert json.loads(text) == {"tags": ["a"]}


def test_plain_values_keep_their_forms() -> None:
    assert to_content("plain") == "plain"
    assert to_content(Item(id=1, name="x")) == '{"id":1,"name":"x"}'
    assert to_content(object) == json.dumps(str(object))  # a class is no dataclass or model


async def test_a_handler_returning_models_reaches_the_model_as_json() -> None:
    def find(query: str) -> list[Item]:
        return [Item(id=1, name=query)]

    model = ScriptedTransport([Reply(tool_calls=[Call("find", {"query": "x"})]), Reply("ok")])
    session = AgentSession(model, mcp_tools=[Tool("find", find)])
    await session.send("find x")
    (result,) = session.messages[2].tool_results
    assert json.loads(result.text) == [{"id": 1, "name": "x"}]


# -- MCP-shaped results ----------------------------------------------------------------------------


def test_mcp_shaped_text_is_reduced_to_the_text() -> None:
    value = {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    result = reduce_mcp_result(value)
    assert type(result) is ToolResultBlock
    assert result.content == "one\ntwo"
    assert result.is_error is False


def test_mcp_is_error_becomes_an_error_result() -> None:
    value = {"content": [{"type": "text", "text": "no such city"}], "isError": True}
    result = reduce_mcp_result(value)
    assert type(result) is ToolResultBlock
    assert (result.content, result.is_error) == ("no such city", True)


def test_mcp_images_and_structured_content_are_kept_as_for_remote_tools() -> None:
    png = "iVBORw0KGgo="
    value = {"content": [{"type": "image", "mimeType": "image/png", "data": png}]}
    result = reduce_mcp_result(value)
    assert type(result) is ToolResultBlock
    assert result.content == (ImageBlock("image/png", png),)
    structured = reduce_mcp_result({"content": [], "structuredContent": {"temp": 22}})
    assert type(structured) is ToolResultBlock
    assert json.loads(str(structured.content)) == {"temp": 22}
    resource = {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}
    read = reduce_mcp_result({"content": [resource, {"type": "text", "text": "end"}]})
    assert type(read) is ToolResultBlock
    assert read.content == "body\nend"


@pytest.mark.parametrize(
    "value",
    [
        {"city": "Paris"},
        {"content": "just a field called content"},
        {"content": [{"text": "no type"}]},
        {"content": [{"type": "text", "text": 3}]},
        {"content": [{"type": "text", "text": "x"}], "isError": "yes"},
        {"content": [{"type": "text", "text": "x"}], "other": 1},
        [{"type": "text", "text": "x"}],
        "text",
    ],
)
def test_anything_else_is_left_as_it_is(value: Any) -> None:
    assert reduce_mcp_result(value) is value


async def test_an_mcp_shaped_result_reaches_the_model_as_its_text() -> None:
    def weather(city: str) -> Any:
        return reduce_mcp_result({"content": [{"type": "text", "text": f"Sunny in {city}"}]})

    def broken(city: str) -> Any:
        return reduce_mcp_result({"content": [{"type": "text", "text": "down"}], "isError": True})

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("weather", {"city": "Oslo"}), Call("broken", {"city": "Oslo"})]),
            Reply("ok"),
        ]
    )
    session = AgentSession(model, mcp_tools=[Tool("weather", weather), Tool("broken", broken)])
    await session.send("weather?")
    first, second = session.messages[2].tool_results
    assert (first.content, first.is_error) == ("Sunny in Oslo", False)
    assert (second.content, second.is_error) == ("down", True)
    assert first.tool_use_id == session.messages[1].tool_uses[0].id
