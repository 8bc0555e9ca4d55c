"""``tether worker`` and ``tether run --durable``: durable agents on Temporal from the terminal.
Temporal is imported only here, and only when one of them runs."""

from __future__ import annotations

import argparse
import asyncio
import signal
import time
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from ..agent import Agent
from ..types import Usage
from .args import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .loading import ToolSpecError, load_attribute
from .render import TurnOutcome
from .terminal import error_line, safe_text

if TYPE_CHECKING:
    from ..durable import TemporalAgent

__all__ = ["command_durable_run", "command_worker", "load_durable"]


def load_durable(spec: str) -> TemporalAgent:
    """The durable agent ``MODULE:ATTR`` names: a ``TemporalAgent``, or an ``Agent`` made one
    under the name ATTR."""
    from ..durable import TemporalAgent  # noqa: PLC0415

    value = load_attribute(spec, "--agent")
    if isinstance(value, TemporalAgent):
        return value
    if isinstance(value, Agent):
        return TemporalAgent(value, name=spec.rpartition(":")[2])
    raise ToolSpecError(f"--agent {spec}: a {type(value).__name__}, not an Agent or TemporalAgent")


def _load_all(opts: argparse.Namespace, err: Console) -> list[TemporalAgent] | None:
    try:
        return [load_durable(spec) for spec in opts.agent]
    except (ToolSpecError, TypeError, ValueError) as exc:
        err.print(error_line(str(exc)), soft_wrap=True)
        return None


def command_worker(opts: argparse.Namespace, err: Console) -> int:
    """``tether worker``: serve durable agents on a task queue until SIGINT or SIGTERM."""
    agents = _load_all(opts, err)
    if agents is None:
        return EXIT_USAGE
    try:
        asyncio.run(_serve(agents, opts, err))
    except (OSError, RuntimeError) as exc:
        err.print(error_line(f"{type(exc).__name__}: {exc}"), soft_wrap=True)
        return EXIT_FAILED
    return EXIT_OK


async def _serve(agents: list[TemporalAgent], opts: argparse.Namespace, err: Console) -> None:
    from temporalio.client import Client  # noqa: PLC0415

    from ..durable import TemporalAgent  # noqa: PLC0415

    client = await Client.connect(opts.address, namespace=opts.namespace)
    worker = TemporalAgent.serving(
        agents,
        client,
        opts.task_queue,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=opts.sticky_timeout),
        graceful_shutdown_timeout=timedelta(seconds=5),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        for agent in agents:  # tool sources first: the worker takes runs once it starts
            await stack.enter_async_context(agent.connected())
        await stack.enter_async_context(worker)
        names = ", ".join(a.name for a in agents)
        err.print(
            safe_text(f"worker ready: {names} on task queue {opts.task_queue!r} at {opts.address}")
        )
        await stop.wait()


def command_durable_run(
    opts: argparse.Namespace, out: Console, err: Console, prompt: str, renderer: Any
) -> int:
    """``tether run --durable``: start a run through the workers, stream it, report its end.
    Ctrl-C stops watching, not the run: it goes on and its id is printed."""
    agents = _load_all(opts, err)
    if agents is None:
        return EXIT_USAGE
    if len(agents) != 1:
        err.print(error_line("tether run --durable takes one --agent"))
        return EXIT_USAGE
    watching: list[str] = []
    try:
        outcome = asyncio.run(_durable_run(agents[0], opts, prompt, renderer, watching))
    except KeyboardInterrupt:
        where = f" as {watching[0]}" if watching else ""
        err.print(Text(f"stopped watching; the run goes on{where}", style="yellow"))
        return EXIT_INTERRUPTED
    except (OSError, RuntimeError) as exc:
        err.print(error_line(f"{type(exc).__name__}: {exc}"), soft_wrap=True)
        return EXIT_FAILED
    if outcome.error is not None:
        err.print(error_line(str(outcome.error)), soft_wrap=True)
        return EXIT_FAILED
    return EXIT_OK


async def _durable_run(
    agent: TemporalAgent,
    opts: argparse.Namespace,
    prompt: str,
    renderer: Any,
    watching: list[str],
) -> TurnOutcome:
    from temporalio.client import Client  # noqa: PLC0415

    from ..stores.jsonforms import exception_from_dict  # noqa: PLC0415

    started = time.monotonic()
    client = await Client.connect(opts.address, namespace=opts.namespace)
    run = await agent.start(client, prompt, task_queue=opts.task_queue, id=opts.id)
    watching.append(run.id)
    renderer.begin()
    async for event in run.events():
        renderer.event(event)
    output = await run.result()
    outcome = TurnOutcome(
        output.answer,
        Usage(**output.usage),
        output.iterations,
        time.monotonic() - started,
        error=None if output.error is None else exception_from_dict(output.error),
        cancelled=output.stop_reason == "cancelled",
    )
    renderer.end(outcome)
    return outcome
