"""``A2AAgent``: an agent served elsewhere over A2A 1.0, used wherever a tether agent goes. It is
an ``Agent`` whose model is the remote agent (``A2ATransport``), so it is a handoff target and
runs with ``run``; ``as_tool()`` offers it to another agent as a tool whose calls stream the
remote agent's text and status as progress."""

from __future__ import annotations

import asyncio
import copy as _copy
from dataclasses import fields
from typing import Any, Self
from urllib.parse import urlsplit

from ..agent import Agent
from ..base.blocking import run_blocking
from ..tools.tool import Tool, tool_name
from .card import tool_description
from .remote import Remote
from .tool import remote_tool
from .transport import A2ATransport

__all__ = ["A2AAgent"]

DEFAULT_TIMEOUT = 300.0  # seconds one exchange with the remote agent may take


class A2AAgent(Agent):
    """The A2A agent at ``url`` (its card at ``<url>/.well-known/agent-card.json``).

    ``token`` is sent as a bearer token to the card's own host only: when the card names another
    host for its calls, the token is not sent there. One exchange may take ``timeout`` seconds;
    past them, or when the caller is cancelled, the remote task is cancelled. The card is
    fetched once, on first use or by ``await agent.card()``, and checked; it gives the agent's
    ``name`` and ``system`` (its description), which name its handoff tool (before the card is
    known, the name comes from the address: await ``card()`` first for the card's).
    """

    __slots__ = ("remote",)

    def __init__(
        self, url: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        remote = Remote(url, token, timeout)
        super().__init__(
            f"The remote agent at {remote.url}.", A2ATransport(remote), name=_address_name(remote)
        )
        self.remote = remote
        remote.on_card = self._named

    async def card(self) -> Any:
        """The remote agent's card (the SDK's ``AgentCard``), fetched once and checked; a
        ``TransportError`` says why it cannot be used."""
        return await self.remote.card()

    def _named(self, card: Any) -> None:
        """Take the agent's name and description from its card."""
        self.name, self.system = card.name, tool_description(card)

    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """This agent as a tool for another: one string parameter, ``input``, sent to the remote
        agent as a user message; its answer is the result, its streamed text and status notes
        the call's progress; calls of one run share one remote conversation; a remote task that
        asks for input pauses the run on its question (``RunPaused``; resume with
        ``answers={call id: {"question": {"answer": text}}}``). ``name`` and ``description``
        default to the card's name and its description with its skills: the card is fetched
        here when it is not known yet (in async code, ``await agent.card()`` first)."""
        if name is None or description is None:
            self._known_card()
        return remote_tool(
            self.remote,
            tool_name(self.name) if name is None else name,
            self.system if description is None else description,
        )

    def _known_card(self) -> None:
        if self.remote.known is not None:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run_blocking(self.card())
            return
        raise RuntimeError(
            f"A2AAgent({self.remote.url!r}).as_tool() needs the agent's card for its name and "
            "description: in async code, `await agent.card()` first (or give name= and "
            "description=)"
        )

    def copy(self, **overrides: Any) -> Self:
        """A new agent with some fields replaced, calling the same remote agent."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"A2AAgent.copy: no field(s) {', '.join(unknown)}")
        other = _copy.copy(self)
        for key, value in overrides.items():
            setattr(other, key, value)
        return other


def _address_name(remote: Remote) -> str:
    parts = urlsplit(remote.url)
    return tool_name(f"{parts.hostname}_{parts.port or ''}{parts.path}")
