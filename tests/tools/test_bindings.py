"""Bound tool arguments: hidden from the schema the model sees, and they win over what the
model sends; ``Tool.bind`` returns a bound copy."""

from __future__ import annotations

from agent_runs import of_type, run_events
from tether import Agent, ToolResult, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_bindings_hidden_from_schema_and_override_model_value() -> None:
    got: list[tuple[str, int]] = []

    @tool(bindings={"user_id": 7})
    def lookup(query: str, user_id: int) -> str:
        got.append((query, user_id))
        return f"{query}:{user_id}"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("lookup", {"query": "q", "user_id": 99})]), Reply("ok")]
    )
    agent = Agent("sys", model, tools=[lookup])
    events = await run_events(agent, "go")
    (spec,) = model.requests[0].tools
    assert "user_id" not in spec.schema["properties"]
    assert "query" in spec.schema["properties"]
    assert "user_id" not in spec.schema.get("required", [])
    assert got == [("q", 7)]
    assert of_type(events, ToolResult)[0].content == "q:7"


async def test_tool_bind_returns_a_bound_copy() -> None:
    got: list[int] = []

    @tool
    def lookup(query: str, user_id: int) -> str:
        got.append(user_id)
        return "ok"

    bound = lookup.bind(user_id=7)
    assert "user_id" in lookup.schema["properties"]  # the original is unchanged
    assert "user_id" not in bound.schema["properties"]
    assert "user_id" not in bound.schema.get("required", [])
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("lookup", {"query": "q", "user_id": 99})]), Reply("ok")]
    )
    await Agent("sys", model, tools=[bound]).run("go")
    assert got == [7]
    assert "user_id" not in model.requests[0].tools[0].schema["properties"]
