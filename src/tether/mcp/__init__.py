"""MCP tools for tether's loop: ``McpTool`` (defined in-process), ``McpStdio`` (a child process)
and ``McpStreamable`` (over HTTP), on the official SDK (the ``mcp`` extra, loaded on first use);
and the other way round, ``serve_agent``: an agent's tools, and the agent itself, as an MCP
server. A server that asks the user for input mid-call is answered by ``on_elicit``
(``Elicitation``); without one, a call raises ``NeedsInput``, on which an agent's run pauses
until ``Agent.resume(answers=)``."""

from __future__ import annotations

from ..tools.needs_input import NeedsInput
from .elicitation import Elicitation, OnElicit
from .served import AgentServer, serve_agent
from .server import McpError, McpServer
from .stdio import McpStdio
from .streamable import McpStreamable
from .tool import McpTool

__all__ = [
    "AgentServer",
    "Elicitation",
    "McpError",
    "McpServer",
    "McpStdio",
    "McpStreamable",
    "McpTool",
    "NeedsInput",
    "OnElicit",
    "serve_agent",
]
