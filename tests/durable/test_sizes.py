"""Durable runs at real sizes on the dev server, whose limit on one payload is Temporal's default
(2 MB): a conversation, a tool result, a reply or a stored session past it is offloaded (to the
store, or the agent's ``blobs``) and the run gives the plain run's answer, each call made once;
with nowhere to offload, the run ends at once with ``PayloadTooLargeError``."""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tether import (
    Agent,
    Message,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
    tool,
)
from tether.context.records import compaction_record
from tether.durable import DevServer, DurableOptions, DurableRunError, TemporalAgent
from tether.errors import PayloadTooLargeError
from tether.events import IterationEnd, TextDelta, ToolInputDelta, ToolUseStart
from tether.stores import SQLiteStore
from tether.types import StopReason, ToolSpec, Usage

pytestmark = pytest.mark.timeout(240)

KB = 1024
FAST = DurableOptions(
    heartbeat_timeout=10.0, retry_initial=0.2, retry_max=1.0, model_attempts=5, tool_attempts=5
)
CALLS: Counter[str] = Counter()  # tool runs and model calls, by name, in this process


@pytest.fixture
async def client(temporal: DevServer) -> Client:
    return await Client.connect(temporal.address)


@pytest.fixture(autouse=True)
def _counted() -> None:
    CALLS.clear()


