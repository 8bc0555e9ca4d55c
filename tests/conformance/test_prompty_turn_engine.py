"""``TurnConformance.runTurn`` (5) and ``TurnConformance.replay`` (5): the Prompty turn engine, run
by tether's one loop through ``tether.prompty.turns.engine``.

runTurn vectors script the model (text, tool requests, provider-state transitions), the tools'
outputs by call id, denied tools and cancellation; the harness feeds them to a ``TurnEngine`` as a
``ScriptedTransport``, host tools, a permission port and a provider-state port, and compares its
projection of the ``RunTurnResult`` with ``expected`` (subset projection).

replay vectors carry only the session, turn, clock, inputs and iteration limit, and name one of
the reference harness's scenarios; the scenario's model and tools are not in the vector (the
reference runners define them by name), so ``SCENARIOS`` below scripts each one explicitly. The
records compared are the engine's own journal, normalized by ``replay_records``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from prompty_adapter import assert_subset, load

from tether.loop.control import CancellationToken
from tether.prompty.messages import PromptMessage
from tether.prompty.turns.data import (
    ContextState,
    DelegatedStateRef,
    TurnModelRequest,
    TurnModelResponse,
    TurnOptions,
)
from tether.prompty.turns.engine import TurnEngine
from tether.prompty.turns.journal import MemoryJournal
from tether.prompty.turns.ports import (
    AllowAllPermissions,
    DenyTools,
    FixedClock,
    PermissionPort,
    SequentialIds,
)
from tether.prompty.turns.records import RunTurnRequest, RunTurnResult
from tether.prompty.turns.replay import replay_records, verify_replay
from tether.prompty.turns.tools import HostToolRequest, host_tools
from tether.testing.scripted import Call, Reply, ScriptedTransport, Step
from tether.tools.tool import Tool

RUN_TURN = load("TurnConformance.runTurn")
REPLAY = load("TurnConformance.replay")


# -- runTurn ----------------------------------------------------------------------------------


class VectorTools:
    """The vector's tool host: each call's output is the one the vector gives for its id."""

    def __init__(self, outputs: dict[str, Any]) -> None:
        self.outputs = outputs
        self.executed: list[str] = []

    def execute(self, request: HostToolRequest) -> Any:
        self.executed.append(request.request_id)
        return self.outputs[request.request_id]


class VectorProviderState:
    """The provider-state transition each scripted response declares (None: unchanged)."""

    def __init__(self, model: Sequence[dict[str, Any]]) -> None:
        self.states = [_state(step) for step in model]

    def next_state(
        self, request: TurnModelRequest, response: TurnModelResponse
    ) -> ContextState | None:
        return self.states[request.iteration]


def _state(step: dict[str, Any]) -> ContextState | None:
    if "nextPortability" not in step and "delegatedState" not in step:
        return None
    refs = tuple(DelegatedStateRef(**ref) for ref in step.get("delegatedState", []))
    return ContextState(step.get("nextPortability", "portable"), refs)


def _reply(step: dict[str, Any]) -> Reply:
    calls = [Call(t["name"], t.get("arguments", {}), id=t["id"]) for t in step.get("tools", [])]
    text = step["output"] if "output" in step else step.get("assistant", "")
    return Reply(text, tool_calls=calls)


def _view(result: RunTurnResult) -> dict[str, Any]:
    """The result in the vectors' terms (counts, orders and kinds)."""
    return {
        "status": result.status,
        "output": result.output,
        "iterations": result.iterations,
        "snapshots": len(result.snapshots),
        "snapshotStablePrefixes": [s.stable_prefix_messages for s in result.snapshots],
        "snapshotPortability": [s.context_state.portability for s in result.snapshots],
        "toolResults": len(result.tool_results),
        "toolResultOrder": [r.request_id for r in result.tool_results],
        "commitPortability": result.context_state.portability,
        "delegatedState": len(result.context_state.delegated_state),
        "eventKinds": [e.kind for e in result.events],
    }


