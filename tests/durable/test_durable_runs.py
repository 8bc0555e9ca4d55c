"""Durable runs against a real Temporal dev server, the worker in the test's process: the same
loop as ``Agent.run`` (identical transcripts), approvals, signals, queries, event streaming,
errors, continue-as-new, a PostgreSQL store, and replay of the recorded history."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import durable_agents as da
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import Replayer

import parts
from tether import (
    Agent,
    Compaction,
    MemoryContextStore,
    Message,
    StreamEvent,
    TextDelta,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from tether.durable import DevServer, DurableOptions, DurableRunError, TemporalAgent
from tether.errors import AuthenticationError, TransportError
from tether.events import IterationEnd, ToolResult
from tether.testing import ScriptedTransport, make_text_response, make_tool_use_response
from tether.types import StopReason

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def client(temporal: DevServer) -> Client:
    return await Client.connect(temporal.address)


def _queue(request: pytest.FixtureRequest) -> str:
    return f"q-{request.node.name}-{os.getpid()}"


TWO_ROUNDS = da.plan(
    [("pay", {"to": "ann", "amount": 3}), ("lookup", {"name": "bob"})],
    [("pay", {"to": "bob", "amount": 5})],
)


def _effects(ledger: Path) -> list[tuple[str, str]]:
    db = da.ledger()
    try:
        return db.execute("SELECT key, what FROM effects ORDER BY key").fetchall()
    finally:
        db.close()


async def test_a_durable_run_is_the_plain_loop(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    """Same agent, same prompt: the durable transcript and events are those of ``Agent.run``."""
    queue = _queue(request)
    async with da.planner.worker(client, queue):
        run = await da.planner.start(client, TWO_ROUNDS, task_queue=queue)
        events = [e async for e in run.events()]
        answer = await run.answer()
        transcript = await run.transcript()
        progress = await run.progress()
    assert answer == "done: paid 3 to ann | bob has an account | paid 5 to bob"
    keys = [k for k, _ in _effects(ledger)]
    assert keys == sorted([f"{run.id}:1:call_0_0", f"{run.id}:2:call_1_0"])

    # the plain loop, in this process, on the same agent (its bank tool needs a durable call)
    plain_agent = da.planner.agent.copy(tools=[da.lookup, _plain_pay])
    plain = MemoryContextStore()
    plain_events = [e async for e in plain_agent.run_stream(TWO_ROUNDS, plain)]
    assert transcript == plain.messages
    assert [type(e) for e in events] == [type(e) for e in _merged(plain_events)]
    assert progress.status == "done" and progress.turns == 3 and progress.messages == 6


@tool(name="pay")
def _plain_pay(to: str, amount: int) -> str:
    return f"paid {amount} to {to}"


def _merged(events: Sequence[StreamEvent]) -> list[StreamEvent]:
    """Consecutive text deltas of one block as one (as a model activity returns them)."""
    out: list[StreamEvent] = []
    for e in events:
        if isinstance(e, TextDelta) and out and isinstance(out[-1], TextDelta):
            out[-1] = TextDelta(e.index, out[-1].delta + e.delta)
        else:
            out.append(e)
    return out


async def test_the_recorded_history_replays_deterministically(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    async with da.planner.worker(client, queue):
        run = await da.planner.start(client, TWO_ROUNDS, task_queue=queue)
        await run.answer()
    history = await client.get_workflow_handle(run.id).fetch_history()
    replayer = Replayer(workflows=[da.planner.workflow])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None


async def test_a_fallback_transport_answers_inside_the_model_activities(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    """The busy primary's 429 moves each model call to the next transport inside its activity
    (the workflow sees one answer, no wall clock), the run says which model answered, and the
    recorded history replays."""
    queue = _queue(request)
    async with da.falling_back.worker(client, queue):
        run = await da.falling_back.start(client, TWO_ROUNDS, task_queue=queue)
        events = [e async for e in run.events()]
        answer = await run.answer()
    assert answer == "done: paid 3 to ann | bob has an account | paid 5 to bob"
    ends = [e for e in events if isinstance(e, IterationEnd)]
    assert len(ends) == 3 and {e.model for e in ends} == {"plan"}
    history = await client.get_workflow_handle(run.id).fetch_history()
    replayed = await Replayer(workflows=[da.falling_back.workflow]).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert replayed.replay_failure is None


async def test_a_typed_agent_answers_its_validated_value_repaired_inside_the_workflow(
    client: Client, request: pytest.FixtureRequest
) -> None:
    """``output_type`` under a durable run: the instruction reaches the model activity, the
    answer in words goes back for repair inside the workflow, and ``run`` gives the value."""
    queue = _queue(request)
    async with da.summing.worker(client, queue):
        assert await da.summing.run(client, "3 and 5", task_queue=queue) == da.Total(total=8)
        run = await da.summing.start(client, "2 and 2", task_queue=queue)
        assert await run.answer() == '{"total": 4}'  # the text; ``run`` reads it as the type
        transcript = await run.transcript()
    assert [m.text for m in transcript if m.role == "assistant"] == ["about 4", '{"total": 4}']
    assert "did not match the required JSON Schema" in transcript[2].text


async def test_approval_waits_and_a_denial_reaches_the_model(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    prompt = da.plan(
        [("send_wire", {"to": "eve", "amount": 900}), ("lookup", {"name": "eve"})],
        [("send_wire", {"to": "ann", "amount": 10})],
    )
    async with da.guarded.worker(client, queue):
        run = await da.guarded.start(client, prompt, task_queue=queue)
        progress = await _until(run, lambda p: p.status == "awaiting_approval")
        (pending,) = progress.pending
        assert pending["name"] == "send_wire" and pending["input"] == {"to": "eve", "amount": 900}
        assert _effects(ledger) == []  # nothing happens before the decision
        await run.deny(pending["call_id"], "Too much.")
        progress = await _until(run, lambda p: p.status == "awaiting_approval" and p.turns == 2)
        await run.approve(progress.pending[0]["call_id"])
        answer = await run.answer()
    assert answer == "done: Tool call denied. Too much. | eve has an account | wired 10 to ann"
    assert [w for _, w in _effects(ledger)] == ["wired 10 to ann"]


async def test_no_decision_in_time_is_a_denial(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    impatient = TemporalAgent(
        da.guarded.agent,
        name="impatient",
        approval=lambda name, args: args.get("amount", 0) > 100,
        options=DurableOptions(approval_timeout=0.5),
    )
    prompt = da.plan(
        [("send_wire", {"to": "eve", "amount": 900})], [("send_wire", {"to": "a", "amount": 1})]
    )
    async with impatient.worker(client, queue):
        answer = await impatient.run(client, prompt, task_queue=queue)
    assert answer == "done: Tool call denied. No decision came within 0.5 s. | wired 1 to a"


async def test_cancel_ends_the_run_and_every_call_keeps_a_result(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    prompt = da.plan([("send_wire", {"to": "eve", "amount": 1}), ("lookup", {"name": "x"})])
    async with da.guarded.worker(client, queue):
        run = await da.guarded.start(client, prompt, task_queue=queue)
        await _until(run, lambda p: p.status == "awaiting_approval")
        await run.cancel()
        output = await run.result()
        transcript = await run.transcript()
    assert output.stop_reason == "cancelled" and output.error is None
    calls = {b.id for m in transcript for b in m.content if isinstance(b, ToolUseBlock)}
    answered = {
        b.tool_use_id for m in transcript for b in m.content if isinstance(b, ToolResultBlock)
    }
    assert calls and calls == answered
    assert _effects(ledger) == []


async def test_a_temporal_cancel_cancels_the_workflow(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    prompt = da.plan([("send_wire", {"to": "eve", "amount": 1})])
    async with da.guarded.worker(client, queue):
        run = await da.guarded.start(client, prompt, task_queue=queue)
        await _until(run, lambda p: p.status == "awaiting_approval")
        await run.handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await run.result()


async def test_a_session_kept_open_answers_each_message_and_steers(
    client: Client, ledger: Path, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    echo = TemporalAgent(Agent("Echo.", _EchoModel(), tools=[da.send_wire]), name="echo-session",
                         approval={"send_wire"})  # fmt: skip
    async with echo.worker(client, queue):
        run = await echo.start(client, "hello", task_queue=queue, keep_open=True)
        await _until(run, lambda p: p.status == "waiting_for_message")
        assert (await run.progress()).answer == "you said: hello"
        await run.send("wire please")
        progress = await _until(run, lambda p: p.status == "awaiting_approval")
        await run.send("and hurry")  # arrives while the answer is going on: steers it
        await run.approve(progress.pending[0]["call_id"])
        await _until(run, lambda p: p.status == "waiting_for_message" and p.turns == 3)
        await run.close()
        output = await run.result()
        transcript = await run.transcript()
    assert output.answer == "you said: wire please / and hurry"
    texts = [m.text for m in transcript if m.role == "user" and m.text]
    assert texts == ["hello", "wire please", "and hurry"]


class _EchoModel:
    """Echoes the user's texts since its last answer; "wire" in them asks for a wire first."""

    async def stream(
        self, messages: Sequence[Message], tools: Any, system: str
    ) -> AsyncIterator[StreamEvent]:
        since = 0
        for i, m in enumerate(messages):
            if m.role == "assistant" and m.text and not m.tool_uses:
                since = i + 1
        recent = messages[since:]
        texts = [m.text for m in recent if m.role == "user" and m.text]
        wired = any(isinstance(b, ToolResultBlock) for m in recent for b in m.content)
        if any("wire" in t for t in texts) and not wired:
            call = make_tool_use_response(
                "send_wire", f"w{len(messages)}", {"to": "x", "amount": 1}
            )
            for e in call:
                yield e
            return
        for e in make_text_response("you said: " + " / ".join(texts)):
            yield e


