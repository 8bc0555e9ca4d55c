"""An ``McpTool`` handler that answers in MCP's own result shape (``{"content": [...],
"isError": ...}``), as padwan-ai users write local tools: the model sees the text, and
``isError: true`` is an error result, as for a remote server's tool."""

from __future__ import annotations

from typing import Any

from tether import McpTool
from tether.mcp.content import reduce_mcp_result
from tether.session import AgentSession
from tether.testing import Call, Reply, ScriptedTransport

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def test_reduce_mcp_result_lives_beside_the_remote_reading() -> None:
    import tether.tools.results

    assert not hasattr(tether.tools.results, "reduce_mcp_result")  # one home, in the MCP layer
    assert reduce_mcp_result({"content": [{"type": "text", "text": "x"}]}).content == "x"


async def test_an_mcp_tools_mcp_shaped_result_reaches_the_model_as_text_or_error() -> None:
    def weather(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"Sunny in {args['city']}"}]}

    async def broken(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "station down"}], "isError": True}

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("weather", {"city": "Oslo"}), Call("broken", {"city": "Oslo"})]),
            Reply("ok"),
        ]
    )
    tools = [McpTool("weather", "", SCHEMA, weather), McpTool("broken", "", SCHEMA, broken)]
    async with AgentSession(model, mcp_tools=tools) as session:
        assert await session.send("weather?") == "ok"
    first, second = session.messages[2].tool_results
    assert (first.content, first.is_error) == ("Sunny in Oslo", False)
    assert (second.content, second.is_error) == ("station down", True)
    calls = session.messages[1].tool_uses
    assert (first.tool_use_id, second.tool_use_id) == (calls[0].id, calls[1].id)
    sent = model.requests[1].messages[-1].tool_results  # what the model was given
    seen = [(r.text, r.is_error) for r in sent]
    assert seen == [("Sunny in Oslo", False), ("station down", True)]


async def test_an_mcp_tools_other_dict_results_stay_json() -> None:
    tool = McpTool("data", "", SCHEMA, lambda args: {"content": "a field", "n": 1})
    model = ScriptedTransport([Reply(tool_calls=[Call("data", {})]), Reply("ok")])
    async with AgentSession(model, mcp_tools=[tool]) as session:
        await session.send("go")
    (result,) = session.messages[2].tool_results
    assert result.text == '{"content": "a field", "n": 1}' and not result.is_error