def text_of(name: str, size: int) -> str:
    """``size`` characters that say whose they are."""
    unit = f"<{name}>"
    return (unit * (size // len(unit) + 1))[:size]


@tool(idempotent=True)
def fetch(name: str, kb: int) -> str:
    """Fetch a document of ``kb`` KB (idempotent: a durable run may retry it)."""
    CALLS[f"fetch {name}"] += 1
    return text_of(name, kb * KB)


class SizedModel:
    """Follows the JSON plan of the first user message: its ``rounds`` of tool calls, then an
    answer of ``reply_kb`` KB if it asks for one, else every result it saw, joined."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        CALLS["model"] += 1
        first = next(m for m in messages if m.role == "user" and m.text.startswith("{"))
        ask = json.loads(first.text)
        results = [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
        done = sum(1 for m in messages if m.role == "user" and m.tool_results)
        usage = Usage(input_tokens=len(messages), output_tokens=1)
        if done < len(ask["rounds"]):
            for i, (name, args) in enumerate(ask["rounds"][done]):
                yield ToolUseStart(i, f"call_{done}_{i}", name)
                yield ToolInputDelta(i, f"call_{done}_{i}", json.dumps(args))
            yield IterationEnd(0, StopReason.TOOL_USE, usage)
            return
        if ask.get("reply_kb"):
            yield TextDelta(0, text_of("reply", ask["reply_kb"] * KB))
        else:
            yield TextDelta(
                0, f"seen {len(results)}: " + " | ".join(str(r.content) for r in results)
            )
        yield IterationEnd(0, StopReason.END_TURN, usage)


def ask(rounds: int = 0, kb: int = 60, reply_kb: int = 0) -> str:
    plan = [[["fetch", {"name": f"d{i}", "kb": kb}]] for i in range(rounds)]
    return json.dumps({"rounds": plan, "reply_kb": reply_kb})


def durable(name: str, request: pytest.FixtureRequest, **kwargs: Any) -> TemporalAgent:
    agent = Agent("You fetch.", SizedModel(), tools=[fetch], max_tool_result_chars=kwargs.pop(
        "max_tool_result_chars", None))  # fmt: skip
    unique = f"{name}-{abs(hash(request.node.name)) % 10**6}"
    return TemporalAgent(agent, name=unique, options=kwargs.pop("options", FAST), **kwargs)


async def plain_answer(agent: TemporalAgent, prompt: str) -> str:
    """The plain run's answer on the same agent (counted apart)."""
    answer = await agent.agent.run(prompt)
    CALLS.clear()
    return str(answer)


async def outcome(agent: TemporalAgent, client: Client, prompt: str, queue: str) -> Any:
    """The durable run's answer, or the error it ended with; never a hang."""
    return (await ended(agent, client, prompt, queue))[1]


async def ended(agent: TemporalAgent, client: Client, prompt: str, queue: str) -> tuple[str, Any]:
    """The durable run's id, and its answer or the error it ended with; never a hang."""
    async with agent.worker(client, queue):
        run = await agent.start(client, prompt, task_queue=queue)
        async with asyncio.timeout(150):
            try:
                return run.id, await run.answer()
            except DurableRunError as exc:
                return run.id, exc


def queue_of(request: pytest.FixtureRequest) -> str:
    return f"q-{request.node.name}-{os.getpid()}"


async def history_bytes(client: Client, run_id: str) -> int:
    """The size of the workflow's history now (its latest run)."""
    described = await client.get_workflow_handle(run_id).describe()
    return int(described.raw_description.workflow_execution_info.history_size_bytes)


async def load_results(client: Client, workflow_id: str) -> list[dict[str, Any]]:
    """The result of every load activity of the workflow's latest run, read back."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    scheduled: dict[int, str] = {}
    pages = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = name
        if event.HasField("activity_task_completed_event_attributes"):
            done = event.activity_task_completed_event_attributes
            if scheduled[done.scheduled_event_id].endswith(".load"):
                (page,) = await client.data_converter.decode(done.result.payloads)
                pages.append(page)
    return pages


# -- 1. a conversation past 2 MB, no store ---------------------------------------------------------


async def test_without_a_store_a_conversation_past_the_limit_ends_at_once_typed(
    client: Client, request: pytest.FixtureRequest
) -> None:
    """40 results of 60 KB (2.4 MB, far under ``max_history_bytes``) and nowhere to offload: every
    model call carries the conversation, so the run ends with ``PayloadTooLargeError`` as soon as
    one would pass the limit (it hung, retrying its workflow task for ever); no call twice."""
    agent = durable("nostore", request)
    got = await outcome(agent, client, ask(40), queue_of(request))
    assert isinstance(got, DurableRunError), got
    assert isinstance(got.error, PayloadTooLargeError) and "blobs" in str(got.error)
    tools = {k: n for k, n in CALLS.items() if k != "model"}
    assert len(tools) > 30 and set(tools.values()) == {1}  # each ran once, before the end


async def test_without_a_store_blobs_carry_a_conversation_past_the_limit(
    client: Client, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from tether.durable import FileBlobs

    agent = durable("blobbed", request, blobs=FileBlobs(tmp_path / "blobs"))
    expected = await plain_answer(agent, ask(40))
    got = await outcome(agent, client, ask(40), queue_of(request))
    assert got == expected and got.startswith("seen 40: ")
    assert CALLS["model"] == 41 and all(n == 1 for k, n in CALLS.items() if k != "model")
    assert list((tmp_path / "blobs").iterdir())  # the large payloads went there


# -- 2. a stored session past 2 MB, read back after continue-as-new -------------------------------


async def test_a_stored_run_reads_back_a_session_past_the_limit_after_continue_as_new(
    client: Client, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """SQLite store, 40 results of 60 KB, history limits that make the run continue as new
    again and again: each reload reads 2.4 MB of messages (one page of 500 hung)."""
    store = SQLiteStore(tmp_path / "s.db")
    small = DurableOptions(
        heartbeat_timeout=10.0, retry_initial=0.2, retry_max=1.0, max_history_events=60
    )
    agent = durable("reload", request, store=store, options=small)
    expected = await plain_answer(agent, ask(40))
    run_id, got = await ended(agent, client, ask(40), queue_of(request))
    assert got == expected
    assert all(n == 1 for k, n in CALLS.items() if k != "model")
    described = await client.get_workflow_handle(run_id).describe()
    info = described.raw_description.workflow_execution_info
    assert described.run_id != info.first_run_id  # it did continue as new
    await store.aclose()


async def test_a_reload_starts_at_the_last_compaction_record(
    client: Client, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A stored session of 3 MB, compacted: a run on it reads from the record's kept messages
    on (the model sees what the plain run sends it) and the history holds none of the rest."""
    store = SQLiteStore(tmp_path / "s.db")
    session = f"compacted-{os.getpid()}"
    context = await store.open(session)
    for i in range(30):
        await context.append(Message("user", (TextBlock(text_of(f"old{i}", 100 * KB)),)))
        await context.append(Message("assistant", (TextBlock(f"noted {i}"),)))
    await context.append(compaction_record("Thirty old documents were read.", 2))
    agent = durable("compacted", request, store=store)
    prompt = ask(1, kb=10)
    async with agent.worker(client, queue_of(request)):
        run = await agent.start(client, prompt, task_queue=queue_of(request), id=session)
        async with asyncio.timeout(150):
            got = await run.answer()
    assert got == f"seen 1: {text_of('d0', 10 * KB)}"
    pages = await load_results(agent.client(client), session)
    assert [(p["start"], len(p["messages"]), p["more"]) for p in pages] == [(58, 3, False)]
    assert await history_bytes(client, session) < 1024 * KB  # none of the other 2.9 MB
    history = await (await store.open(session)).get_history()
    assert len(history) == 61 + 4 and history[-1].text == got
    await store.aclose()


# -- 3. a tool result past 2 MB -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["store", "blobs"])
async def test_a_tool_result_past_the_limit_runs_once_and_the_model_sees_its_cut_copy(
    client: Client, request: pytest.FixtureRequest, tmp_path: Path, where: str
) -> None:
    """A 3 MB result of an idempotent tool: run once (it was run ``tool_attempts`` times and
    lost), the model sees the first ``max_tool_result_chars`` as in a plain run, and the store
    keeps the whole result."""
    from tether.durable import FileBlobs

    store = SQLiteStore(tmp_path / "s.db") if where == "store" else None
    offload: dict[str, Any] = (
        {"store": store} if store is not None else {"blobs": FileBlobs(tmp_path / "b")}
    )
    agent = durable(f"bigtool-{where}", request, max_tool_result_chars=2000, **offload)
    expected = await plain_answer(agent, ask(1, kb=3 * KB))
    queue = queue_of(request)
    async with agent.worker(client, queue):
        run = await agent.start(client, ask(1, kb=3 * KB), task_queue=queue)
        async with asyncio.timeout(150):
            got = await run.answer()
        transcript = await run.transcript()
    assert got == expected and len(got) < 3000
    assert CALLS["fetch d0"] == 1
    (result,) = [b for m in transcript for b in m.content if isinstance(b, ToolResultBlock)]
    assert result.content == text_of("d0", 3 * KB * KB)  # kept whole
    if store is not None:
        stored = await (await store.open(run.id)).get_history()
        assert stored == transcript
        await store.aclose()


async def test_a_tool_result_past_the_limit_with_nowhere_to_offload_ends_the_run_typed(
    client: Client, request: pytest.FixtureRequest
) -> None:
    agent = durable("bigtool-none", request, max_tool_result_chars=2000)
    got = await outcome(agent, client, ask(1, kb=3 * KB), queue_of(request))
    assert isinstance(got, DurableRunError), got
    assert isinstance(got.error, PayloadTooLargeError)
    assert CALLS["fetch d0"] == 1


# -- 4. a reply past 2 MB -----------------------------------------------------------------------


async def test_a_reply_past_the_limit_is_the_answer(
    client: Client, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from tether.durable import FileBlobs

    agent = durable("bigreply", request, blobs=FileBlobs(tmp_path / "b"))
    got = await outcome(agent, client, ask(reply_kb=3 * KB), queue_of(request))
    assert got == text_of("reply", 3 * KB * KB)
    assert CALLS["model"] == 1


async def test_a_reply_past_the_limit_with_nowhere_to_offload_fails_after_one_call(
    client: Client, request: pytest.FixtureRequest
) -> None:
    agent = durable("bigreply-none", request)
    got = await outcome(agent, client, ask(reply_kb=3 * KB), queue_of(request))
    assert isinstance(got, DurableRunError), got
    assert isinstance(got.error, PayloadTooLargeError)
    assert CALLS["model"] == 1  # was three paid calls
