"""``A2AAgent``: a remote agent served by the real ``a2a-sdk`` server on 127.0.0.1, called by
tether's agents through the SDK's real client: as a tool (answers, progress, one remote
conversation per run, cancel reaching the server, input-required pausing the run), as a handoff
target and run alone; its card checked; its token kept to the card's host."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from a2a_remotes import Remotes, serving

from tether import Agent, ContextStore, MemoryContextStore, ToolProgress, ToolResult
from tether.a2a import A2AAgent
from tether.errors import ModelStopError, RunPaused
from tether.testing import Call, Reply, ScriptedTransport

TOKEN = "s3cret-a2a-token-value"


@pytest.fixture(scope="module")
def remotes() -> Iterator[Remotes]:
    yield from serving()


def caller(tool_name: str, *inputs: str, tools: list[Any]) -> Agent:
    """An agent whose model calls ``tool_name`` once per input (one call per reply), then ends."""
    replies = [Reply(tool_calls=[Call(tool_name, {"input": text})]) for text in inputs]
    return Agent("s", ScriptedTransport([*replies, Reply("done")]), tools=tools)


async def events(agent: Agent, context: ContextStore | None = None) -> list[Any]:
    return [e async for e in agent.run_stream("go", context)]


def results(seen: list[Any]) -> list[ToolResult]:
    return [e for e in seen if isinstance(e, ToolResult)]


async def test_a_tool_answers_with_the_remote_text_and_streams_progress(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("echo"))
    await remote.card()
    tool = remote.as_tool()
    seen = await events(caller(tool.name, "hello", tools=[tool]))
    [result] = results(seen)
    assert (result.is_error, result.content) == (False, "echo: hello (turn 1)")
    progress = [e.message for e in seen if isinstance(e, ToolProgress)]
    assert progress == ["working: reading the request", "echo: hello (turn 1)"]
    assert seen.index(result) > max(i for i, e in enumerate(seen) if isinstance(e, ToolProgress))


async def test_the_card_names_the_tool_and_is_fetched_once(remotes: Remotes) -> None:
    card_path = "/echo/.well-known/agent-card.json"
    before = remotes.seen.paths.count(card_path)
    remote = A2AAgent(remotes.url("echo"))
    assert remote.name.startswith("127_0_0_1")  # before the card: from the address
    await remote.card()
    tool = remote.as_tool()
    assert tool.name == "echo" == remote.name
    assert tool.description.splitlines() == [
        "The echo agent, for tests.",
        "- echo skill: What the echo agent does best.",
    ]
    await events(caller(tool.name, "a", "b", tools=[tool]))
    assert remotes.seen.paths.count(card_path) - before == 1


async def test_follow_up_calls_in_one_run_keep_the_remote_context(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("echo"))
    await remote.card()
    tool = remote.as_tool()
    first = results(await events(caller(tool.name, "one", "two", tools=[tool])))
    assert [r.content for r in first] == ["echo: one (turn 1)", "echo: two (turn 2)"]
    assert remotes.seen.contexts[-1] == remotes.seen.contexts[-2]
    again = results(await events(caller(tool.name, "three", tools=[tool])))  # another run
    assert [r.content for r in again] == ["echo: three (turn 1)"]
    assert remotes.seen.contexts[-1] != remotes.seen.contexts[-2]


async def test_cancelling_the_caller_cancels_the_remote_task(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("slow"))
    await remote.card()
    tool = remote.as_tool()
    working = asyncio.Event()

    async def run() -> None:
        async for event in caller(tool.name, "think", tools=[tool]).run_stream("go"):
            if isinstance(event, ToolProgress) and "thinking hard" in (event.message or ""):
                working.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(working.wait(), 30)
    started = remotes.seen.started[-1]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert started in remotes.seen.cancelled  # CancelTask was answered before the cancel ended


async def test_a_remote_past_its_timeout_is_cancelled_and_an_error_result(
    remotes: Remotes,
) -> None:
    remote = A2AAgent(remotes.url("slow"), timeout=1)
    await remote.card()
    tool = remote.as_tool()
    [result] = results(await events(caller(tool.name, "think", tools=[tool])))
    assert result.is_error
    assert "did not finish within 1 seconds; its task was cancelled" in str(result.content)
    assert remotes.seen.started[-1] in remotes.seen.cancelled


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("fail", "the remote agent 'ends' failed the task: the database is down"),
        ("reject", "the remote agent 'ends' rejected the task: I only talk about weather"),
        ("auth", "needs the user to sign in before it can go on: sign in at the portal"),
    ],
)
async def test_a_task_that_does_not_complete_is_an_error_result(
    remotes: Remotes, said: str, expected: str
) -> None:
    remote = A2AAgent(remotes.url("ends"))
    await remote.card()
    tool = remote.as_tool()
    [result] = results(await events(caller(tool.name, said, tools=[tool])))
    assert result.is_error
    assert expected in str(result.content)


async def test_a_direct_message_answer_is_the_result(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("ends"))
    await remote.card()
    tool = remote.as_tool()
    [result] = results(await events(caller(tool.name, "plain", tools=[tool])))
    assert (result.is_error, result.content) == (False, "a plain message")


async def test_input_required_pauses_the_run_and_the_resume_answers_the_task(
    remotes: Remotes,
) -> None:
    remote = A2AAgent(remotes.url("ends"))
    await remote.card()
    tool = remote.as_tool()
    agent = caller(tool.name, "ask", tools=[tool])
    context = MemoryContextStore()
    with pytest.raises(RunPaused) as paused:
        await agent.run("go", context)
    [pending] = paused.value.pending
    [question] = pending.asks
    assert question.message == "Which city?"
    assert question.key == "question"
    assert list(question.fields) == ["answer"]
    answers = {pending.id: {"question": {"answer": "Paris"}}}
    answer = await agent.resume(context, answers=answers)
    assert answer == "done"
    history = await context.get_history()
    told = [b for m in history for b in m.content if type(b).__name__ == "ToolResultBlock"]
    assert told[-1].content == "the city is Paris"


async def test_an_agent_hands_off_to_a_remote_agent_that_keeps_its_conversation(
    remotes: Remotes,
) -> None:
    remote = A2AAgent(remotes.url("echo"))
    await remote.card()
    model = ScriptedTransport([Reply(tool_calls=[Call("transfer_to_echo", {})])])
    front = Agent("Route the user.", model, handoffs=[remote])
    context = MemoryContextStore()
    assert await front.run("hi there", context) == "echo: hi there (turn 1)"
    first = remotes.seen.contexts[-1]
    assert await remote.run("and again", context) == "echo: and again (turn 2)"
    assert remotes.seen.contexts[-1] == first  # the history kept the remote context
    assert remotes.seen.texts[-1] == "and again"  # only what is new since its last reply


async def test_an_agent_without_streaming_is_asked_and_waited_for(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("unary"))
    assert await remote.run("quiet") == "echo: quiet (turn 1)"


async def test_the_token_goes_to_the_cards_host_only(
    remotes: Remotes, caplog: pytest.LogCaptureFixture
) -> None:
    remotes.seen.auth.clear()
    remote = A2AAgent(remotes.url("moved"), token=TOKEN)  # its card sends calls to localhost
    await remote.card()
    tool = remote.as_tool()
    [result] = results(await events(caller(tool.name, "hello", tools=[tool])))
    assert result.content == "echo: hello (turn 1)"
    assert remotes.seen.tokens_to("127.0.0.1") == [f"Bearer {TOKEN}"]  # the card
    assert [h for h, _ in remotes.seen.auth if h == "localhost"]  # the calls went there ...
    assert remotes.seen.tokens_to("localhost") == []  # ... without the token
    [warning] = [r.getMessage() for r in caplog.records if r.name == "tether.a2a"]
    assert "its token is not sent there" in warning and f"localhost:{remotes.port}" in warning
    assert TOKEN not in caplog.text


async def test_the_token_goes_with_every_request_to_the_agents_own_host(
    remotes: Remotes,
) -> None:
    remotes.seen.auth.clear()
    remote = A2AAgent(remotes.url("echo"), token=TOKEN)
    assert await remote.run("hi") == "echo: hi (turn 1)"
    assert len(remotes.seen.auth) == 2  # the card, then the message
    assert remotes.seen.tokens_to("127.0.0.1") == [f"Bearer {TOKEN}"] * 2


async def test_a_remote_agent_runs_alone(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("echo"))
    assert await remote.run("solo") == "echo: solo (turn 1)"
    assert remote.name == "echo"  # the card, fetched on first use, named it


def test_as_tool_in_sync_code_fetches_the_card(remotes: Remotes) -> None:
    tool = A2AAgent(remotes.url("echo")).as_tool()
    assert tool.name == "echo"


async def test_as_tool_in_async_code_asks_for_the_card_first(remotes: Remotes) -> None:
    with pytest.raises(RuntimeError, match=r"await agent.card\(\)` first"):
        A2AAgent(remotes.url("echo")).as_tool()
    named = A2AAgent(remotes.url("echo")).as_tool("helper", "Helps.")
    assert (named.name, named.description) == ("helper", "Helps.")


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/agent", "http://user:pw@127.0.0.1/agent", "not a url"],
)
def test_a_bad_address_is_refused_at_once(url: str) -> None:
    with pytest.raises(ValueError, match="A2AAgent"):
        A2AAgent(url)


async def test_a_copy_calls_the_same_agent_with_its_fields_changed(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("echo"))
    other = remote.copy(max_iterations=3)
    assert (other.max_iterations, other.remote) == (3, remote.remote)
    assert await other.run("copied") == "echo: copied (turn 1)"
    with pytest.raises(TypeError, match="no field"):
        remote.copy(colour="blue")


async def test_cancelling_a_run_of_the_remote_agent_cancels_its_task(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("slow"))
    before = len(remotes.seen.started)
    task = asyncio.create_task(remote.run("think"))
    for _ in range(3000):  # until the server began the task
        if len(remotes.seen.started) > before:
            break
        await asyncio.sleep(0.01)
    started = remotes.seen.started[-1]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert started in remotes.seen.cancelled


async def test_a_remote_agent_that_fails_ends_its_run_with_the_typed_error(
    remotes: Remotes,
) -> None:
    remote = A2AAgent(remotes.url("ends"))
    with pytest.raises(ModelStopError, match="failed the task: the database is down") as ended:
        await remote.run("fail")
    assert ended.value.stop_reason == "failed"
