"""Faults of tools found by probing the engine, each pinned by a test that failed before its fix:
a tool built without a schema, kwargs handlers, bad names, a guard rewrite that drops a binding."""

from __future__ import annotations

from typing import Any

import pytest

from agent_runs import agent_of, one_call_then
from tether import MemoryContextStore, Rewrite, Tool, ToolCall, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_a_tool_without_a_schema_shows_its_signature() -> None:
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    t = Tool("add", add)
    assert t.schema is not None
    assert t.schema["properties"].keys() == {"a", "b"}
    assert t.schema["required"] == ["a"]
    assert t.description == "Add two numbers."
    store = MemoryContextStore()
    model = ScriptedTransport([Reply(tool_calls=[Call("add", {"a": "40"})]), Reply("ok")])
    await agent_of(model, [t]).run("go", store)
    assert store.messages[2].tool_results[0].text == "42"  # validated and coerced
    assert model.requests[0].tools[0].schema == t.schema


def test_a_kwargs_handler_without_a_schema_gets_an_open_schema() -> None:
    def anything(name: str, **rest: Any) -> str:
        return name

    schema = Tool("anything", anything).schema
    assert schema == {
        "type": "object",
        "properties": {"name": {}},
        "required": ["name"],
        "additionalProperties": True,
    }


@pytest.mark.parametrize("name", ["echo\n", "echo\r\n", "\necho", "ec ho", "", "x" * 129])
def test_bad_tool_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="tool name"):
        Tool(name, lambda: "x", schema={"type": "object", "properties": {}})


async def test_a_guard_rewrite_keeps_injected_bindings() -> None:
    seen: list[dict[str, Any]] = []

    def lookup(query: str, api_key: str) -> str:
        seen.append({"query": query, "api_key": api_key})
        return "found"

    def shout(call: ToolCall) -> Rewrite:
        return Rewrite({"query": str(call.arguments["query"]).upper()})  # drops api_key

    t = tool(lookup).bind(api_key="secret")
    t = Tool(
        t.name,
        t.handler,
        t.description,
        t.schema,
        guards=[shout],
        bindings=t.bindings,
        validator=t.validator,
    )
    model = one_call_then("ok", "lookup", query="cats")
    assert await agent_of(model, [t]).run("go") == "ok"
    assert seen == [{"query": "CATS", "api_key": "secret"}]
