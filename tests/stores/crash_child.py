"""Run agent loops on a SQLiteStore until killed, telling the parent each append that returned.

    python crash_child.py sqlite|file|postgres PLACE

Each acknowledged append is written to stdout as "ACK <session> <position>" right after it
returns, so the parent knows what must survive a SIGKILL."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from backends import make

from tether import Agent, Message, Tool
from tether.testing import Call, Reply, ScriptedTransport


class Acknowledged:
    """A context that reports each append once it returned (it is durable then)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.count = 0

    async def append(self, message: Message) -> None:
        await self.inner.append(message)
        sys.stdout.write(f"ACK {self.session_id} {self.count}\n")
        sys.stdout.flush()
        self.count += 1

    async def get_history(self) -> list[Message]:
        history: list[Message] = await self.inner.get_history()
        self.count = len(history)
        return history

    async def fork(self) -> Any:
        return await self.inner.fork()

    async def clear(self) -> None:
        await self.inner.clear()


async def main(kind: str, place: str) -> None:
    async def work(n: int) -> str:
        await asyncio.sleep(0.001)
        return f"worked {n}"

    async with make(kind, place) as store:
        print("READY", flush=True)
        for run in range(10_000):
            calls = [Call("work", {"n": run}), Call("work", {"n": run + 1})]
            model = ScriptedTransport(
                [Reply(tool_calls=calls), Reply(tool_calls=calls[:1]), Reply("done")]
            )
            agent = Agent("s", model, tools=[Tool("work", work)])
            context = Acknowledged(await store.open(f"s{run % 7}"))
            await context.get_history()
            await agent.run(f"run {run}", context)  # type: ignore[arg-type]


asyncio.run(main(sys.argv[1], sys.argv[2]))
