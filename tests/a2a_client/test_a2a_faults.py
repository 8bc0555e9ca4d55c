"""A remote agent that is unreachable, hostile or broken is contained: its card refused with an
error saying what is wrong, its answers (a 500, garbage, an endless stream, one endless event, a
server that hangs) an error result the model reads, the run going on and no token in any of
it; the server stays free for the next call."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from a2a_remotes import Remotes, serving

from tether import Agent, ToolResult
from tether.a2a import A2AAgent
from tether.errors import TransportError
from tether.testing import Call, Reply, ScriptedTransport

TOKEN = "s3cret-a2a-token-value"


@pytest.fixture(scope="module")
def remotes() -> Iterator[Remotes]:
    yield from serving()


async def one_call(remote: A2AAgent) -> tuple[ToolResult, str]:
    """A run whose model calls the remote agent's tool once: its result, and the run's answer."""
    tool = remote.as_tool("remote", "A remote agent.")
    model = ScriptedTransport([Reply(tool_calls=[Call("remote", {"input": "hi"})]), Reply("ok")])
    stream = Agent("s", model, tools=[tool]).run_stream("go")
    seen: list[Any] = [e async for e in stream]
    [result] = [e for e in seen if isinstance(e, ToolResult)]
    return result, await stream.get_final_text()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("kind", "seconds", "expected"),
    [
        ("500", 30, "answered HTTP 500"),
        ("garbage", 30, "sent an answer that is not A2A 1.0"),
        ("garbage-events", 30, "sent an answer that is not A2A 1.0"),
        ("endless", 1, "did not finish within 1 seconds"),
        ("huge", 30, "bytes in one event of its stream; the rest was not read"),
        ("hangs", 1, "did not finish within 1 seconds"),
    ],
)
async def test_a_hostile_answer_is_an_error_result_and_the_run_goes_on(
    remotes: Remotes, kind: str, seconds: float, expected: str
) -> None:
    remote = A2AAgent(remotes.url(kind), token=TOKEN, timeout=seconds)
    result, answer = await one_call(remote)
    assert result.is_error
    assert expected in str(result.content)
    assert "the remote agent 'hostile'" in str(result.content)
    assert TOKEN not in str(result.content)
    assert answer == "ok"
    assert kind in remotes.seen.hostile  # it was reached, and answered so
    echo = A2AAgent(remotes.url("echo"))
    assert (await echo.run("still there?")).startswith("echo: still there?")


async def test_an_unreachable_agent_is_an_error_result(remotes: Remotes) -> None:
    remote = A2AAgent(f"http://127.0.0.1:{closed_port()}/agent", token=TOKEN)
    result, answer = await one_call(remote)
    assert result.is_error
    assert "the agent card at http://127.0.0.1:" in str(result.content)
    assert "could not be reached" in str(result.content)
    assert TOKEN not in str(result.content)
    assert answer == "ok"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("no-name", "is not an A2A 1.0 card: it lacks name"),
        ("old-only", "offers no interface tether can call (JSONRPC 0.3)"),
        ("grpc-only", "offers no interface tether can call (GRPC 1.0)"),
        ("not-json", "is not JSON"),
        ("list", "is not a JSON object"),
    ],
)
async def test_a_card_that_is_not_a_1_0_card_is_refused(
    remotes: Remotes, kind: str, expected: str
) -> None:
    remote = A2AAgent(remotes.url(f"bad-{kind}"))
    with pytest.raises(TransportError) as refused:
        await remote.card()
    assert expected in str(refused.value)
    assert f"/bad-{kind}/.well-known/agent-card.json" in str(refused.value)
    result, _ = await one_call(remote)  # as a tool: the same, as an error result
    assert result.is_error and expected in str(result.content)


async def test_a_missing_card_is_an_error_naming_the_status(remotes: Remotes) -> None:
    with pytest.raises(TransportError, match="answered HTTP 404"):
        await A2AAgent(remotes.url("nowhere")).card()


async def test_a_card_that_failed_is_fetched_again_on_next_use(remotes: Remotes) -> None:
    remote = A2AAgent(remotes.url("bad-no-name"))
    path = "/bad-no-name/.well-known/agent-card.json"
    before = remotes.seen.paths.count(path)
    for _ in range(2):
        with pytest.raises(TransportError):
            await remote.card()
    assert remotes.seen.paths.count(path) - before == 2


async def test_timestamps_without_a_time_zone_are_read_as_utc(remotes: Remotes) -> None:
    """fasta2a (pydantic's A2A server) writes them so; the SDK alone refuses the answer."""
    remote = A2AAgent(remotes.url("naive-times"))
    result, _ = await one_call(remote)
    assert (result.is_error, result.content) == (False, "naive but fine")