@pytest.mark.parametrize(
    "vector", RUN_TURN, ids=[f"TurnConformance.runTurn:{v['name']}" for v in RUN_TURN]
)
async def test_run_turn(vector: dict[str, Any]) -> None:
    given = vector["input"]
    model = given.get("model", [])
    transport = ScriptedTransport([_reply(step) for step in model])
    names = dict.fromkeys(t["name"] for step in model for t in step.get("tools", []))
    host = VectorTools(given.get("toolOutputs", {}))
    journal = MemoryJournal()
    engine = TurnEngine(
        transport,
        host_tools(host, names),
        permissions=DenyTools(given.get("denyTools", [])),
        provider_state=VectorProviderState(model),
        journal=journal,
        clock=FixedClock("2026-06-28T00:00:00Z"),
    )
    cancel = CancellationToken()
    if given.get("cancelBeforeRun"):
        cancel.cancel()
    messages = [PromptMessage.from_dict(m) for m in given["messages"]]
    result = await engine.run_turn(
        RunTurnRequest(f"session-{vector['name']}", f"turn-{vector['name']}", messages),
        cancel=cancel,
    )

    assert_subset(vector["expected"], _view(result))
    # What every result must also satisfy (turn-engine.md): one model call per snapshot, one
    # monotonic sequence, and the journal holding exactly the events returned.
    assert transport.call_count == len(result.snapshots)
    assert [e.sequence for e in result.events] == list(range(1, len(result.events) + 1))
    assert journal.events == list(result.events)
    denied = set(given.get("denyTools", []))
    assert all(
        r.name not in denied or r.error_kind == "permission_denied" for r in result.tool_results
    )


# -- replay -----------------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def fail() -> str:
    """A tool whose host is down."""
    raise RuntimeError("tool unavailable")


ADD_CALL = Call("add", {"a": 2, "b": 3}, id="call-1")

# The reference harness's scenarios, by vector name (the vectors do not carry them): the model
# steps, the tools the host offers and its permission policy. Expected records are never used.
SCENARIOS: dict[str, tuple[list[Step], Step | None, list[Tool], PermissionPort]] = {
    "no_tool": ([Reply("hello")], None, [], AllowAllPermissions()),
    "tool_success": (
        [Reply(tool_calls=[ADD_CALL]), Reply("5")],
        None,
        [Tool("add", add)],
        AllowAllPermissions(),
    ),
    "tool_failure": (
        [Reply(tool_calls=[Call("fail", {}, id="call-1")]), Reply("the tool failed")],
        None,
        [Tool("fail", fail)],
        AllowAllPermissions(),
    ),
    "permission_denied": (
        [Reply(tool_calls=[ADD_CALL]), Reply("not allowed")],
        None,
        [Tool("add", add)],
        DenyTools(["add"]),
    ),
    # A model that never stops calling the tool: only the iteration limit ends the turn.
    "max_iterations": ([], Reply(tool_calls=[ADD_CALL]), [Tool("add", add)], AllowAllPermissions()),
}


@pytest.mark.parametrize(
    "vector", REPLAY, ids=[f"TurnConformance.replay:{v['name']}" for v in REPLAY]
)
async def test_replay(vector: dict[str, Any]) -> None:
    given = vector["input"]
    steps, then, tools, permissions = SCENARIOS[vector["name"]]
    journal = MemoryJournal()
    engine = TurnEngine(
        ScriptedTransport(steps, then=then),
        tools,
        permissions=permissions,
        journal=journal,
        clock=FixedClock(given["clock"]),
        ids=SequentialIds(),
    )
    options = TurnOptions(max_iterations=given.get("maxIterations", TurnOptions().max_iterations))
    request = RunTurnRequest(
        given["sessionId"], given["turnId"], inputs=given.get("inputs", {}), options=options
    )
    result = await engine.run_turn(request)

    records = replay_records(journal.events)
    assert records == vector["expected"]
    assert verify_replay(vector["expected"], records).status == "passed"
    assert all(e.timestamp == given["clock"] for e in result.events)
