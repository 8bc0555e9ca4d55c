"""Durable agents for the tests and the benchmark, importable by worker processes
(``tether worker --agent durable_agents:ATTR`` with this folder on PYTHONPATH).

``PlanModel`` answers from the history alone, so any worker, after any crash, makes the same
turn: the prompt is a JSON plan of tool-call rounds; turn k calls round k, then it answers with
every result. The ``bank`` tools write to a SQLite ledger (the "outside world", path in
``TETHER_TEST_LEDGER``) that applies each idempotency key once and counts every attempt.
``DripModel`` streams slowly, and waits on a file the test makes, for the streaming tests."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tether import Agent, Message, StreamEvent, TextBlock, ToolResultBlock, report_progress, tool
from tether.durable import DurableOptions, FileBlobs, TemporalAgent, current_call
from tether.errors import RateLimitError
from tether.events import IterationEnd, ReasoningDelta, TextDelta, ToolInputDelta, ToolUseStart
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
        texts = [self.shown(str(b.content)) for m in messages for b in _results(m)]
        answer = "done: " + " | ".join(texts)
        for start in range(0, len(answer), 16):  # streamed in pieces, as a provider would
            yield TextDelta(0, answer[start : start + 16])
        yield IterationEnd(0, StopReason.END_TURN, usage)

    def shown(self, text: str) -> str:
        """How the answer quotes a result: whole."""
        return text


class DigestPlanModel(PlanModel):
    """``PlanModel`` whose answer quotes each result by its size and digest (a 20 MB result
    would make a 20 MB answer, streamed 16 characters at a time)."""

    def shown(self, text: str) -> str:
        return f"{len(text)} characters, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}"


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


@tool(idempotent=True)
async def document(name: str, size: int) -> str:
    """Read-only: the document ``name``, ``size`` characters long (the same every time)."""
    await asyncio.sleep(random.uniform(0.0, 0.2))  # a kill may land mid-call
    line = f"{name} says hello. "
    return (line * (size // len(line) + 1))[:size]


BLOBS = os.environ.get(
    "TETHER_TEST_BLOBS", str(Path(tempfile.gettempdir()) / f"tether-test-blobs-{os.getuid()}")
)
"""The blob folder of ``sizer``: the test and its worker processes agree on it."""

sizer = TemporalAgent(  # no store: large payloads go to blobs on the shared disk
    Agent("You follow plans.", DigestPlanModel(), tools=[pay, lookup, document]),
    name="sizer",
    blobs=FileBlobs(BLOBS),
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


class DripModel:
    """Streams what the JSON prompt asks: first its tool ``rounds`` (as ``PlanModel``), then
    ``think`` as reasoning and ``say`` as the answer, in pieces of ``size`` characters,
    ``every`` seconds apart. With ``gate`` (a file path) it stops after ``before`` pieces of
    the answer until the file exists. ``fickle``: the second half of the answer names the
    worker's process, so an attempt on another worker says something else."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        ask = json.loads(next(b.text for b in messages[0].content if isinstance(b, TextBlock)))
        rounds: list[list[list[Any]]] = ask.get("rounds", [])
        done = sum(1 for m in messages if m.role == "user" and _results(m))
        usage = Usage(input_tokens=len(messages), output_tokens=1)
        if done < len(rounds):
            for i, (name, args) in enumerate(rounds[done]):
                yield ToolUseStart(i, f"call_{done}_{i}", name)
                yield ToolInputDelta(i, f"call_{done}_{i}", json.dumps(args))
            yield IterationEnd(0, StopReason.TOOL_USE, usage)
            return
        size, every = ask.get("size", 4), ask.get("every", 0.0)
        think: str = ask.get("think", "")
        for start in range(0, len(think), size):
            yield ReasoningDelta(0, think[start : start + size])
            await asyncio.sleep(every)
        say: str = ask["say"]
        if ask.get("fickle"):
            say = f"{say[: len(say) // 2]}<worker {os.getpid()}>{say[len(say) // 2 :]}"
        index = 1 if think else 0
        for n, start in enumerate(range(0, len(say), size)):
            if n == ask.get("before") and ask.get("gate"):
                await _opened(ask["gate"])
            yield TextDelta(index, say[start : start + size])
            await asyncio.sleep(every)
        yield IterationEnd(0, StopReason.END_TURN, usage)


async def _opened(gate: str) -> None:
    """Wait until the file ``gate`` exists (the test, in another process, makes it)."""
    while not Path(gate).is_file():  # noqa: ASYNC110, ASYNC240 - a stat per 10 ms, no waiting
        await asyncio.sleep(0.01)


async def _crunch(steps: int, gate: str = "") -> str:
    """Crunch ``steps`` steps, reporting each; after the first, wait for the file ``gate``."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step}")
        if step == 1 and gate:
            await _opened(gate)
        await asyncio.sleep(0.05)
    return f"crunched {steps}"


crunch = replace(tool(_crunch, name="crunch", idempotent=True), reports_progress=True)

dripping = TemporalAgent(
    Agent("You stream.", DripModel(), tools=[crunch, lookup]),
    name="dripping",
    options=DurableOptions(heartbeat_timeout=30.0, retry_initial=0.2, retry_max=1.0),
)
flaky_drip = TemporalAgent(  # a lost worker is noticed within two seconds
    dripping.agent,
    name="flaky_drip",
    options=DurableOptions(
        heartbeat_timeout=2.0, retry_initial=0.2, retry_max=0.5, model_attempts=100
    ),
)


def drip(say: str, **ask: Any) -> str:
    """A prompt for ``DripModel``: ``ask`` as its keys say (``rounds`` as ``plan`` takes them)."""
    rounds = ask.pop("rounds", [])
    return json.dumps({"say": say, "rounds": [[[n, a] for n, a in r] for r in rounds], **ask})
