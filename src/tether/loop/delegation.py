"""``Agent.as_tool``: an agent offered to another as a tool with one string parameter, ``input``.

Each call is a run of the sub-agent on a fresh ``MemoryContextStore`` with ``input`` as its user
message; its answer is the result (a typed agent's output as JSON). The run goes on in the call's
own task and context, so its spans nest under the call's and cancelling the call stops it; its
iterations, tool calls and text reach the caller as the call's ``ToolProgress``, its tokens the
caller's total (``report_usage``); a failure of the run is the call's error result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..context import ContextStore, MemoryContextStore
from ..events import (
    IterationEnd,
    IterationStart,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolProgress,
)
from ..tools.agent_input import input_schema, read_input
from ..tools.progress import ProgressSink, detached
from ..tools.tool import Tool, tool_name
from .output import spec_for
from .stream import AgentStream

__all__ = ["SubAgent", "agent_tool"]

_TEXT_CHUNK = 200  # characters of streamed text per progress report


class SubAgent(Protocol):
    """What ``agent_tool`` needs of an agent (``Agent`` is one)."""

    name: str
    system: str
    output_type: Any
    max_iterations: int
    approval: Any
    handoffs: Sequence[Any]

    def run_stream(self, user_message: str, context: ContextStore | None = None) -> AgentStream: ...


def agent_tool(agent: SubAgent, name: str | None = None, description: str | None = None) -> Tool:
    """``agent`` as a tool (see the module); ``name`` defaults to the agent's name made a valid
    tool name, ``description`` to the first line of its system prompt. An agent whose calls wait
    for a person cannot be one: its run is not stored where a resume could find it."""
    gated = _held_by(agent)
    if gated is not None:
        whose = "" if gated is agent else f"hands off to {gated.name!r}, which "
        raise ValueError(
            f"the agent {agent.name!r} {whose}has approval= and cannot be a tool: a sub-agent's "
            "run is not stored, so a call held for a person could never be resumed. Hold the "
            "delegating call instead: approval={<the tool's name>} on the calling agent"
        )
    return Tool(
        tool_name(agent.name) if name is None else name,
        _Delegation(agent),
        _description(agent) if description is None else description,
        schema=input_schema(
            f"The message for the {agent.name} agent: the whole task, as it sees nothing else."
        ),
        validator=read_input,
        reports_progress=True,
    )


def _held_by(agent: SubAgent) -> SubAgent | None:
    """The first agent with ``approval=`` that a run of ``agent`` may reach: itself, or one it
    hands off to at any depth (each agent looked at once)."""
    seen: set[int] = set()
    waiting = [agent]
    while waiting:
        current = waiting.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if current.approval is not None:
            return current
        waiting.extend(current.handoffs)
    return None


def _description(agent: SubAgent) -> str:
    for line in agent.system.splitlines():
        if line.strip():
            return line.strip()
    return f"Ask the {agent.name} agent"


class _Delegation:
    """The handler of an agent's tool: each call one run of the agent."""

    __slots__ = ("agent",)

    def __init__(self, agent: SubAgent) -> None:
        self.agent = agent

    async def __call__(self, input: str) -> str:
        """The run's answer; raises the error that ended it (the dispatcher's error result)."""
        agent = self.agent
        with detached() as (progress, usage):  # the run's own calls report to the run
            stream = agent.run_stream(input, MemoryContextStore())
            try:
                async with stream:
                    await _follow(stream, progress, agent.max_iterations)
            finally:
                if usage is not None:
                    usage(stream.usage)
        if agent.output_type is None:
            return await stream.get_final_text()
        value = await stream.get_output()
        text: str = spec_for(agent.output_type).adapter.dump_json(value).decode()
        return text


async def _follow(stream: AgentStream, sink: ProgressSink | None, total: int) -> None:
    """Read the run to its end, its events as progress reports to ``sink`` (if any)."""
    if sink is None:
        async for _ in stream:
            pass
        return
    relay = _Relay(sink, total)
    async for event in stream:
        relay.see(event)
    relay.flush()


class _Relay:
    """A sub-run's events as progress reports of the call that runs it: one per iteration and
    per tool call, its text in chunks of ``_TEXT_CHUNK`` characters or at a reply's end (never a
    report per token). The progress is the sub-run's iteration, of its ``max_iterations``."""

    __slots__ = ("iteration", "sink", "size", "text", "total")

    def __init__(self, sink: ProgressSink, total: int) -> None:
        self.sink, self.total = sink, total
        self.iteration = 0
        self.text: list[str] = []
        self.size = 0

    def see(self, event: StreamEvent) -> None:
        """Take the sub-run's next event."""
        kind = type(event)
        if kind is TextDelta:
            assert isinstance(event, TextDelta)
            self.text.append(event.delta)
            self.size += len(event.delta)
            if self.size >= _TEXT_CHUNK:
                self.flush()
        elif kind is IterationStart:
            assert isinstance(event, IterationStart)
            self.iteration = event.iteration
            self.report(f"iteration {event.iteration}")
        elif kind is IterationEnd:
            self.flush()
        elif kind is ToolDispatch:
            assert isinstance(event, ToolDispatch)
            self.report(f"calling {event.name}")
        elif kind is ToolProgress:
            assert isinstance(event, ToolProgress)
            if event.message:
                self.report(f"{event.name}: {event.message}")

    def flush(self) -> None:
        """Report the text gathered so far, if any."""
        if self.text:
            text = "".join(self.text)
            self.text.clear()
            self.size = 0
            self.report(text)

    def report(self, message: str) -> None:
        self.sink(self.iteration, self.total, message)
