"""Another framework's A2A server: pydantic's ``fasta2a`` (the server pydantic-ai agents are
served with, ``agent.to_a2a()``), on uvicorn at 127.0.0.1, called by tether's ``A2AAgent``: its
card is read, its streamed answer is the result, follow-up calls keep its context."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from parts import absent
from served import serving
from tether import Agent, ToolResult
from tether.a2a import A2AAgent
from tether.testing import Call, Reply, ScriptedTransport


@asynccontextmanager
async def fasta2a_agent() -> AsyncIterator[tuple[str, list[str]]]:
    """A fasta2a agent that echoes, streaming its answer; its URL and the contexts it saw."""
    if importlib.util.find_spec("fasta2a") is None:
        absent("fasta2a", "pip install 'fasta2a>=2.1'")
    from fasta2a import FastA2A, Worker
    from fasta2a.broker import InMemoryBroker
    from fasta2a.storage import InMemoryStorage

    contexts: list[str] = []

    class Echo(Worker[Any]):
        async def run_task(self, params: Any) -> None:
            task = await self.storage.load_task(params["id"])
            assert task is not None
            text = "".join(p.get("text", "") for p in task["history"][-1]["parts"])
            contexts.append(params["context_id"])
            await self.publish_status(params["id"], params["context_id"], "working")
            answer = {"artifact_id": "a", "parts": [{"kind": "text", "text": f"fasta2a: {text}"}]}
            await self.publish_artifact(params["id"], params["context_id"], answer)
            await self.storage.update_task(params["id"], "completed", [answer])

        async def cancel_task(self, params: Any) -> None:
            await self.storage.update_task(params["id"], "canceled")

        def build_message_history(self, history: list[Any]) -> list[Any]:
            return history

        def build_artifacts(self, result: Any) -> list[Any]:
            return []

    storage: Any = InMemoryStorage()
    broker = InMemoryBroker()
    worker = Echo(broker=broker, storage=storage)

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with app.task_manager, worker.run():
            yield

    skill: Any = {"id": "echo", "name": "echo", "description": "Echoes.", "tags": ["echo"]}
    app = FastA2A(
        storage=storage,
        broker=broker,
        name="fastecho",
        description="Echoes.",
        skills=[skill],
        lifespan=lifespan,
    )
    async with serving(app) as url:
        app.url = url + "/"  # where its card sends calls (read when the card is first asked for)
        yield url, contexts


async def test_a_fasta2a_agent_answers_as_a_tool_and_keeps_its_context() -> None:
    async with fasta2a_agent() as (url, contexts):
        remote = A2AAgent(url)
        card = await remote.card()
        assert card.name == "fastecho"
        tool = remote.as_tool()
        calls = [Reply(tool_calls=[Call("fastecho", {"input": said})]) for said in ("one", "two")]
        agent = Agent("s", ScriptedTransport([*calls, Reply("done")]), tools=[tool])
        seen = [e async for e in agent.run_stream("go")]
        results = [(e.is_error, e.content) for e in seen if isinstance(e, ToolResult)]
        assert results == [(False, "fasta2a: one"), (False, "fasta2a: two")]
        assert len(contexts) == 2 and contexts[0] == contexts[1]
