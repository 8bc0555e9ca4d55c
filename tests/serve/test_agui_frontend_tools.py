"""Front-end tools (AG-UI ``tools``, CopilotKit actions) over real HTTP: offered to the model
beside the agent's own, a call of one streamed and left to the front end (the run finishes, no
interrupt), its result taken from the next run's ``role: "tool"`` message and seen by the
model; a new user message instead ends the call with an error result; clashes and bad tools
refused before anything is stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from served import client, kinds, run, serving
from tether import Agent, tool
from tether.messages import ToolResultBlock
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

CONFIRM = {
    "name": "confirm",
    "description": "Ask the user to confirm in the page.",
    "parameters": {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def order_is_sound(events: list[dict[str, Any]]) -> None:
    """RUN_STARTED first, one RUN_FINISHED last; each call's ARGS and END after its START."""
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    started: set[str] = set()
    for event in events:
        call = event.get("toolCallId")
        if event["type"] == "TOOL_CALL_START":
            started.add(call)  # type: ignore[arg-type]
        elif event["type"] in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert call in started, event


def results_seen(model: ScriptedTransport, request: int) -> dict[str, ToolResultBlock]:
    return {
        b.tool_use_id: b
        for m in model.requests[request].messages
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "chats.db") as opened:
        yield opened


async def test_a_front_end_call_is_left_to_the_front_end_and_its_result_goes_on(
    store: SQLiteStore,
) -> None:
    model = ScriptedTransport(
        [
            Reply(
                "Let me check.",
                tool_calls=[
                    Call("confirm", {"question": "Go?"}, id="fe1"),
                    Call("add", {"a": 2, "b": 3}, id="own1"),
                ],
            ),
            Reply("You said yes, and 2 + 3 = 5."),
        ]
    )
    agent = Agent("s", model, tools=[add])
    async with serving(app(agent, store)) as base, client(base) as http:
        user = {"id": "u1", "role": "user", "content": "go on"}
        first = await run(http, {"threadId": "t1", "messages": [user], "tools": [CONFIRM]})
        order_is_sound(first)
        assert model.requests[0].tool_names == ["add", "confirm"]
        offered = next(t for t in model.requests[0].tools if t.name == "confirm")
        assert offered.description == CONFIRM["description"]
        assert offered.schema["properties"] == CONFIRM["parameters"]["properties"]
        start = next(
            e for e in first if e["type"] == "TOOL_CALL_START" and e["toolCallId"] == "fe1"
        )
        assert start["toolCallName"] == "confirm"
        assert {"type": "TOOL_CALL_END", "toolCallId": "fe1"} in first
        results = {e["toolCallId"]: e for e in first if e["type"] == "TOOL_CALL_RESULT"}
        assert set(results) == {"own1"} and results["own1"]["content"] == "5"  # its own ran
        end = first[-1]
        assert end["outcome"] == {"type": "success"}  # no interrupt: the client runs it
        assert end["result"]["frontendCalls"] == ["fe1"]
        assert "CUSTOM" not in kinds(first)

        shown = (await http.get("/api/sessions/t1")).json()
        assert [p["id"] for p in shown["pending"]] == ["fe1"]  # the call waits, stored

        history = [
            *shown["messages"],
            {"id": "r1", "role": "tool", "toolCallId": "fe1", "content": "yes"},
        ]
        second = await run(http, {"threadId": "t1", "messages": history, "tools": [CONFIRM]})
        order_is_sound(second)
        seen = results_seen(model, 1)
        assert seen["fe1"].text == "yes" and not seen["fe1"].is_error  # the model sees it
        assert seen["own1"].text == "5"
        assert not any(e.get("toolCallId") == "fe1" for e in second)  # the client has them
        assert "You said yes" in "".join(
            e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"
        )
        after = (await http.get("/api/sessions/t1")).json()
        assert after["pending"] == []
        tool_messages = {m["toolCallId"]: m for m in after["messages"] if m["role"] == "tool"}
        assert tool_messages["fe1"]["content"] == "yes"


async def test_the_result_is_taken_by_a_restarted_server_without_the_tools_again(
    store: SQLiteStore,
) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("confirm", {"question": "?"}, id="fe")])])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        user = {"id": "u1", "role": "user", "content": "ask me"}
        await run(http, {"threadId": "t2", "messages": [user], "tools": [CONFIRM]})
    later = ScriptedTransport([Reply("Thanks.")])
    async with serving(app(Agent("s", later), store)) as base, client(base) as http:
        only_result = [{"id": "r", "role": "tool", "toolCallId": "fe", "content": "no"}]
        events = await run(http, {"threadId": "t2", "messages": only_result})
        assert events[-1]["outcome"] == {"type": "success"}
        assert results_seen(later, 0)["fe"].text == "no"


