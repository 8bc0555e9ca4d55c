"""Cassettes on each wire format tether speaks (OpenAI chat, OpenAI responses, Anthropic): a real
agent run over real HTTP recorded, the server stopped, and the run replayed from the file alone,
event for event; streamed bodies kept chunk by chunk, with their timing when asked."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from misbehaving_server import MisbehavingServer, sse_stream

from tether import Agent, StreamEvent
from tether.errors import CassetteError
from tether.testing import Cassette
from tether.transports.anthropic import AnthropicTransport
from tether.transports.http import HttpTransport
from tether.transports.openai_chat import OpenAIChatTransport
from tether.transports.openai_responses import OpenAIResponsesTransport

RECORDINGS = Path(__file__).parents[1] / "transports" / "recordings"
KEY = "sk-cassette-test-key-0123456789"

# each format: its transport, a recorded stream calling two tools, then one answering in text
FORMATS: dict[str, tuple[Callable[..., HttpTransport], str, str]] = {
    "chat": (OpenAIChatTransport, "openai_chat/parallel_tools.sse", "openai_chat/text_usage.sse"),
    "responses": (
        OpenAIResponsesTransport,
        "openai_responses/parallel_tool_calls.sse",
        "openai_responses/text.sse",
    ),
    "anthropic": (AnthropicTransport, "anthropic/parallel_tools.sse", "anthropic/text_ping.sse"),
}


def events_of(name: str) -> list[str]:
    """A recorded stream as the events a server writes one at a time."""
    text = (RECORDINGS / name).read_text()
    return [part + "\n\n" for part in text.split("\n\n") if part.strip()]


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def get_time(timezone: str = "UTC", city: str = "") -> str:
    """The time in a timezone or city."""
    return f"12:00 in {timezone or city}"


async def run(transport: HttpTransport, city: str = "Paris") -> list[StreamEvent]:
    agent = Agent("You help.", transport, tools=[get_weather, get_time])
    async with transport:
        return [event async for event in agent.run_stream(f"Weather and time in {city}?")]


def shown(events: list[StreamEvent]) -> list[str]:
    return [repr(e) for e in events if type(e).__name__ != "SessionEndEvent"]


@pytest.mark.parametrize("wire", sorted(FORMATS))
async def test_a_run_recorded_on_each_wire_format_replays_with_the_server_gone(
    wire: str, tmp_path: Path
) -> None:
    make, calls, answer = FORMATS[wire]
    path = tmp_path / f"{wire}.json"
    server = MisbehavingServer(sse_stream(events_of(calls)), sse_stream(events_of(answer)))
    async with server:
        url = server.url + ("" if wire == "anthropic" else "/v1")
        async with Cassette(path) as cassette:
            live = await run(make("m", base_url=url, api_key=KEY))
        assert cassette.recorded == 2 and len(server.requests) == 2
    # the port is closed now: only the cassette can answer
    async with Cassette(path, mode="none") as cassette:
        replayed = await run(make("m", base_url=url, api_key=KEY))
    assert cassette.played == 2 and cassette.recorded == 0
    assert shown(replayed) == shown(live)
    document = json.loads(path.read_text())
    first = document["exchanges"][0]
    assert first["request"]["json"]["model"] == "m"
    chunks = [c["text"] for c in first["response"]["chunks"]]
    assert "".join(chunks) == "".join(events_of(calls))
    assert KEY not in path.read_text()
    with pytest.raises(CassetteError, match=r'(?s)-.*in Paris\?".*\+.*in Rome\?"'):
        async with Cassette(path, mode="none"):  # another question: not what was recorded
            await run(make("m", base_url=url, api_key=KEY), city="Rome")


async def test_a_stream_is_kept_chunk_by_chunk_and_replayed_so(tmp_path: Path) -> None:
    pieces = ["data: one\n\n", "data: two\n", "\n", "data: three\n\n"]
    path = tmp_path / "chunks.json"
    server = MisbehavingServer(sse_stream(pieces, delay=0.05))
    async with server, Cassette(path), httpx.AsyncClient() as client:
        live = await _chunks(client, server.url)
    assert live == pieces  # the server's writes, one each (0.05 s apart)
    recorded = json.loads(path.read_text())["exchanges"][0]["response"]["chunks"]
    assert [c["text"] for c in recorded] == pieces
    assert all(c["after"] >= 0.04 for c in recorded[1:])
    async with Cassette(path, mode="none"), httpx.AsyncClient() as client:
        assert await _chunks(client, server.url) == pieces
    started = time.monotonic()
    async with Cassette(path, mode="none", timing="kept"), httpx.AsyncClient() as client:
        assert await _chunks(client, server.url) == pieces
    assert time.monotonic() - started >= 0.12  # the three recorded pauses, kept


async def _chunks(client: httpx.AsyncClient, url: str) -> list[str]:
    async with client.stream("POST", url + "/v1/chat/completions", json={"a": 1}) as response:
        return [chunk.decode() async for chunk in response.aiter_raw()]


async def test_a_dropped_stream_replays_as_dropped(tmp_path: Path) -> None:
    """A stream the server cut is replayed cut, with the same kind of error."""
    path = tmp_path / "dropped.json"
    server = MisbehavingServer(sse_stream(["data: one\n\n"], drop=True))
    async with server, Cassette(path), httpx.AsyncClient() as client:
        with pytest.raises(httpx.RemoteProtocolError) as live:
            await _chunks(client, server.url)
    async with Cassette(path, mode="none"), httpx.AsyncClient() as client:
        with pytest.raises(httpx.RemoteProtocolError) as replayed:
            await _chunks(client, server.url)
    assert str(replayed.value) == str(live.value)


async def test_a_refused_connection_replays_as_refused(tmp_path: Path) -> None:
    async with MisbehavingServer() as server:
        url = server.url
    path = tmp_path / "refused.json"
    async with Cassette(path), httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(url)
    async with Cassette(path, mode="none"), httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(url)
    assert "failure" in json.loads(path.read_text())["exchanges"][0]


async def test_a_secret_split_across_streamed_chunks_is_redacted(tmp_path: Path) -> None:
    """A secret the server echoes across two writes is blanked all the same: the blank takes the
    place of its first piece, the rest of it is dropped from the next, and the chunks stay as
    many as the server wrote."""
    secret = "s3cr3t-value-0123456789"
    pieces = ["data: one s3cr3t-va", "lue-0123456789 two\n\n", "data: " + secret[:4], "x\n\n"]
    path = tmp_path / "split.json"
    server = MisbehavingServer(sse_stream(pieces, delay=0.01))
    async with server, Cassette(path, secrets=[secret]), httpx.AsyncClient() as client:
        assert await _chunks(client, server.url) == pieces
    written = path.read_text()
    assert "s3cr3t-va" not in written and "lue-0123456789" not in written
    recorded = json.loads(written)["exchanges"][0]["response"]["chunks"]
    assert [c["text"] for c in recorded] == [
        "data: one <redacted>",
        " two\n\n",
        "data: s3cr",  # a piece that is not the secret stays
        "x\n\n",
    ]
    async with Cassette(path, mode="none", secrets=[secret]), httpx.AsyncClient() as client:
        replayed = await _chunks(client, server.url)
    assert "".join(replayed) == "data: one <redacted> two\n\ndata: s3crx\n\n"
