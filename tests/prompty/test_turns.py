"""The Prompty turn engine beyond its vectors: cancellation at each effect boundary, result order,
snapshot reuse on retry, checkpoints, reconciliation, durability failures, post-commit effects."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tether.loop.control import CancellationToken
from tether.prompty.errors import IndeterminateOutcome
from tether.prompty.messages import PromptMessage
from tether.prompty.turns.data import ContextState, DelegatedStateRef, TurnOptions
from tether.prompty.turns.engine import TurnEngine, run_turn
from tether.prompty.turns.journal import MemoryJournal
from tether.prompty.turns.ports import DenyTools, FixedClock, PostCommitRequest, post_commit_id
from tether.prompty.turns.records import RunTurnRequest, RunTurnResult, TurnCheckpoint, TurnEvent
from tether.prompty.turns.replay import replay_records, verify_replay
from tether.prompty.turns.tools import HostToolRequest, host_tools
from tether.testing.scripted import Call, Reply, ScriptedTransport
from tether.transports.retry import RetryPolicy

TWO_CALLS = Reply(
    "both", tool_calls=[Call("echo", {"v": "A"}, id="a"), Call("echo", {"v": "B"}, id="b")]
)


def request(**options: Any) -> RunTurnRequest:
    hello = [PromptMessage.text("user", "hello")]
    return RunTurnRequest("session-1", "turn-1", hello, options=TurnOptions(**options))


def kinds(result: RunTurnResult) -> list[str]:
    return [e.kind for e in result.events]


def events_of(result: RunTurnResult, kind: str) -> list[TurnEvent]:
    return [e for e in result.events if e.kind == kind]


class Echo:
    """A tool host that records what it ran and can run a hook first."""

    def __init__(self, before: Any = None) -> None:
        self.ran: list[HostToolRequest] = []
        self.before = before

    async def execute(self, call: HostToolRequest) -> str:
        self.ran.append(call)
        if self.before is not None:
            await self.before(call)
        return str(call.arguments.get("v"))


class ImmediateClock:
    """A retry clock that does not wait (``on_sleep`` runs instead)."""

    def __init__(self, on_sleep: Any = None) -> None:
        self.on_sleep = on_sleep

    def now(self) -> float:
        return 0.0

    def random(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        if self.on_sleep is not None:
            self.on_sleep()
        await asyncio.sleep(0)


def engine(
    steps: Sequence[Any], host: Echo | None = None, **bindings: Any
) -> tuple[TurnEngine, ScriptedTransport, MemoryJournal]:
    transport = ScriptedTransport(steps)
    journal = bindings.pop("journal", None) or MemoryJournal()
    tools = host_tools(host or Echo(), ["echo"])
    built = TurnEngine(
        transport, tools, journal=journal, clock=FixedClock("2026-06-28T00:00:00Z"), **bindings
    )
    return built, transport, journal


# -- cancellation at each effect boundary ---------------------------------------------------------


async def test_cancelled_before_context_preparation_invokes_nothing() -> None:
    turns, transport, _ = engine([Reply("never")])
    cancel = CancellationToken()
    cancel.cancel()
    result = await turns.run_turn(request(), cancel=cancel)
    assert result.status == "cancelled"
    assert kinds(result) == ["turn_started", "turn_cancelled"]
    assert transport.call_count == 0


async def test_cancelled_during_a_retry_wait_makes_no_other_attempt() -> None:
    cancel = CancellationToken()
    turns, transport, _ = engine(
        [ConnectionError("reset"), Reply("never")],
        retry=RetryPolicy(max_attempts=3),
        retry_clock=ImmediateClock(cancel.cancel),
    )
    result = await turns.run_turn(request(), cancel=cancel)
    assert result.status == "cancelled"
    assert transport.call_count == 1
    assert kinds(result)[-3:] == [
        "model_invocation_started",
        "model_invocation_failed",
        "turn_cancelled",
    ]


async def test_cancelled_before_a_tool_leaves_the_rest_of_the_round_pending() -> None:
    cancel = CancellationToken()

    async def cancel_after_first(call: HostToolRequest) -> None:
        cancel.cancel()

    host = Echo(cancel_after_first)
    turns, transport, journal = engine([TWO_CALLS, Reply("never")], host)
    result = await turns.run_turn(request(), cancel=cancel)

    assert result.status == "cancelled"
    assert [c.request_id for c in host.ran] == ["a"]
    assert transport.call_count == 1
    assert [r.request_id for r in result.tool_results] == ["a"]
    assert "tool_result_committed" not in kinds(result)
    last = journal.checkpoints[-1]
    assert [r.request_id for r in last.pending_tool_requests] == ["b"]
    assert [r.request_id for r in last.tool_results] == ["a"]
    assert [m.role for m in last.messages] == ["user"]  # the round is not committed
    assert [m.role for m in result.messages] == ["user"]


async def test_cancelled_in_the_last_tool_commits_the_round_but_no_other_iteration() -> None:
    cancel = CancellationToken()

    async def cancel_now(call: HostToolRequest) -> None:
        cancel.cancel()

    one_call = Reply(tool_calls=[Call("echo", {"v": "A"}, id="a")])
    turns, transport, _ = engine([one_call, Reply("never")], Echo(cancel_now))
    result = await turns.run_turn(request(), cancel=cancel)

    assert result.status == "cancelled"
    assert transport.call_count == 1
    assert kinds(result)[-4:] == [
        "tool_result_committed",
        "conversation_updated",
        "checkpoint_created",
        "turn_cancelled",
    ]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]


async def test_cancelled_before_the_final_commit_keeps_the_output_in_its_checkpoint() -> None:
    cancel = CancellationToken()

    def cancel_on_answer(event: TurnEvent) -> None:
        if event.kind == "model_invocation_completed" and event.payload["final"]:
            cancel.cancel()

    effects: list[PostCommitRequest] = []
    turns, _, journal = engine(
        [Reply("done")], on_event=cancel_on_answer, post_commit=[effects.append]
    )
    result = await turns.run_turn(request(), cancel=cancel)

    assert result.status == "cancelled"
    assert "turn_committed" not in kinds(result)
    assert effects == []
    last = journal.checkpoints[-1]
    assert last.final_output_ready
    assert last.pending_response is not None and last.pending_response.output == "done"


# -- ordering, snapshots, checkpoints -------------------------------------------------------------


async def test_results_commit_in_request_order_when_a_later_tool_finishes_first() -> None:
    b_done = asyncio.Event()

    async def a_waits_for_b(call: HostToolRequest) -> None:
        if call.request_id == "a":
            await b_done.wait()
        else:
            b_done.set()

    turns, _, _ = engine([TWO_CALLS, Reply("done")], Echo(a_waits_for_b), concurrent_tools=True)
    result = await turns.run_turn(request())

    assert result.status == "success"
    finished = [e.payload["requestId"] for e in events_of(result, "tool_execution_completed")]
    committed = [e.payload["requestId"] for e in events_of(result, "tool_result_committed")]
    assert finished == ["b", "a"]
    assert committed == ["a", "b"]
    assert [r.request_id for r in result.tool_results] == ["a", "b"]
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.metadata["tool_call_id"] for m in tool_messages] == ["a", "b"]


async def test_a_retry_reuses_the_same_snapshot() -> None:
    turns, transport, journal = engine(
        [ConnectionError("reset"), Reply("ok")],
        retry=RetryPolicy(max_attempts=2),
        retry_clock=ImmediateClock(),
    )
    result = await turns.run_turn(request())

    assert result.status == "success"
    assert result.iterations == 1
    assert len(result.snapshots) == 1
    started = [e.payload for e in events_of(result, "model_invocation_started")]
    assert [p["attempt"] for p in started] == [1, 2]
    assert {p["snapshotId"] for p in started} == {result.snapshots[0].id}
    assert {p["invocationId"] for p in started} == {result.snapshots[0].invocation_id}
    assert transport.requests[0].messages == transport.requests[1].messages
    assert kinds(result).count("context_prepared") == 1
    assert replay_records(journal.events).count("turn:llm_start:0") == 1


async def test_a_checkpoint_follows_every_model_response_and_tool_result() -> None:
    batches: list[tuple[list[TurnEvent], TurnCheckpoint | None]] = []

    class Recording(MemoryJournal):
        async def write(
            self, events: Sequence[TurnEvent], checkpoint: TurnCheckpoint | None
        ) -> None:
            batches.append((list(events), checkpoint))
            await super().write(events, checkpoint)

    journal = Recording()
    turns, _, _ = engine([TWO_CALLS, Reply("done")], journal=journal)
    result = await turns.run_turn(request())

    boundaries = [c.boundary for c in journal.checkpoints]
    assert boundaries == [
        "model_response",
        "tool_result",
        "tool_result",
        "tool_round",
        "model_response",
    ]
    for events, checkpoint in batches:  # each checkpoint is written with its event, atomically
        if checkpoint is None:
            assert all(e.kind != "checkpoint_created" for e in events)
            continue
        created = events[-1]
        assert created.kind == "checkpoint_created"
        assert created.payload["checkpointId"] == checkpoint.id
        assert checkpoint.last_sequence == created.sequence - 1
    first, after_a, after_b, round_, final = journal.checkpoints
    assert [r.request_id for r in first.pending_tool_requests] == ["a", "b"]
    assert not first.final_output_ready
    assert [r.request_id for r in after_a.pending_tool_requests] == ["b"]
    assert [r.request_id for r in after_a.tool_results] == ["a"]
    assert [r.request_id for r in after_b.tool_results] == ["a", "b"]
    assert round_.pending_response is None
    assert [m.role for m in round_.messages] == ["user", "assistant", "tool", "tool"]
    assert round_.stable_prefix_messages == 1
    assert final.final_output_ready
    assert result.checkpoint == final


# -- refusals, unknown outcomes, durability -------------------------------------------------------


async def test_parallel_tool_calls_are_refused_not_downgraded() -> None:
    turns, transport, _ = engine([Reply("never")])
    result = await turns.run_turn(request(parallel_tool_calls=True))
    assert result.status == "error"
    assert result.error is not None and result.error.kind == "validation"
    assert "parallel_tool_calls" in result.error.message
    assert kinds(result) == ["turn_started", "turn_failed"]
    assert transport.call_count == 0


async def test_an_indeterminate_tool_outcome_requires_reconciliation() -> None:
    async def unknown(call: HostToolRequest) -> None:
        raise IndeterminateOutcome("the payment service timed out")

    turns, transport, journal = engine([TWO_CALLS, Reply("never")], Echo(unknown))
    result = await turns.run_turn(request())

    assert result.status == "reconciliation_required"
    assert result.reconciliation is not None
    assert (result.reconciliation.kind, result.reconciliation.id) == ("tool", "exec-1")
    assert transport.call_count == 1
    assert kinds(result)[-3:] == [
        "tool_reconciliation_required",
        "checkpoint_created",
        "turn_reconciliation_required",
    ]
    assert journal.checkpoints[-1].reconciliation_required
    assert [r.request_id for r in journal.checkpoints[-1].pending_tool_requests] == ["a", "b"]


async def test_an_indeterminate_model_outcome_is_never_retried() -> None:
    turns, transport, journal = engine(
        [IndeterminateOutcome("connection lost after send"), Reply("never")],
        retry=RetryPolicy(max_attempts=3, retry_on=lambda exc: True),
        retry_clock=ImmediateClock(),
    )
    result = await turns.run_turn(request())
    assert result.status == "reconciliation_required"
    assert transport.call_count == 1
    assert result.reconciliation is not None and result.reconciliation.kind == "model"
    assert result.reconciliation.id == result.snapshots[0].invocation_id
    assert journal.checkpoints[-1].reconciliation_required


async def test_a_failed_journal_write_returns_recovery_state_and_runs_nothing_more() -> None:
    class Failing(MemoryJournal):
        async def write(
            self, events: Sequence[TurnEvent], checkpoint: TurnCheckpoint | None
        ) -> None:
            if checkpoint is not None and checkpoint.boundary == "tool_result":
                raise OSError("disk full")
            await super().write(events, checkpoint)

    host = Echo()
    turns, transport, _ = engine([TWO_CALLS, Reply("never")], host, journal=Failing())
    result = await turns.run_turn(request())

    assert result.status == "reconciliation_required"
    assert result.error is not None and result.error.kind == "durability"
    assert [c.request_id for c in host.ran] == ["a"]  # b never ran
    assert transport.call_count == 1
    assert result.checkpoint is not None and result.checkpoint.boundary == "tool_result"
    assert [r.request_id for r in result.checkpoint.tool_results] == ["a"]
    assert result.events[-1].kind == "tool_execution_started"  # the last event written


async def test_an_unknown_tool_is_a_configuration_failure() -> None:
    turns, _, _ = engine([Reply(tool_calls=[Call("nope", {}, id="x")]), Reply("never")])
    result = await turns.run_turn(request())
    assert result.status == "error"
    assert result.error is not None and result.error.kind == "unknown_tool"
    assert kinds(result)[-1] == "turn_failed"


async def test_max_iterations_counts_model_invocations() -> None:
    turns, transport, _ = engine([TWO_CALLS, TWO_CALLS, Reply("never")])
    result = await turns.run_turn(request(max_iterations=2))
    assert result.status == "error"
    assert result.error is not None and result.error.kind == "max_iterations"
    assert transport.call_count == 2
    assert result.iterations == 2


# -- ports ----------------------------------------------------------------------------------------


async def test_denial_is_a_model_visible_result_without_an_execution() -> None:
    host = Echo()
    turns, transport, _ = engine([TWO_CALLS, Reply("ok")], host, permissions=DenyTools(["echo"]))
    result = await turns.run_turn(request())
    assert host.ran == []
    assert "tool_execution_started" not in kinds(result)
    assert [r.error_kind for r in result.tool_results] == ["permission_denied"] * 2
    sent = transport.requests[1].messages[-1]
    assert all(b.is_error and "permission denied" in b.text for b in sent.tool_results)


async def test_host_tools_get_the_stable_identity_of_each_call() -> None:
    host = Echo()
    turns, _, _ = engine([TWO_CALLS, Reply("ok")], host)
    await turns.run_turn(request())
    assert [(c.execution_id, c.request_id, c.session_id) for c in host.ran] == [
        ("exec-1", "a", "session-1"),
        ("exec-2", "b", "session-1"),
    ]
    assert [dict(c.arguments) for c in host.ran] == [{"v": "A"}, {"v": "B"}]


async def test_a_host_tool_outside_a_turn_fails_clearly() -> None:
    (tool,) = host_tools(Echo(), ["echo"])
    with pytest.raises(RuntimeError, match="only inside a TurnEngine turn"):
        await tool.invoke({"v": "A"})


async def test_provider_state_is_carried_into_later_snapshots_and_the_commit() -> None:
    ref = DelegatedStateRef("openai", "previous_response", "resp_1")

    class Provider:
        def next_state(self, request: Any, response: Any) -> ContextState | None:
            return ContextState("delegated", (ref,)) if request.iteration == 0 else None

    one_call = Reply(tool_calls=[Call("echo", {"v": "A"}, id="a")])
    turns, _, _ = engine([one_call, Reply("ok")], provider_state=Provider())
    result = await turns.run_turn(request())
    assert [s.context_state.portability for s in result.snapshots] == ["portable", "delegated"]
    assert result.context_state.delegated_state == (ref,)
    assert result.to_dict()["contextState"]["delegatedState"] == [ref.to_dict()]


async def test_post_commit_effects_get_a_deterministic_identity_and_cannot_fail_the_turn() -> None:
    seen: list[PostCommitRequest] = []

    def broken(request: PostCommitRequest) -> None:
        raise ValueError("index unavailable")

    turns, _, _ = engine([Reply("done")], post_commit=[seen.append, broken])
    result = await turns.run_turn(request())
    assert result.status == "success"
    assert [r.effect_id for r in seen] == [post_commit_id("session-1", "turn-1")]
    assert post_commit_id("a:b", "c") != post_commit_id("a", "b:c")
    assert kinds(result)[-2:] == ["post_commit_started", "post_commit_failed"]
    assert result.warnings and "index unavailable" in result.warnings[0]


async def test_a_session_journal_continues_its_sequence_across_turns() -> None:
    journal = MemoryJournal()
    transport = ScriptedTransport([Reply("one"), Reply("two")])
    turns = TurnEngine(transport, journal=journal, clock=FixedClock("t"))
    first = await turns.run_turn(RunTurnRequest("s", "turn-1"))
    second = await turns.run_turn(RunTurnRequest("s", "turn-2", last_sequence=journal.tail))
    assert second.events[0].sequence == first.last_sequence + 1
    sequences = [e.sequence for e in journal.events]
    assert sequences == list(range(1, len(sequences) + 1))
    assert replay_records(journal.events)[-1] == "summary:s:success:turns=2:checkpoints=2"


async def test_run_turn_and_the_replay_verifier() -> None:
    result = await run_turn(request(), ScriptedTransport([Reply("hi")]), clock=FixedClock("t"))
    assert result.status == "success" and result.output == "hi"
    records = replay_records(result.events)
    assert verify_replay(records, records).status == "passed"
    failed = verify_replay(records, records[:-1])
    assert failed.status == "failed"
    assert [(m.index, m.actual) for m in failed.mismatches] == [(len(records) - 1, None)]
    assert result.to_dict()["lastSequence"] == result.events[-1].sequence
