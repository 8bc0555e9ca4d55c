"""``McpStdio`` over its whole life, on real server processes (``servers/changing.py``, the SDK's
own server, and ``servers/hostile.py``), as padwan-ai's users rely on it: entered again after an
exit (a new process, its own tool list), a failed or cancelled ``initialize`` leaving no process,
task or descriptor behind, a server that floods its stderr never stalling, and a call cancelled
at any point leaving the connection and its reader working for the next call."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest
from mcp_helpers import children, open_fds, other_tasks

from tether import McpStdio
from tether.mcp import McpError
from waiting import until

pytestmark = pytest.mark.timeout(120)

ROUNDS = 20  # cancellations at random points, per test


def rng() -> random.Random:
    """A seeded generator whose seed is printed, so a failing point can be replayed."""
    seed = int(os.environ.get("TETHER_TEST_SEED") or random.randrange(1 << 30))
    print(f"TETHER_TEST_SEED={seed}")
    return random.Random(seed)


# -- entering again after an exit ------------------------------------------------------------------


async def test_a_server_entered_again_after_its_exit_is_a_new_process_with_its_own_list(
    changing: tuple[list[str], Path],
) -> None:
    command, _ = changing
    before = set(children())
    server = McpStdio(command[0], command[1:])
    tools = server.tools
    pids: list[int] = []
    for turn in range(3):
        async with server:
            assert server.is_open
            (pid,) = set(children()) - before
            pids.append(pid)
            names = [t.name for t in server.tools]
            assert "slow" in names and f"fresh{turn - 1}" not in names, names
            added = f"fresh{turn}"
            assert (await server.call("add_tool", {"name": added})).content == "added"
            await until(lambda: added in [t.name for t in tools], "the list refreshed")  # noqa: B023
            (fresh,) = [t for t in tools if t.name == added]
            assert (await fresh.handler({})).content == f"I am {added}"
        assert not server.is_open
        assert set(children()) == before
        assert other_tasks() == set()
    assert len(set(pids)) == 3  # each entry started its own process
    assert server.tools is tools  # one list, refreshed in place, across entries


async def test_entering_a_server_that_is_open_is_refused_and_starts_nothing(
    changing: tuple[list[str], Path],
) -> None:
    command, _ = changing
    before = set(children())
    async with McpStdio(command[0], command[1:]) as server:
        (pid,) = set(children()) - before
        with pytest.raises(RuntimeError, match="already open"):
            async with server:
                raise AssertionError("entered twice")
        assert server.is_open and set(children()) - before == {pid}
        assert (await server.call("slow", {"seconds": 0.01})).content == "slept 0.01"
    assert set(children()) == before


# -- a failed initialize ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("init-exit", "initialize refused: no licence"),
        ("init-error", "unsupported client"),
        ("init-hang", "did not answer within 1 s"),
    ],
)
async def test_a_failed_initialize_leaves_nothing_behind_and_can_be_tried_again(
    hostile: tuple[list[str], Path], fault: str, said: str
) -> None:
    command, _ = hostile
    before, fds = set(children()), open_fds()
    server = McpStdio(
        command[0], [*command[1:], fault, "init-once"], name="hostile", connect_timeout=1
    )
    with pytest.raises(McpError, match=said):
        async with server:
            raise AssertionError("initialize failed: the body never runs")
    assert not server.is_open and not server.connected
    assert set(children()) == before
    assert other_tasks() == set()
    assert open_fds() == fds
    async with server:  # the server starts well the second time: the same object works
        assert "echo" in [t.name for t in server.tools]
        assert (await server.call("echo", {"a": 1})).content == '{"a": 1}'
    assert set(children()) == before
    assert open_fds() == fds


async def test_entering_cancelled_at_random_points_leaves_nothing_behind(
    changing: tuple[list[str], Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing is left either for the collector to complain of: a connection's future that
    nobody awaits any more was logged as "exception was never retrieved" (and that log, taken
    while the collector ran inside ``ast.parse``, broke Python 3.11's parser state)."""
    command, _ = changing
    pick = rng()
    before, fds = set(children()), open_fds()
    server = McpStdio(command[0], command[1:])
    async with server:  # how long entering takes on this machine now
        pass
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with server:
        took = loop.time() - started
    outcomes = set()
    for _ in range(ROUNDS):
        entering = asyncio.ensure_future(server.__aenter__())
        await asyncio.sleep(pick.uniform(0, took * 1.2))
        entering.cancel()
        try:
            await entering
        except asyncio.CancelledError:
            outcomes.add("cancelled")
        else:  # it was in before the cancel landed
            outcomes.add("entered")
            await server.__aexit__(None, None, None)
        assert not server.is_open
        await until(lambda: set(children()) == before, "the end of the server's process")
        assert other_tasks() == set()
    assert "cancelled" in outcomes
    assert open_fds() == fds  # collects the garbage, whose finalizers log what they find
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    async with server:
        assert (await server.call("slow", {"seconds": 0.01})).content == "slept 0.01"


# -- stderr ----------------------------------------------------------------------------------------


async def test_a_server_writing_megabytes_to_stderr_before_each_answer_never_stalls(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    server = McpStdio(
        command[0], [*command[1:], "stderr-noisy"], name="noisy", timeout=30, connect_timeout=30
    )
    async with server:  # initialize and tools/list: a megabyte of stderr before each answer
        assert "echo" in [t.name for t in server.tools]
        for n in range(5):
            assert (await server.call("echo", {"n": n})).content == f'{{"n": {n}}}'
        with pytest.raises(McpError, match="went away during the call") as info:
            await server.call("exit", {})
    assert "nnnn" in str(info.value) and len(str(info.value)) < 2_000  # a bounded tail


# -- cancelling one call ---------------------------------------------------------------------------


async def test_a_call_cancelled_at_random_points_leaves_the_connection_working(
    changing: tuple[list[str], Path], caplog: pytest.LogCaptureFixture
) -> None:
    command, _ = changing
    pick = rng()
    before = set(children())
    async with McpStdio(command[0], command[1:]) as server:
        (pid,) = set(children()) - before
        slow = next(t for t in server.tools if t.name == "slow")
        for n in range(ROUNDS):
            call = asyncio.ensure_future(slow.handler({"seconds": 5}))
            await asyncio.sleep(pick.uniform(0, 0.3))
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            seconds = 0.001 * (n + 1)
            after = await server.call("slow", {"seconds": seconds})
            assert after.content == f"slept {seconds}", after
            assert server.connected
            assert set(children()) - before == {pid}  # the same process: nothing restarted
    assert set(children()) == before
    assert other_tasks() == set()
    open_fds()  # collects the garbage, whose finalizers log what they find
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
