"""A cassette records the real local model (llama.cpp's server) once, through a forwarding port
that is then closed, and replays the same run, tool call and answer, from the file alone."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tether import Agent, StreamEvent, TextDelta, ToolResult
from tether.local import LocalModel
from tether.testing import Cassette

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 7, "max_tokens": 120}


class Forwarder:
    """A port on 127.0.0.1 that passes every connection on to ``target`` until it is closed."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._pass, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        await self._server.wait_closed()

    async def _pass(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        self._writers |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


async def _run(model: LocalModel, url: str) -> list[StreamEvent]:
    transport = model.chat_transport(base_url=url + "/v1", **OPTIONS)
    agent = Agent("Use the add tool for sums, then answer briefly.", transport, tools=[add])
    async with transport:
        return [e async for e in agent.run_stream("What is 17 + 25? Use the tool.")]


def _seen(events: list[StreamEvent]) -> tuple[str, list[str]]:
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    return text, [str(e.content) for e in events if isinstance(e, ToolResult)]


async def test_a_local_model_run_replays_with_the_model_unreachable(
    local_model: LocalModel, tmp_path: Path
) -> None:
    path = tmp_path / "local.json"
    forwarder = Forwarder(local_model.base_url)
    async with forwarder as url, Cassette(path) as cassette:
        live = await _run(local_model, url)
    assert forwarder.connections >= 1 and cassette.recorded >= 1
    text, results = _seen(live)
    assert text  # the model answered
    recorded = path.read_text()
    if local_model.api_key:
        assert local_model.api_key not in recorded
    first = json.loads(recorded)["exchanges"][0]["response"]
    assert first["headers"]["content-type"].startswith("text/event-stream")
    assert len(first["chunks"]) > 3  # streamed, kept chunk by chunk
    # the forwarder's port is closed: a request that reached the network would fail
    async with Cassette(path, mode="none") as replay:
        again = await _run(local_model, url)
    assert replay.played == cassette.recorded
    assert _seen(again) == (text, results)
