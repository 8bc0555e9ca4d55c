"""The agent ``scripts/a2a-tck.sh`` serves to the A2A test kit: it answers every message with its
text, after a second (the kit's tests watch a task while it is working, as its own sample agent
lets them), and has one tool, so the card has a skill."""

from __future__ import annotations

import asyncio

from tether import Agent, tool
from tether.testing import Hold, Reply, ScriptedTransport
from tether.testing.common import Request

WORKING_FOR = 1.0  # seconds a task stays working


@tool
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


def answer(request: Request) -> Hold:
    """The message's text said back once ``WORKING_FOR`` seconds have passed."""
    later = asyncio.Event()
    asyncio.get_running_loop().call_later(WORKING_FOR, later.set)
    return Hold(later, Reply(f"You said: {request.last_message.text}", chunks=2))


agent = Agent("You answer.", ScriptedTransport([], then=answer), tools=[echo], name="tck")