async def test_a_message_sent_during_the_last_model_call_is_answered_too(
    client: Client, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    gate = asyncio.Event()
    gated = TemporalAgent(Agent("Echo.", _Gated(_EchoModel(), gate)), name="gated")
    async with gated.worker(client, queue):
        run = await gated.start(client, "first", task_queue=queue)
        await _until(run, lambda p: p.turns == 1)  # the model call is running
        await run.send("second")
        await _taken(run)  # the signal is in the workflow before the model answers
        gate.set()
        output = await run.result()
        transcript = await run.transcript()
    assert output.answer == "you said: second"
    assert [m.text for m in transcript] == [
        "first",
        "you said: first",
        "second",
        "you said: second",
    ]


class _Gated:
    def __init__(self, model: Any, gate: asyncio.Event) -> None:
        self.model, self.gate = model, gate

    async def stream(self, messages: Any, tools: Any, system: str) -> AsyncIterator[StreamEvent]:
        await self.gate.wait()
        async for event in self.model.stream(messages, tools, system):
            yield event


async def test_model_errors_come_back_typed_and_only_retryable_ones_are_retried(
    client: Client, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    flaky = _Failing(
        [TransportError("busy", retryable=True), TransportError("busy", retryable=True)]
    )
    denied = _Failing([AuthenticationError("bad key", status_code=401)] * 3)
    agents = [
        TemporalAgent(Agent("s", flaky), name="flaky", options=da.FAST),
        TemporalAgent(Agent("s", denied), name="denied", options=da.FAST),
    ]
    async with TemporalAgent.serving(agents, client, queue):
        assert await agents[0].run(client, "hi", task_queue=queue) == "fine"
        with pytest.raises(DurableRunError) as caught:
            await agents[1].run(client, "hi", task_queue=queue)
    assert flaky.calls == 3
    assert denied.calls == 1  # not retried: Temporal carries the agent's retry policy's verdict
    assert isinstance(caught.value.error, AuthenticationError)
    assert "bad key" in str(caught.value)


async def test_a_long_tool_heartbeats_often_enough_for_a_short_heartbeat_timeout(
    client: Client, request: pytest.FixtureRequest
) -> None:
    """Heartbeats come at a quarter of the heartbeat timeout: a 1 s timeout does not kill a 3 s
    call that runs once (not idempotent: a lost heartbeat would end it with an error)."""
    runs: list[int] = []

    @tool
    async def settle(batch: int) -> str:
        """Settle a batch."""
        runs.append(batch)
        await asyncio.sleep(3)
        return f"settled {batch}"

    queue = _queue(request)
    quick = DurableOptions(heartbeat_timeout=1.0)
    agent = TemporalAgent(
        Agent("s", da.PlanModel(), tools=[settle]), name="heartbeats", options=quick
    )
    async with agent.worker(client, queue):
        answer = await agent.run(client, da.plan([("settle", {"batch": 7})]), task_queue=queue)
    assert answer == "done: settled 7" and runs == [7]


class _Failing:
    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        self.calls = 0

    async def stream(self, messages: Any, tools: Any, system: str) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        for e in make_text_response("fine"):
            yield e


@pytest.mark.parametrize("stored", [False, True], ids=["history", "postgres"])
async def test_a_long_run_continues_as_new_and_loses_nothing(
    client: Client, ledger: Path, request: pytest.FixtureRequest, stored: bool
) -> None:
    """History limits far below Temporal's: the run continues as new several times; the
    transcript is the uninterrupted one, and with a store, every message is in PostgreSQL."""
    queue = _queue(request)
    store = _postgres(request) if stored else None
    small = DurableOptions(max_history_events=40, heartbeat_timeout=5)
    name = f"long-{'pg' if stored else 'mem'}"
    long_agent = TemporalAgent(da.planner.agent, name=name, store=store, options=small)
    rounds = [
        [("pay", {"to": f"p{i}", "amount": i}), ("lookup", {"name": f"p{i}"})] for i in range(8)
    ]
    async with long_agent.worker(client, queue):
        run = await long_agent.start(client, da.plan(*rounds), task_queue=queue)
        answer = await run.answer()
        transcript = await run.transcript()
        output = await run.result()
    assert answer.count("paid") == 8 and len(transcript) == 18
    description = await run.handle.describe()
    assert description.run_id != description.raw_description.workflow_execution_info.first_run_id
    plain = MemoryContextStore()
    plain_agent = da.planner.agent.copy(tools=[da.lookup, _plain_pay])
    end = await plain_agent.run_stream(da.plan(*rounds), plain).get_session_end()
    assert transcript == plain.messages
    assert output.usage == asdict(end.total_usage)  # counted across the runs it spanned
    assert len(_effects(ledger)) == 8
    carried = await _model_inputs(client, run.id, description.raw_description)
    assert len(carried) == 9  # one per model call, across every run of the chain
    if store is None:  # each call carries the conversation so far
        assert [len(c["messages"]) for c in carried] == list(range(1, 18, 2))
        return
    # with a store, a call carries what came since the last one; the rest is read from PostgreSQL
    assert [c["stored"] for c in carried] == list(range(1, 18, 2))
    assert all(c["messages"] == [] for c in carried)
    context = await store.open(run.id)
    assert await context.get_history() == plain.messages
    await store.aclose()


async def _model_inputs(client: Client, workflow_id: str, described: Any) -> list[dict[str, Any]]:
    """The input of every model activity scheduled by the workflow, its runs followed in order."""
    inputs: list[dict[str, Any]] = []
    run_id: str | None = described.workflow_execution_info.first_run_id
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        run_id = None
        for event in history.events:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name.endswith(".model"):
                inputs.append(json.loads(scheduled.input.payloads[0].data))
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                run_id = (
                    event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                )
    return inputs


@pytest.mark.parametrize("budget", [None, 260], ids=["whole", "trimmed"])
async def test_with_a_store_the_model_gets_what_the_plain_loop_sends_it(
    client: Client, request: pytest.FixtureRequest, budget: int | None
) -> None:
    """The model activity rebuilds each request from the store and what the call carried: the
    messages the model sees are the plain run's, also when a context budget cut them."""
    from tether import CharBudget
    from tether.testing import Call, Reply

    def script() -> ScriptedTransport:
        calls = [Reply(tool_calls=[Call("lookup", {"name": f"n{i}"})]) for i in range(5)]
        return ScriptedTransport([*calls, Reply("all looked up")])

    policy = None if budget is None else CharBudget(budget, summarize=False)
    store = _postgres(request)
    durable_model, plain_model = script(), script()
    agent = TemporalAgent(
        Agent("s", durable_model, tools=[da.lookup], context_policy=policy),
        name=f"sends-{budget}",
        store=store,
        options=da.FAST,
    )
    queue = _queue(request)
    async with agent.worker(client, queue):
        assert await agent.run(client, "look them up", task_queue=queue) == "all looked up"
    await store.aclose()
    plain = Agent("s", plain_model, tools=[da.lookup], context_policy=policy)
    assert await plain.run("look them up") == "all looked up"
    sent = [r.messages for r in durable_model.requests]
    assert sent == [r.messages for r in plain_model.requests]
    if budget is not None:  # the budget did cut: later requests are shorter than the history
        assert len(sent[-1]) < 11


def _postgres(request: pytest.FixtureRequest) -> Any:
    from tether.stores import PostgresStore

    schema = f"durable_{os.getpid()}_{abs(hash(request.node.name)) % 10**6}"
    return PostgresStore(parts.server("postgres"), schema=schema)


async def test_tools_of_a_real_mcp_server_are_listed_and_called_on_workers(
    client: Client, request: pytest.FixtureRequest
) -> None:
    """The agent's tool source is an MCP server (mcp-server-time over stdio): the workflow
    gets its tools by an activity each iteration, and their calls are activities too."""
    from tether import McpStdio

    found = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    queue = _queue(request)
    prompt = da.plan([("get_current_time", {"timezone": "UTC"})])
    timed = TemporalAgent(Agent("s", da.PlanModel(), tools=[McpStdio(found, name="time")]),
                          name="timed", options=da.FAST)  # fmt: skip
    async with timed.connected(), timed.worker(client, queue):
        run = await timed.start(client, prompt, task_queue=queue)
        answer = await run.answer()
        names = [e.name for e in [e async for e in run.events()] if isinstance(e, ToolResult)]
    assert answer.startswith("done: ") and '"timezone": "UTC"' in answer
    assert names == ["get_current_time"]


def test_a_durable_agent_refuses_what_a_workflow_cannot_do() -> None:
    with pytest.raises(ValueError, match="name"):
        TemporalAgent(Agent("s", ScriptedTransport([])), name="two words")
    with pytest.raises(TypeError, match="not a tether store"):
        TemporalAgent(Agent("s", ScriptedTransport([])), name="x", store=object())
    with pytest.raises(ValueError, match="heartbeat_timeout"):
        DurableOptions(heartbeat_timeout=0)
    other = Agent("o", ScriptedTransport([]), name="o")
    with pytest.raises(ValueError, match="handoffs"):
        TemporalAgent(Agent("s", ScriptedTransport([]), handoffs=[other]), name="x")
    with pytest.raises(ValueError, match="approval"):
        TemporalAgent(Agent("s", ScriptedTransport([]), approval={"pay"}), name="x")
    summarised = Compaction(max_tokens=100, summarizer=ScriptedTransport([]))
    with pytest.raises(ValueError, match="summarizer"):
        TemporalAgent(Agent("s", ScriptedTransport([]), context_policy=summarised), name="x")
    own = Agent("s", ScriptedTransport([]), context_policy=Compaction(max_tokens=100))
    assert TemporalAgent(own, name="x").agent is own  # the agent's own model summarises


async def _until(run: Any, test: Any, within: float = 30.0) -> Any:
    async with asyncio.timeout(within):
        while True:
            progress = await run.progress()
            if test(progress):
                return progress
            await asyncio.sleep(0.05)


async def _taken(run: Any, within: float = 30.0) -> None:
    """Until a workflow task has completed since the last signal: the workflow has taken it."""
    signalled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    async with asyncio.timeout(within):
        while True:
            kinds = [e.event_type for e in (await run.handle.fetch_history()).events]
            last = max(i for i, kind in enumerate(kinds) if kind == signalled)
            if EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in kinds[last:]:
                return
            await asyncio.sleep(0.05)


_ = (IterationEnd, StopReason)


def test_a_durable_agents_approval_is_the_agents_one_definition() -> None:
    from tether import Agent
    from tether.loop.approval import Approval

    agent = Agent("x", ScriptedTransport([]), name="d")
    with pytest.raises(TypeError, match="approval takes a set of tool names"):
        TemporalAgent(agent, approval="send_wire")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="approval takes a set of tool names"):
        Agent("x", ScriptedTransport([]), approval="send_wire")  # type: ignore[arg-type]
    rule: Approval = lambda name, args: name == "send_wire" and args.get("amount", 0) > 100  # noqa: E731
    assert TemporalAgent(agent, approval=rule).approval is rule
