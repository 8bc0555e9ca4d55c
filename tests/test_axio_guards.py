"""axio's permission guards on tether: ``PermissionGuard`` and its stock subclasses
(``AllowAllGuard``, ``DenyAllGuard``, ``ConcurrentGuard``, ``GuardError``) called axio's way,
``await guard(tool, **kwargs)``, and by the agent's dispatcher; and, for every kind of guard
tether runs, a guard that raises is a denial: the handler is never called and the run goes on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

import tether
from tether import (
    Agent,
    AllowAllGuard,
    ConcurrentGuard,
    DenyAllGuard,
    GuardError,
    MemoryContextStore,
    PermissionGuard,
    SessionEndEvent,
    StopReason,
    TetherError,
    Tool,
    ToolCall,
    ToolResult,
)
from tether.testing import Call, Reply, ScriptedTransport


def counted_echo(calls: list[dict[str, Any]], guards: list[Any]) -> Tool:
    """An echo tool that records each time its handler really runs."""

    async def echo(msg: str) -> str:
        calls.append({"msg": msg})
        return json.dumps({"msg": msg})

    return Tool("echo", echo, "Echo msg.", guards=guards)


async def run_calls(tool: Tool, *msgs: str, agent_guards: list[Any] | None = None) -> Any:
    """A real run on a scripted model: one echo call per ``msg`` in one reply, then an answer."""
    calls = [Call("echo", {"msg": m}, id=f"c{i}") for i, m in enumerate(msgs, start=1)]
    transport = ScriptedTransport([Reply(tool_calls=calls), Reply("done")])
    agent = Agent("s", transport, tools=[tool], guards=list(agent_guards or []))
    store = MemoryContextStore()
    events = [e async for e in agent.run_stream("go", store)]
    return events, store


# --------------------------------------------------------------------------------------------
# The stock guards, as axio's users import and call them


def test_the_stock_guards_are_public_permission_guards() -> None:
    for name in ("AllowAllGuard", "DenyAllGuard", "ConcurrentGuard", "GuardError"):
        assert name in tether.__all__
    assert isinstance(AllowAllGuard(), PermissionGuard)
    assert isinstance(DenyAllGuard(), PermissionGuard)
    assert issubclass(ConcurrentGuard, PermissionGuard)
    assert issubclass(GuardError, TetherError)
    with pytest.raises(TypeError, match="abstract"):
        ConcurrentGuard()  # type: ignore[abstract]


async def test_allow_all_returns_the_arguments_called_either_way() -> None:
    tool = Tool("t", lambda: "")
    guard = AllowAllGuard()
    assert await guard.check(tool, x=1, y="hello") == {"x": 1, "y": "hello"}
    assert await guard(tool, x=1, y="hello") == {"x": 1, "y": "hello"}  # axio's Tool calls this
    assert await guard(ToolCall("c1", "t", {"x": 1}, tool, 1)) is None  # tether's: allow


async def test_deny_all_raises_guard_error_and_denies_in_a_run() -> None:
    tool = Tool("t", lambda: "")
    with pytest.raises(GuardError, match="denied"):
        await DenyAllGuard().check(tool)
    with pytest.raises(GuardError, match="denied"):
        await DenyAllGuard()(tool, x=1)
    calls: list[dict[str, Any]] = []
    events, store = await run_calls(counted_echo(calls, [DenyAllGuard()]), "hi")
    assert calls == []
    (result,) = store.messages[2].tool_results
    assert result.is_error and result.text == "Tool call denied: denied"
    assert isinstance(events[-1], SessionEndEvent)
    assert events[-1].stop_reason is StopReason.END_TURN


class Counting(ConcurrentGuard):
    """Counts how many checks run at once; each check yields to the loop a few times."""

    concurrency = 2

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.most = 0

    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        self.running += 1
        self.most = max(self.most, self.running)
        for _ in range(3):
            await asyncio.sleep(0)
        self.running -= 1
        return kwargs


async def test_concurrent_guard_caps_checks_called_axio_style() -> None:
    guard = Counting()
    tool = Tool("t", lambda: "")
    await asyncio.gather(*(guard(tool, n=i) for i in range(10)))
    assert guard.most == 2


async def test_concurrent_guard_caps_checks_in_a_run() -> None:
    """The dispatcher runs the six calls of one reply at once; the guard lets two check at a
    time (its ``check`` alone would have let all six in)."""
    guard = Counting()
    calls: list[dict[str, Any]] = []
    _, store = await run_calls(counted_echo(calls, [guard]), *"abcdef")
    assert guard.most == 2
    assert sorted(c["msg"] for c in calls) == list("abcdef")
    assert not any(r.is_error for r in store.messages[2].tool_results)


async def test_concurrent_guard_releases_its_slot_when_check_raises() -> None:
    class Refuses(ConcurrentGuard):
        async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
            raise GuardError("nope")

    guard = Refuses()
    tool = Tool("t", lambda: "")
    for _ in range(3):
        with pytest.raises(GuardError, match="nope"):
            await asyncio.wait_for(guard(tool), 1)
    assert ConcurrentGuard.concurrency == 1
    calls: list[dict[str, Any]] = []
    _, store = await run_calls(counted_echo(calls, [guard]), "a", "b")
    assert calls == []
    assert [r.text for r in store.messages[2].tool_results] == ["Tool call denied: nope"] * 2


async def test_a_guard_that_overrides_call_is_run_through_it() -> None:
    """axio's ``Tool`` calls ``await guard(tool, **kwargs)``: a subclass that wraps ``__call__``
    (to audit, to serialise) is run through that wrapper, not around it."""
    seen: list[str] = []

    class Audited(PermissionGuard):
        async def __call__(self, tool: Any, /, **kwargs: Any) -> Any:
            seen.append(f"call {tool.name} {kwargs}")
            return await super().__call__(tool, **kwargs)

        async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
            seen.append("check")
            return {**kwargs, "msg": kwargs["msg"] + "!"}

    calls: list[dict[str, Any]] = []
    await run_calls(counted_echo(calls, [Audited()]), "hi")
    assert seen == ["call echo {'msg': 'hi'}", "check"]
    assert calls == [{"msg": "hi!"}]


async def test_a_guard_returning_no_mapping_is_an_error_not_a_call() -> None:
    class Confused(PermissionGuard):
        async def check(self, tool: Tool, **kwargs: Any) -> Any:
            return ["not", "arguments"]

    calls: list[dict[str, Any]] = []
    _, store = await run_calls(counted_echo(calls, [Confused()]), "hi")
    assert calls == []
    (result,) = store.messages[2].tool_results
    assert result.is_error and "expected the arguments" in result.text


# --------------------------------------------------------------------------------------------
# Every kind of guard: one that raises is a denial, the handler never runs, the run goes on


def sync_callable(call: ToolCall) -> None:
    raise PermissionError("sync callable says no")


async def async_callable(call: ToolCall) -> None:
    await asyncio.sleep(0)
    raise PermissionError("async callable says no")


class SyncCheck:  # a CheckGuard (duck-typed, no base class) with a plain check
    def check(self, tool: Tool, **arguments: Any) -> Any:
        raise PermissionError("sync check says no")


class AsyncCheck:  # a CheckGuard whose check is a coroutine
    async def check(self, tool: Tool, **arguments: Any) -> Any:
        raise PermissionError("async check says no")


class Subclassed(PermissionGuard):
    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        raise ValueError("guard crashed")


class SerialRefusal(ConcurrentGuard):
    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        raise GuardError("serial says no")


class RaisesWhenCalled(PermissionGuard):
    """Fails in ``__call__`` itself, before any ``check``."""

    async def __call__(self, tool: Any, /, **kwargs: Any) -> Any:
        raise RuntimeError("call failed")

    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        return kwargs


GUARDS: dict[str, tuple[Callable[[], Any], str]] = {
    "sync callable": (lambda: sync_callable, "sync callable says no"),
    "async callable": (lambda: async_callable, "async callable says no"),
    "CheckGuard, sync check": (SyncCheck, "sync check says no"),
    "CheckGuard, async check": (AsyncCheck, "async check says no"),
    "PermissionGuard": (Subclassed, "guard crashed"),
    "ConcurrentGuard": (SerialRefusal, "serial says no"),
    "DenyAllGuard": (DenyAllGuard, "denied"),
    "PermissionGuard failing in __call__": (RaisesWhenCalled, "call failed"),
}


@pytest.mark.parametrize("where", ["tool", "agent"])
@pytest.mark.parametrize("kind", GUARDS)
async def test_a_raising_guard_denies_and_the_handler_never_runs(kind: str, where: str) -> None:
    make, message = GUARDS[kind]
    calls: list[dict[str, Any]] = []
    guard = make()
    tool = counted_echo(calls, [guard] if where == "tool" else [])
    events, store = await run_calls(
        tool, "a", "b", agent_guards=[guard] if where == "agent" else []
    )
    assert calls == []
    results = store.messages[2].tool_results
    assert [r.tool_use_id for r in results] == ["c1", "c2"]
    assert all(r.is_error and message in r.text for r in results)
    tool_events = [e for e in events if isinstance(e, ToolResult)]
    assert [e.is_error for e in tool_events] == [True, True]
    assert isinstance(events[-1], SessionEndEvent)
    assert events[-1].stop_reason is StopReason.END_TURN and events[-1].error is None
    assert store.messages[-1].text == "done"


async def test_a_raising_guard_after_a_rewrite_still_denies() -> None:
    calls: list[dict[str, Any]] = []
    tool = counted_echo(calls, [AllowAllGuard(), Subclassed()])
    _, store = await run_calls(tool, "a", agent_guards=[lambda call: None])
    assert calls == []
    (result,) = store.messages[2].tool_results
    assert result.is_error and "guard crashed" in result.text
