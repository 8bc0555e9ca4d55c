"""Durable agents for the tests and the benchmark, importable by worker processes
(``tether worker --agent durable_agents:ATTR`` with this folder on PYTHONPATH).

``PlanModel`` answers from the history alone, so any worker, after any crash, makes the same
turn: the prompt is a JSON plan of tool-call rounds; turn k calls round k, then it answers with
every result. The ``bank`` tools write to a SQLite ledger (the "outside world", path in
``TETHER_TEST_LEDGER``) that applies each idempotency key once and counts every attempt."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel

from tether import Agent, Message, StreamEvent, TextBlock, ToolResultBlock, tool
from tether.durable import DurableOptions, TemporalAgent, current_call
from tether.errors import RateLimitError
from tether.events import IterationEnd, TextDelta, ToolInputDelta, ToolUseStart
from tether.transports import FallbackTransport
from tether.types import StopReason, ToolSpec, Usage


class PlanModel:
    """A model that follows the JSON plan in the first user message."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        prompt = next(b.text for b in messages[0].content if isinstance(b, TextBlock))
        plan: list[list[list[Any]]] = json.loads(prompt)["rounds"]
        done = sum(1 for m in messages if m.role == "user" and _results(m))
        usage = Usage(input_tokens=len(messages), output_tokens=1)
        if done < len(plan):
            for i, (name, args) in enumerate(plan[done]):
                call_id = f"call_{done}_{i}"
                yield ToolUseStart(i, call_id, name)
                yield ToolInputDelta(i, call_id, json.dumps(args))
            yield IterationEnd(0, StopReason.TOOL_USE, usage)
            return
        texts = [str(b.content) for m in messages for b in _results(m)]
        answer = "done: " + " | ".join(texts)
        for start in range(0, len(answer), 16):  # streamed in pieces, as a provider would
            yield TextDelta(0, answer[start : start + 16])
        yield IterationEnd(0, StopReason.END_TURN, usage)


class NamedPlanModel(PlanModel):
    """``PlanModel`` that names its model, so a run says which model answered."""

    model = "plan"


class BusyModel:
    """A provider that always answers 429, asking to be left alone for a minute."""

    model = "busy"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        raise RateLimitError("429 Too Many Requests", retryable=True, retry_after=60)
        yield  # an async generator that fails on its first step


def _results(message: Message) -> list[ToolResultBlock]:
    return [b for b in message.content if isinstance(b, ToolResultBlock)]


def ledger() -> sqlite3.Connection:
    db = sqlite3.connect(os.environ["TETHER_TEST_LEDGER"], timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, what TEXT, applied INT)")
    db.execute("CREATE TABLE IF NOT EXISTS attempts (key TEXT, attempt INT, pid INT, ended INT)")
    return db


def _apply(what: str) -> str:
    """The outside world: apply ``what`` once per idempotency key; count every attempt."""
    call = current_call()
    assert call is not None, "a bank tool runs only in a durable run"
    db = ledger()
    try:
        row = db.execute(
            "INSERT INTO attempts VALUES (?, ?, ?, 0) RETURNING rowid",
            (call.key, call.attempt, os.getpid()),
        ).fetchone()
        db.execute("BEGIN IMMEDIATE")
        seen = db.execute("SELECT what FROM effects WHERE key = ?", (call.key,)).fetchone()
        if seen is None:
            db.execute("INSERT INTO effects VALUES (?, ?, 1)", (call.key, what))
        db.execute("COMMIT")
        db.execute("UPDATE attempts SET ended = 1 WHERE rowid = ?", (row[0],))
    finally:
        db.close()
    return what


@tool(idempotent=True)
async def pay(to: str, amount: int) -> str:
    """Pay ``amount`` to ``to`` (once per call, however often it is retried)."""
    await asyncio.sleep(random.uniform(0.0, 0.4))  # a kill may land mid-call
    result = await asyncio.to_thread(_apply, f"paid {amount} to {to}")
    await asyncio.sleep(random.uniform(0.0, 0.2))  # ... or after the effect, before the reply
    return result


@tool(idempotent=True)
def lookup(name: str) -> str:
    """Read-only: what the bank knows of ``name``."""
    return f"{name} has an account"


@tool
async def slow_transfer(to: str, amount: int) -> str:
    """Not idempotent: a durable run never retries it."""
    await asyncio.to_thread(_apply, f"started {amount} to {to}")
    await asyncio.sleep(3.0)
    return f"transferred {amount} to {to}"


@tool
def send_wire(to: str, amount: int) -> str:
    """Wire money (needs a person's approval in the ``guarded`` agent)."""
    return _apply(f"wired {amount} to {to}")


FAST = DurableOptions(
    heartbeat_timeout=3.0, retry_initial=0.2, retry_max=1.0, model_attempts=100, tool_attempts=100
)

planner = TemporalAgent(
    Agent("You follow plans.", PlanModel(), tools=[pay, lookup]), name="planner", options=FAST
)
careful = TemporalAgent(
    Agent("You follow plans.", PlanModel(), tools=[slow_transfer]), name="careful", options=FAST
)
guarded = TemporalAgent(
    Agent("You follow plans.", PlanModel(), tools=[send_wire, lookup]),
    name="guarded",
    approval={"send_wire"},
    options=FAST,
)


falling_back = TemporalAgent(
    Agent(
        "You follow plans.",
        FallbackTransport([BusyModel(), NamedPlanModel()]),
        tools=[pay, lookup],
    ),
    name="falling_back",
    options=FAST,
)


class Total(BaseModel):
    """What ``summing`` answers with."""

    total: int


class SumModel:
    """Answers in words first; asked again (the typed run's repair message), with the JSON the
    instruction in its system prompt asks for, the sum of the numbers in the prompt."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        prompt = next(b.text for b in messages[0].content if isinstance(b, TextBlock))
        repairing = len(messages) > 1 and "JSON Schema" in system
        total = sum(int(word) for word in prompt.split() if word.isdigit())
        yield TextDelta(0, json.dumps({"total": total}) if repairing else f"about {total}")
        yield IterationEnd(0, StopReason.END_TURN, Usage(len(messages), 1))


summing = TemporalAgent(
    Agent("You add numbers.", SumModel(), output_type=Total), name="summing", options=FAST
)


def plan(*rounds: list[tuple[str, dict[str, Any]]]) -> str:
    """A prompt for ``PlanModel``."""
    return json.dumps({"rounds": [[[n, a] for n, a in r] for r in rounds]})