async def test_a_new_message_ends_an_unanswered_front_end_call_with_an_error(
    store: SQLiteStore,
) -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("confirm", {"question": "?"}, id="fe")]), Reply("Fine.")]
    )
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        ask1 = {"id": "u1", "role": "user", "content": "ask me"}
        await run(http, {"threadId": "t3", "messages": [ask1], "tools": [CONFIRM]})
        ask2 = {"id": "u2", "role": "user", "content": "never mind"}
        events = await run(http, {"threadId": "t3", "messages": [ask2], "tools": [CONFIRM]})
        order_is_sound(events)
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["toolCallId"] == "fe" and result["metadata"]["isError"] is True
        assert "front end did not answer" in result["content"]
        sent = model.requests[1].messages
        assert results_seen(model, 1)["fe"].is_error
        assert sent[-1].role == "user" and sent[-1].content[-1].text == "never mind"  # type: ignore[union-attr]


async def test_a_front_end_tool_without_a_description_is_offered_by_its_name(
    store: SQLiteStore,
) -> None:
    """CopilotKit's actions may leave the description out: the tool is offered all the same."""
    model = ScriptedTransport([Reply("Fine.")])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        tools = [{"name": "pick_color", "parameters": {"type": "object", "properties": {}}}]
        said = {"id": "u1", "role": "user", "content": "hi"}
        events = await run(http, {"threadId": "nd", "messages": [said], "tools": tools})
    assert events[-1]["type"] == "RUN_FINISHED"
    assert model.requests[0].tool_names == ["pick_color"]


@pytest.mark.parametrize(
    ("tools", "status", "says"),
    [
        ([{**CONFIRM, "name": "add"}], 400, "add"),
        ([{"name": "x", "description": 5}], 400, "description"),
        ([{**CONFIRM, "parameters": {"type": "string"}}], 400, "type object"),
        ([CONFIRM, CONFIRM], 400, "unique"),
        ([{**CONFIRM, "name": "bad name"}], 400, "letters"),
        ([{**CONFIRM, "extra": 1}], 400, "extra"),
        ([{**CONFIRM, "description": "d" * 5000}], 413, "description"),
        ("confirm", 400, "list"),
    ],
)
async def test_bad_front_end_tools_are_refused_and_nothing_is_stored(
    store: SQLiteStore, tools: Any, status: int, says: str
) -> None:
    model = ScriptedTransport([])
    async with serving(app(Agent("s", model, tools=[add]), store)) as base, client(base) as http:
        body = {"threadId": "t4", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
        answer = await http.post("/agui", json=body)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["error"]
    assert await store.sessions() == [] and model.requests == []


async def test_a_result_for_a_call_never_made_is_refused(store: SQLiteStore) -> None:
    model = ScriptedTransport([Reply("Hello.")])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        await run(http, {"threadId": "t5", "messages": [{"role": "user", "content": "hi"}]})
        stray = [{"id": "r", "role": "tool", "toolCallId": "nope", "content": "x"}]
        answer = await http.post("/agui", json={"threadId": "t5", "messages": stray})
        assert answer.status_code == 400 and "'nope'" in answer.json()["error"]
        assert (await http.get("/api/sessions/t5")).json()["total"] == 2


async def test_a_hostile_client_cannot_hold_the_server(store: SQLiteStore) -> None:
    """A huge tools list is a 413 (the body cap); the server answers the next request."""
    model = ScriptedTransport([Reply("ok")])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        many = [{**CONFIRM, "name": f"t{i}"} for i in range(5000)]
        body = {"messages": [{"role": "user", "content": "hi"}], "tools": many}
        answer = await http.post("/agui", json=body)
        assert answer.status_code == 413
        events = await run(http, {"messages": [{"role": "user", "content": "hi"}]})
        assert events[-1]["type"] == "RUN_FINISHED"


async def test_a_reply_with_a_held_call_and_a_front_end_call_is_answered_in_one_request(
    store: SQLiteStore,
) -> None:
    """The interrupt names only the call held for approval; one request approves it and gives
    the front end's result, and the run goes on with both."""
    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("confirm", {"question": "?"}, id="fe"),
                    Call("add", {"a": 1, "b": 1}, id="held"),
                ]
            ),
            Reply("Both done."),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with serving(app(agent, store)) as base, client(base) as http:
        user = {"id": "u1", "role": "user", "content": "do both"}
        first = await run(http, {"threadId": "mix", "messages": [user], "tools": [CONFIRM]})
        order_is_sound(first)
        end = first[-1]
        assert end["outcome"]["type"] == "interrupt"
        assert [i["id"] for i in end["outcome"]["interrupts"]] == ["held"]
        paused = next(e for e in first if e["type"] == "CUSTOM")
        assert [c["id"] for c in paused["value"]["calls"]] == ["held"]
        stored = (await http.get("/api/sessions/mix")).json()["messages"]
        body = {
            "threadId": "mix",
            "messages": [*stored, {"id": "r", "role": "tool", "toolCallId": "fe", "content": "ok"}],
            "tools": [CONFIRM],
            "resume": [
                {"interruptId": "held", "status": "resolved", "payload": {"approved": True}}
            ],
        }
        second = await run(http, body)
        assert second[-1]["outcome"] == {"type": "success"}
        seen = results_seen(model, 1)
        assert seen["fe"].text == "ok" and seen["held"].text == "2"
        results = [e["toolCallId"] for e in second if e["type"] == "TOOL_CALL_RESULT"]
        assert results == ["held"]  # the front end's own result is not streamed back to it
