"""AgentSession on a real store under cancels, abandoned streams and a second writer: a send
that was cancelled, timed out or left early never makes a later send fail, a conflict with
another writer is reported once, and every message whose append returned is kept."""

from __future__ import annotations

import asyncio
import gc
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "stores"))
import contextlib

from backends import BACKENDS, make

from tether import AgentSession, Message, tool
from tether.stores import ConflictError
from tether.testing import Call, Reply, ScriptedTransport


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    await asyncio.sleep(random.random() * 0.004)
    return f"value of {key}"


def model() -> ScriptedTransport:
    """Answers a user message with a tool call, and the tool's result with a text in chunks."""

    def step(request: Any) -> Reply:
        last = request.last_message
        if last.role == "user" and last.tool_results:
            return Reply("the answer is " + last.tool_results[0].text, chunks=4)
        return Reply(tool_calls=[Call("lookup", {"key": last.text[:20]})])

    return ScriptedTransport([], then=step)


def check_valid(history: list[Message]) -> None:
    """Every call answered once, no result without its call, no two user turns' results mixed."""
    open_calls: set[str] = set()
    for message in history:
        for block in message.tool_results:
            assert block.tool_use_id in open_calls, f"a result with no call: {history}"
            open_calls.discard(block.tool_use_id)
        if message.tool_uses:
            assert not open_calls, f"calls left unanswered: {open_calls}"
            open_calls = {b.id for b in message.tool_uses}
    assert not open_calls, f"calls left unanswered at the end: {open_calls}"


async def test_a_cancelled_send_never_makes_a_later_send_fail(kind: str, tmp_path: Path) -> None:
    rng = random.Random(7)
    async with make(kind, tmp_path) as store:
        session = AgentSession(model(), mcp_tools=[lookup], store=store, session_id="s")
        async with session:
            for trial in range(40):
                send = asyncio.ensure_future(session.send(f"question {trial}"))
                await asyncio.sleep(rng.random() * 0.03)
                send.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await send
                answer = await session.send(f"after {trial}")
                assert answer == "the answer is value of after " + str(trial)
            kept = session.messages
        check_valid(kept)
        stored = await (await store.open("s")).get_history()
    assert stored == kept
    assert sum(1 for m in stored if m.text.startswith("after ")) == 40


async def test_a_send_timed_out_by_wait_for_leaves_the_session_usable(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        session = AgentSession(model(), mcp_tools=[lookup], store=store, session_id="t")
        async with session:
            for trial in range(20):
                timeout = 0.0005 * (trial + 1)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(session.send(f"q {trial}"), timeout)
                assert await session.send(f"next {trial}") == f"the answer is value of next {trial}"
        check_valid(await (await store.open("t")).get_history())


async def test_leaving_a_stream_early_finishes_before_the_next_send(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        session = AgentSession(model(), mcp_tools=[lookup], store=store, session_id="u")
        async with session:
            for trial in range(10):
                async for chunk in session.stream(f"stream {trial}"):
                    assert chunk
                    break
                answer = await session.send(f"then {trial}")
                assert answer == f"the answer is value of then {trial}"
            history = session.messages
        check_valid(history)
        partial = [m.text for m in history if m.role == "assistant" and m.text]
        # each left stream kept what it had said (its first chunk) before the next send began
        assert sum(1 for t in partial if not t.startswith("the answer is value of then")) == 10
        assert await (await store.open("u")).get_history() == history


async def test_a_conflict_with_another_writer_is_reported_once(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        session = AgentSession(model(), mcp_tools=[lookup], store=store, session_id="v")
        async with session:
            await session.send("first")
            other = await store.open("v")
            await other.append(Message("user", "from another writer"))
            with pytest.raises(ConflictError):
                await session.send("second")
            # the next send reads what the other writer stored and goes on from there
            assert await session.send("third") == "the answer is value of third"
            texts = [m.text for m in session.messages]
        assert "from another writer" in texts
        stored = await (await store.open("v")).get_history()
        assert stored == session.messages
        check_valid(stored)


async def test_two_sessions_racing_on_one_id_both_go_on(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        one = AgentSession(model(), mcp_tools=[lookup], store=store, session_id="w")
        two = AgentSession(model(), mcp_tools=[lookup], store=store, session_id="w")
        async with one, two:
            conflicts = 0
            for trial in range(10):
                results = await asyncio.gather(
                    one.send(f"a{trial}"), two.send(f"b{trial}"), return_exceptions=True
                )
                for result in results:
                    if isinstance(result, ConflictError):
                        conflicts += 1
                    elif isinstance(result, BaseException):
                        raise result
            for session, text in ((one, "one last"), (two, "two last")):
                try:  # the other may have written after this one's last send: reported once
                    answer = await session.send(text)
                except ConflictError:
                    answer = await session.send(text)
                assert answer == f"the answer is value of {text}"
        assert conflicts >= 1
        check_valid_enough = await (await store.open("w")).get_history()
        texts = [m.text for m in check_valid_enough]
        assert "one last" in texts and "two last" in texts


class _SlowAppends:
    """A store whose appends take a while (a busy disk or network), so a close still storing
    overlaps whatever comes next."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def open(self, session_id: str) -> Any:
        return _SlowContext(await self.store.open(session_id))


class _SlowContext:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def append(self, message: Message) -> None:
        await asyncio.sleep(0.02)
        await self.inner.append(message)


async def test_a_dropped_stream_the_loop_is_closing_is_waited_for(
    kind: str, tmp_path: Path
) -> None:
    """A stream left after its first chunk and dropped is closed by the event loop's finalizer
    (a task of its own); the next send must wait for that close to store what the stream had,
    not write beside it (a ConflictError from the store before)."""
    async with make(kind, tmp_path) as store:
        session = AgentSession(
            model(), mcp_tools=[lookup], store=_SlowAppends(store), session_id="d"
        )
        async with session:
            for trial in range(5):
                async for _chunk in session.stream(f"stream {trial}"):
                    break
                gc.collect()  # a stream in a reference cycle is dropped only now
                for _ in range(3):  # the finalizer's close (if any) starts, inside a slow append
                    await asyncio.sleep(0)
                answer = await session.send(f"then {trial}")
                assert answer == f"the answer is value of then {trial}"
            history = session.messages
        check_valid(history)
        assert await (await store.open("d")).get_history() == history
