"""A durable run's activities inside a cassette: the model activity's requests to a provider over
HTTP are recorded from a Temporal worker's run, and a second durable run replays them through the
same activities with the provider gone."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from tether import Agent
from tether.durable import DevServer, TemporalAgent
from tether.testing import Cassette
from tether.transports.openai_chat import OpenAIChatTransport

sys.path.insert(0, str(Path(__file__).parents[1] / "transports"))
from misbehaving_server import MisbehavingServer, sse_stream

pytestmark = pytest.mark.timeout(120)


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


CALL = [
    _chunk({"role": "assistant", "tool_calls": [
        {"index": 0, "id": "call_add", "type": "function",
         "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
    ]}),
    _chunk({}, "tool_calls"),
]  # fmt: skip
ANSWER = [_chunk({"role": "assistant", "content": "2 + 3 is 5."}), _chunk({}, "stop")]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_durable_runs_activities_record_and_replay_in_a_cassette(
    temporal: DevServer, tmp_path: Path
) -> None:
    client = await Client.connect(temporal.address)
    path = tmp_path / "durable.json"
    queue = f"q-cassette-{os.getpid()}"
    async with MisbehavingServer(sse_stream(CALL), sse_stream(ANSWER)) as model:
        transport = OpenAIChatTransport("m", base_url=model.url + "/v1", api_key="sk-durable-123")
        durable = TemporalAgent(Agent("You add.", transport, tools=[add]), name="cassette-adder")
        async with Cassette(path) as cassette, durable.worker(client, queue):
            live = await durable.run(client, "What is 2 + 3?", task_queue=queue)
        assert len(model.requests) == 2
    assert live == "2 + 3 is 5." and cassette.recorded == 2
    async with Cassette(path, mode="none") as replay, durable.worker(client, queue + "-again"):
        again = await durable.run(client, "What is 2 + 3?", task_queue=queue + "-again")
    assert again == live and replay.played == 2
    await transport.aclose()
