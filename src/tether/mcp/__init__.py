"""MCP tools for tether's loop: ``McpTool`` (defined in-process), ``McpStdio`` (a child process)
and ``McpStreamable`` (over HTTP, logging in with ``OAuth`` where the server asks for it), on the
official SDK (the ``mcp`` extra, loaded on first use); a server's resources and prompts
(``Resource``, ``ResourceTemplate``, ``Prompt``), the client's model for a server's sampling
requests (``Sampling``) and ``on_elicit`` for a server that asks the user for input mid-call
(``Elicitation``; without one, a call raises ``NeedsInput``, on which an agent's run pauses until
``Agent.resume(answers=)``, and the call run again reads them with ``resumed``: ``Answered``);
and the other way round, ``serve_agent``: an agent's tools, and the agent itself, as an MCP
server, where a tool that raises ``NeedsInput`` asks the client."""

from __future__ import annotations

from ..tools.needs_input import Answered, NeedsInput, resumed
from .elicitation import Elicitation, OnElicit
from .oauth import OAuth
from .prompts import Prompt, PromptArgument
from .resources import Resource, ResourceTemplate
from .sampling import Sampling, SamplingRequest
from .served import AgentServer, serve_agent
from .server import McpError, McpServer
from .stdio import McpStdio
from .streamable import McpStreamable
from .subscriptions import ResourceSubscription
from .tool import McpTool

__all__ = [
    "AgentServer",
    "Answered",
    "Elicitation",
    "McpError",
    "McpServer",
    "McpStdio",
    "McpStreamable",
    "McpTool",
    "NeedsInput",
    "OAuth",
    "OnElicit",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceSubscription",
    "ResourceTemplate",
    "Sampling",
    "SamplingRequest",
    "resumed",
    "serve_agent",
]
