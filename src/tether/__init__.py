"""tether: the agentic loop. A model, tools and a conversation store in one bounded, streaming loop.

Every name here loads on first use, so ``import tether`` stays light and importing one layer
(``tether.messages``, say) never pulls in the engine above it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import Agent
    from .budget import CharBudget, ContextPolicy, Trim
    from .clock import Clock, SystemClock
    from .context import ContextStore, MemoryContextStore
    from .control import CancellationToken, Steering
    from .errors import (
        GuardrailError,
        MaxIterationsError,
        ModelStopError,
        RunCancelled,
        StreamContractError,
        StreamError,
        TetherError,
        ToolArgumentError,
        ToolNotFoundError,
        TransportError,
    )
    from .events import (
        ContextTrimmed,
        Error,
        IterationEnd,
        IterationStart,
        ReasoningDelta,
        Retrying,
        SessionEndEvent,
        SteeringInjected,
        StreamEvent,
        TextDelta,
        ToolDispatch,
        ToolInputDelta,
        ToolProgress,
        ToolResult,
        ToolUseStart,
    )
    from .mcp import McpError, McpStdio, McpStreamable, McpTool
    from .messages import (
        AudioBlock,
        ContentBlock,
        ImageBlock,
        Message,
        ReasoningBlock,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
    )
    from .middleware import Middleware, ModelRequest, ToolRequest
    from .providers import transport
    from .session import AgentSession, ConversationStore, OutputValidationError, ToolCallContext
    from .stream import AgentStream
    from .tools.decorator import tool
    from .tools.guards import Allow, CheckGuard, Deny, Guard, PermissionGuard, Rewrite, ToolCall
    from .tools.progress import report_progress
    from .tools.selector import ToolSelector, ToolSource
    from .tools.tool import Tool
    from .transports.base import CompletionTransport
    from .transports.retry import RetryPolicy
    from .types import StopReason, ToolSpec, Usage

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentSession",
    "AgentStream",
    "Allow",
    "AudioBlock",
    "CancellationToken",
    "CharBudget",
    "CheckGuard",
    "Clock",
    "CompletionTransport",
    "ContentBlock",
    "ContextPolicy",
    "ContextStore",
    "ContextTrimmed",
    "ConversationStore",
    "Deny",
    "Error",
    "Guard",
    "GuardrailError",
    "ImageBlock",
    "IterationEnd",
    "IterationStart",
    "MaxIterationsError",
    "McpError",
    "McpStdio",
    "McpStreamable",
    "McpTool",
    "MemoryContextStore",
    "Message",
    "Middleware",
    "ModelRequest",
    "ModelStopError",
    "OutputValidationError",
    "PermissionGuard",
    "ReasoningBlock",
    "ReasoningDelta",
    "RetryPolicy",
    "Retrying",
    "Rewrite",
    "RunCancelled",
    "SessionEndEvent",
    "Steering",
    "SteeringInjected",
    "StopReason",
    "StreamContractError",
    "StreamError",
    "StreamEvent",
    "SystemClock",
    "TetherError",
    "TextBlock",
    "TextDelta",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallContext",
    "ToolDispatch",
    "ToolInputDelta",
    "ToolNotFoundError",
    "ToolProgress",
    "ToolRequest",
    "ToolResult",
    "ToolResultBlock",
    "ToolSelector",
    "ToolSource",
    "ToolSpec",
    "ToolUseBlock",
    "ToolUseStart",
    "TransportError",
    "Trim",
    "Usage",
    "__version__",
    "report_progress",
    "tool",
    "transport",
]

_LAZY = {
    "Agent": "agent",
    "AgentSession": "session",
    "AgentStream": "stream",
    "Allow": "tools.guards",
    "AudioBlock": "messages",
    "CancellationToken": "control",
    "CharBudget": "budget",
    "CheckGuard": "tools.guards",
    "Clock": "clock",
    "CompletionTransport": "transports.base",
    "ContentBlock": "messages",
    "ContextPolicy": "budget",
    "ContextStore": "context",
    "ContextTrimmed": "events",
    "ConversationStore": "session",
    "Deny": "tools.guards",
    "Error": "events",
    "Guard": "tools.guards",
    "GuardrailError": "errors",
    "ImageBlock": "messages",
    "IterationEnd": "events",
    "IterationStart": "events",
    "MaxIterationsError": "errors",
    "McpError": "mcp",
    "McpStdio": "mcp",
    "McpStreamable": "mcp",
    "McpTool": "mcp",
    "MemoryContextStore": "context",
    "Message": "messages",
    "Middleware": "middleware",
    "ModelRequest": "middleware",
    "ModelStopError": "errors",
    "OutputValidationError": "session",
    "PermissionGuard": "tools.guards",
    "ReasoningBlock": "messages",
    "ReasoningDelta": "events",
    "RetryPolicy": "transports.retry",
    "Retrying": "events",
    "Rewrite": "tools.guards",
    "RunCancelled": "errors",
    "SessionEndEvent": "events",
    "Steering": "control",
    "SteeringInjected": "events",
    "StopReason": "types",
    "StreamContractError": "errors",
    "StreamError": "errors",
    "StreamEvent": "events",
    "SystemClock": "clock",
    "TetherError": "errors",
    "TextBlock": "messages",
    "TextDelta": "events",
    "Tool": "tools.tool",
    "ToolArgumentError": "errors",
    "ToolCall": "tools.guards",
    "ToolCallContext": "session",
    "ToolDispatch": "events",
    "ToolInputDelta": "events",
    "ToolNotFoundError": "errors",
    "ToolProgress": "events",
    "ToolRequest": "middleware",
    "ToolResult": "events",
    "ToolResultBlock": "messages",
    "ToolSelector": "tools.selector",
    "ToolSource": "tools.selector",
    "ToolSpec": "types",
    "ToolUseBlock": "messages",
    "ToolUseStart": "events",
    "TransportError": "errors",
    "Trim": "budget",
    "Usage": "types",
    "report_progress": "tools.progress",
    "tool": "tools.decorator",
    "transport": "providers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
