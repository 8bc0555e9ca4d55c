"""tether on both sides of A2A: an agent whose tool is ``A2AAgent`` calls a tether agent served by
``a2a_app`` over real HTTP. The remote answer comes back as the tool's result with its progress;
a remote call held for approval pauses the caller's run as a question, and the answer given on
resume approves (or denies) it on the remote server, in the same task; a token is required and
sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from a2a_served import Served, load_script, served_in_thread

from tether import Agent, MemoryContextStore
from tether.a2a import A2AAgent
from tether.errors import RunPaused
from tether.events import ToolProgress, ToolResult
from tether.serve import a2a_app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

TOKEN = "tether-to-tether-token-1234"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    namespace = load_script()
    store = SQLiteStore(tmp_path_factory.mktemp("t2t") / "tasks.db")
    with served_in_thread(a2a_app(namespace["agent"], store, TOKEN), namespace, store) as served:
        yield served


def calling(remote: A2AAgent, text: str, name: str | None = None) -> Agent:
    """A caller whose model calls ``remote``'s tool once with ``text``, then ends."""
    tool = remote.as_tool(name)
    model = ScriptedTransport([Reply(tool_calls=[Call(tool.name, {"input": text})]), Reply("ok")])
    return Agent("s", model, tools=[tool])


async def remote_agent(server: Served) -> A2AAgent:
    remote = A2AAgent(f"{server.base}/a2a", token=TOKEN)
    card = await remote.card()
    assert card.name == "helper"
    return remote


async def test_a_remote_tether_agent_answers_as_a_tool(server: Served) -> None:
    caller = calling(await remote_agent(server), "add 2 and 3")
    seen = [e async for e in caller.run_stream("go")]
    [result] = [e for e in seen if isinstance(e, ToolResult)]
    assert not result.is_error and "done: 5" in result.content
    assert any(isinstance(e, ToolProgress) for e in seen)
    assert ("add", 2, 3) in server.namespace["ran"]


@pytest.mark.parametrize(("answer", "runs"), [("approve", True), ("deny: not today", False)])
async def test_a_remote_approval_is_asked_here_and_decided_there(
    server: Served, answer: str, runs: bool
) -> None:
    path = f"{answer.partition(':')[0]}.txt"
    caller = calling(await remote_agent(server), f"delete {path}")
    context = MemoryContextStore()
    with pytest.raises(RunPaused) as paused:
        await caller.run("go", context)
    [held] = paused.value.pending
    [question] = held.asks
    assert "delete_file" in question.message and path in question.message
    assert ("delete_file", path) not in server.namespace["ran"]  # nothing ran remotely yet
    field = next(iter(question.fields))
    assert await caller.resume(context, answers={held.id: {question.key: {field: answer}}}) == "ok"
    assert (("delete_file", path) in server.namespace["ran"]) is runs
    history = await context.get_history()
    [told] = [b for m in history for b in m.tool_results if b.tool_use_id == held.id]
    assert (f"deleted {path}" in told.text) is runs
    if not runs:
        assert "not today" in told.text


async def test_without_the_token_the_remote_agent_is_an_error_result(server: Served) -> None:
    remote = A2AAgent(f"{server.base}/a2a")
    await remote.card()  # the card is public: the calls are not
    caller = calling(remote, "add 1 and 1")
    seen = [e async for e in caller.run_stream("go")]
    [result] = [e for e in seen if isinstance(e, ToolResult)]
    assert result.is_error and "401" in result.content
    assert TOKEN not in result.content
