"""Handoffs: ``Agent(handoffs=[other, ...])`` offers the model ``transfer_to_{other.name}`` (no
arguments); calling it hands the rest of the run to ``other`` on the same context. The run keeps
one ``Handoffs`` (only when the agent has handoffs) for the agent answering now: the transfer
tools it offers, the transfer its reply asked for, which the loop takes after the reply's calls
are stored, and the ``Handoff`` event told before the next iteration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..events import Handoff
from ..messages import Message, ToolResultBlock
from ..tools.tool import Tool, tool_name

if TYPE_CHECKING:
    from .config import AgentConfig

__all__ = ["Handoffs", "resumer", "transfer_name"]

_EMPTY_SCHEMA = {"type": "object", "properties": {}}


def transfer_name(agent: AgentConfig) -> str:
    """The tool that hands a run to ``agent``: ``transfer_to_`` and its name, made a valid
    tool name."""
    return ("transfer_to_" + tool_name(agent.name))[:64]


def resumer(agent: AgentConfig, name: str) -> AgentConfig:
    """The agent called ``name`` that a resume by ``agent`` goes on as: ``agent`` itself or one
    it hands off to, at any depth (handoffs may form cycles: each agent is looked at once);
    ``ValueError`` if there is none."""
    seen: set[int] = set()
    queue = [agent]
    for candidate in queue:
        if candidate.name == name:
            return candidate
        seen.add(id(candidate))
        queue.extend(other for other in candidate.handoffs if id(other) not in seen)
    raise ValueError(
        f"the paused calls were made by the agent {name!r}, which {agent.name!r} does not "
        "hand off to: resume with that agent"
    )


class Handoffs:
    """The transfer tools of the agent answering now, the agent a call of one chose (the first
    call of a reply wins; another in the same reply is refused), and the handoff to tell."""

    __slots__ = ("notice", "target", "tools")

    def __init__(self, agent: AgentConfig) -> None:
        self.target: AgentConfig | None = None
        self.tools: Sequence[Tool] = ()
        self.notice: Handoff | None = None  # told before the next iteration
        self.offer(agent)

    def offer(self, agent: AgentConfig) -> None:
        """Offer ``agent``'s handoffs; any transfer chosen before is forgotten."""
        self.target = None
        self.tools = tuple(self._tool(other) for other in agent.handoffs)

    def take(self) -> AgentConfig | None:
        """The agent a transfer chose, once."""
        target, self.target = self.target, None
        return target

    def taken(self, current: AgentConfig) -> AgentConfig | None:
        """The agent a transfer chose (once), the ``Handoff`` from ``current`` to it noted to
        be told; None when the reply chose none."""
        target = self.take()
        if target is not None:
            self.notice = Handoff(current.name, target.name)
        return target

    def tell(self) -> Handoff | None:
        """The handoff to tell before the next iteration, once."""
        notice, self.notice = self.notice, None
        return notice

    @staticmethod
    def named(message: Message, agent: AgentConfig) -> Message:
        """A reply's message saying which agent answered."""
        return Message(message.role, message.content, agent.name)

    def _tool(self, other: AgentConfig) -> Tool:
        first = next((line for line in other.system.splitlines() if line.strip()), "")
        about = f": {first.strip()}" if first else ""

        def transfer() -> str | ToolResultBlock:
            if self.target is not None:
                text = f"Not transferred: this reply already hands the run to {self.target.name}."
                return ToolResultBlock("", text, True)
            self.target = other
            return (  # what the target reads last: who it is now, and that the request is its
                f"Transferred to {other.name}. You are now the {other.name} agent: carry on with "
                "the user's request above, using your own tools."
            )

        description = f"Hand the rest of this conversation to the {other.name} agent{about}"
        return Tool(transfer_name(other), transfer, description, schema=_EMPTY_SCHEMA)
