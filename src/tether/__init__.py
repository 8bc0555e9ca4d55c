"""tether: the agentic loop. A model, tools and a conversation store in one bounded, streaming loop.

``import tether`` stays light: pydantic (for ``@tool``) is imported on first use of ``tool``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agent import Agent
from .context import ContextStore, MemoryContextStore
from .errors import (
    GuardrailError,
    MaxIterationsError,
    ModelStopError,
    RunCancelled,
    StreamContractError,
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
    ToolResult,
    ToolUseStart,
)
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
from .stream import AgentStream
from .tools.guards import Allow, Deny, Guard, Rewrite, ToolCall
from .tools.selector import ToolSelector, ToolSource
from .tools.tool import Tool
from .transports.base import CompletionTransport
from .transports.retry import RetryPolicy
from .types import StopReason, ToolSpec, Usage

if TYPE_CHECKING:
    from .budget import CharBudget, ContextPolicy, Trim
    from .control import CancellationToken, Steering
    from .providers import transport
    from .tools.decorator import tool

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentStream",
    "Allow",
    "AudioBlock",
    "CancellationToken",
    "CharBudget",
    "CompletionTransport",
    "ContentBlock",
    "ContextPolicy",
    "ContextStore",
    "ContextTrimmed",
    "Deny",
    "Error",
    "Guard",
    "GuardrailError",
    "ImageBlock",
    "IterationEnd",
    "IterationStart",
    "MaxIterationsError",
    "MemoryContextStore",
    "Message",
    "ModelStopError",
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
    "StreamEvent",
    "TetherError",
    "TextBlock",
    "TextDelta",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolDispatch",
    "ToolInputDelta",
    "ToolNotFoundError",
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
    "tool",
    "transport",
]


_LAZY = {
    # name: module — loaded on first use so ``import tether`` stays light
    "tool": "tools.decorator",  # pydantic
    "transport": "providers",  # httpx
    "CharBudget": "budget",
    "ContextPolicy": "budget",
    "Trim": "budget",
    "CancellationToken": "control",
    "Steering": "control",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
