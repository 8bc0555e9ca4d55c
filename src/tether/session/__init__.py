"""padwan-ai's door: ``AgentSession`` keeps a conversation with a model and its (MCP) tools."""

from __future__ import annotations

from .door import AgentSession, OutputValidationError, ToolErrorFormatter
from .hooks import DENIED, ApproveTool, OnTool, ToolCallContext
from .snapshot import ConversationSnapshot, ConversationStore, SnapshotError

__all__ = [
    "DENIED",
    "AgentSession",
    "ApproveTool",
    "ConversationSnapshot",
    "ConversationStore",
    "OnTool",
    "OutputValidationError",
    "SnapshotError",
    "ToolCallContext",
    "ToolErrorFormatter",
]
