"""tether: the agentic loop. A model, tools and a conversation store in one bounded, streaming loop.

Every name here loads on first use, so ``import tether`` stays light and importing one layer
(``tether.messages``, say) never pulls in the engine above it.

Public modules: ``tether``, ``tether.a2a``, ``tether.cli``, ``tether.durable``,
``tether.errors``, ``tether.evals``, ``tether.local``, ``tether.loop``, ``tether.mcp``,
``tether.prompty``, ``tether.serve``, ``tether.session``, ``tether.skills``,
``tether.skills.hooks``, ``tether.stores``, ``tether.testing``, ``tether.tracing``,
``tether.transports``.
Every other module is internal: its names may move; import them from ``tether`` or a public
module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The public names, each with the module it loads from. ``__all__`` is this table; the imports
# below repeat it for type checkers only (tests/test_public_api.py keeps the two equal).
_LAZY = {
    "Agent": "agent",
    "AgentSession": "session",
    "AgentStream": "loop",
    "Allow": "tools.guards",
    "AllowAllGuard": "tools.guards",
    "AudioBlock": "messages",
    "CancellationToken": "loop",
    "CharBudget": "context",
    "CheckGuard": "tools.guards",
    "CircuitBreaker": "transports.fallback",
    "Clock": "base.clock",
    "CompletionTransport": "transports.base",
    "ConcurrentGuard": "tools.guards",
    "ContentBlock": "messages",
    "ContextPolicy": "context",
    "ContextStore": "context",
    "Compacted": "events",
    "Compaction": "context",
    "CompactionFailed": "events",
    "ContextTrimmed": "events",
    "ConversationStore": "session",
    "Deny": "tools.guards",
    "DenyAllGuard": "tools.guards",
    "Error": "events",
    "FallbackTransport": "transports.fallback",
    "Guard": "tools.guards",
    "GuardDecision": "tools.decisions",
    "GuardError": "errors",
    "GuardrailError": "errors",
    "Handoff": "events",
    "ImageBlock": "messages",
    "IterationEnd": "events",
    "IterationStart": "events",
    "LimitExceeded": "errors",
    "Limits": "loop",
    "MaxIterationsError": "errors",
    "McpError": "mcp",
    "McpStdio": "mcp",
    "McpStreamable": "mcp",
    "McpTool": "mcp",
    "MemoryContextStore": "context",
    "Message": "messages",
    "Middleware": "loop",
    "ModelRequest": "loop",
    "ModelStopError": "errors",
    "OutputValidationError": "errors",
    "PendingCall": "events",
    "PermissionGuard": "tools.guards",
    "ReasoningBlock": "messages",
    "ReasoningDelta": "events",
    "RetryPolicy": "transports.retry",
    "Retrying": "events",
    "RunPaused": "errors",
    "Rewrite": "tools.guards",
    "RunCancelled": "errors",
    "RunRequest": "loop",
    "SessionEndEvent": "events",
    "Steering": "loop",
    "SteeringInjected": "events",
    "StopReason": "types",
    "StreamContractError": "errors",
    "StreamError": "errors",
    "StreamEvent": "events",
    "SystemClock": "base.clock",
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
    "ToolRequest": "loop",
    "ToolResult": "events",
    "ToolResultBlock": "messages",
    "ToolSearch": "tools.search",
    "ToolSelector": "tools.selector",
    "ToolSource": "tools.selector",
    "ToolSpec": "types",
    "ToolUseBlock": "messages",
    "ToolUseStart": "events",
    "TransportError": "errors",
    "Trim": "context",
    "Usage": "types",
    "report_progress": "tools.progress",
    "report_usage": "tools.progress",
    "tool": "tools.decorator",
    "transport": "providers",
}

if TYPE_CHECKING:
    from .agent import Agent as Agent
    from .base.clock import Clock as Clock
    from .base.clock import SystemClock as SystemClock
    from .context import CharBudget as CharBudget
    from .context import Compaction as Compaction
    from .context import ContextPolicy as ContextPolicy
    from .context import ContextStore as ContextStore
    from .context import MemoryContextStore as MemoryContextStore
    from .context import Trim as Trim
    from .errors import GuardError as GuardError
    from .errors import GuardrailError as GuardrailError
    from .errors import LimitExceeded as LimitExceeded
    from .errors import MaxIterationsError as MaxIterationsError
    from .errors import ModelStopError as ModelStopError
    from .errors import OutputValidationError as OutputValidationError
    from .errors import RunCancelled as RunCancelled
    from .errors import RunPaused as RunPaused
    from .errors import StreamContractError as StreamContractError
    from .errors import StreamError as StreamError
    from .errors import TetherError as TetherError
    from .errors import ToolArgumentError as ToolArgumentError
    from .errors import ToolNotFoundError as ToolNotFoundError
    from .errors import TransportError as TransportError
    from .events import Compacted as Compacted
    from .events import CompactionFailed as CompactionFailed
    from .events import ContextTrimmed as ContextTrimmed
    from .events import Error as Error
    from .events import Handoff as Handoff
    from .events import IterationEnd as IterationEnd
    from .events import IterationStart as IterationStart
    from .events import PendingCall as PendingCall
    from .events import ReasoningDelta as ReasoningDelta
    from .events import Retrying as Retrying
    from .events import SessionEndEvent as SessionEndEvent
    from .events import SteeringInjected as SteeringInjected
    from .events import StreamEvent as StreamEvent
    from .events import TextDelta as TextDelta
    from .events import ToolDispatch as ToolDispatch
    from .events import ToolInputDelta as ToolInputDelta
    from .events import ToolProgress as ToolProgress
    from .events import ToolResult as ToolResult
    from .events import ToolUseStart as ToolUseStart
    from .loop import AgentStream as AgentStream
    from .loop import CancellationToken as CancellationToken
    from .loop import Limits as Limits
    from .loop import Middleware as Middleware
    from .loop import ModelRequest as ModelRequest
    from .loop import RunRequest as RunRequest
    from .loop import Steering as Steering
    from .loop import ToolRequest as ToolRequest
    from .mcp import McpError as McpError
    from .mcp import McpStdio as McpStdio
    from .mcp import McpStreamable as McpStreamable
    from .mcp import McpTool as McpTool
    from .messages import AudioBlock as AudioBlock
    from .messages import ContentBlock as ContentBlock
    from .messages import ImageBlock as ImageBlock
    from .messages import Message as Message
    from .messages import ReasoningBlock as ReasoningBlock
    from .messages import TextBlock as TextBlock
    from .messages import ToolResultBlock as ToolResultBlock
    from .messages import ToolUseBlock as ToolUseBlock
    from .providers import transport as transport
    from .session import AgentSession as AgentSession
    from .session import ConversationStore as ConversationStore
    from .session import ToolCallContext as ToolCallContext
    from .tools.decisions import GuardDecision as GuardDecision
    from .tools.decorator import tool as tool
    from .tools.guards import Allow as Allow
    from .tools.guards import AllowAllGuard as AllowAllGuard
    from .tools.guards import CheckGuard as CheckGuard
    from .tools.guards import ConcurrentGuard as ConcurrentGuard
    from .tools.guards import Deny as Deny
    from .tools.guards import DenyAllGuard as DenyAllGuard
    from .tools.guards import Guard as Guard
    from .tools.guards import PermissionGuard as PermissionGuard
    from .tools.guards import Rewrite as Rewrite
    from .tools.guards import ToolCall as ToolCall
    from .tools.progress import report_progress as report_progress
    from .tools.progress import report_usage as report_usage
    from .tools.search import ToolSearch as ToolSearch
    from .tools.selector import ToolSelector as ToolSelector
    from .tools.selector import ToolSource as ToolSource
    from .tools.tool import Tool as Tool
    from .transports.base import CompletionTransport as CompletionTransport
    from .transports.fallback import CircuitBreaker as CircuitBreaker
    from .transports.fallback import FallbackTransport as FallbackTransport
    from .transports.retry import RetryPolicy as RetryPolicy
    from .types import StopReason as StopReason
    from .types import ToolSpec as ToolSpec
    from .types import Usage as Usage

__version__ = "0.1.0"

__all__ = list(_LAZY)
__all__.append("__version__")


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
