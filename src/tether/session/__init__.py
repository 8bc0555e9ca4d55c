"""padwan-ai's door: ``AgentSession`` keeps a conversation with a model and its (MCP) tools."""

from __future__ import annotations

from .agent_session import AgentSession, OutputValidationError, ToolErrorFormatter
from .chat import ChatClient, ChatClientTransport
from .hooks import DENIED, ApproveTool, OnTool, ToolCallContext
from .results import result_text
from .snapshot import ConversationSnapshot, ConversationStore, SnapshotError
from .state import ConversationState

__all__ = [
    "DENIED",
    "AgentSession",
    "ApproveTool",
    "ChatClient",
    "ChatClientTransport",
    "ConversationSnapshot",
    "ConversationState",
    "ConversationStore",
    "OnTool",
    "OutputValidationError",
    "SnapshotError",
    "ToolCallContext",
    "ToolErrorFormatter",
    "result_text",
]
