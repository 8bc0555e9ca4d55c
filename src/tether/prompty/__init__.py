"""The Prompty door: ``.prompty`` files loaded, rendered, parsed and run by tether's engine.

- ``load(path, env=[...])`` → ``PromptAgent`` (a file reads only the environment variables
  its caller names: ``EnvAccessError`` otherwise); ``prepare(agent, inputs)`` → messages;
  ``run(agent, messages)`` one model call; ``invoke(path, inputs)`` load + prepare + run;
  ``turn(agent_or_path, inputs, tools=None, **options)`` a conversational round with the
  agent loop (§9, §13); each has an ``_async`` twin.
- Tools: ``tool`` (a typed handler), ``bind_tools``, the registries ``register_tool``,
  ``register_tool_handler``, ``register_connection``.
- Tracing (§3): ``Tracer``, ``trace``; backends ``TracyTracer``, ``ConsoleTracer``,
  ``OtelTracer``.

Names load on first use: importing this package imports neither jinja2 nor YAML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from .console import ConsoleTracer
    from .discovery import ModelInfo, enrich, list_models, map_model
    from .door import (
        invoke,
        invoke_async,
        prepare,
        prepare_async,
        run,
        run_async,
        turn,
        turn_async,
    )
    from .errors import EnvAccessError, LoadError, PromptyError
    from .events import AgentEvent
    from .kinds import register_builtin_kinds
    from .loader import load, load_async, load_dotenv, loads, validate_inputs
    from .loop import (
        MAX_ITERATIONS,
        MAX_LLM_RETRIES,
        CancelledError,
        ExecuteError,
        GuardrailError,
        GuardrailResult,
        Guardrails,
        IterationLimitError,
        ModelRefusedError,
        ToolNotRegisteredError,
    )
    from .messages import Part, PromptMessage
    from .model import PromptAgent
    from .otel import OtelTracer
    from .pipeline import StructuredOutputError, ToolCall
    from .registry import (
        clear_connections,
        clear_tool_handlers,
        clear_tools,
        get_connection,
        get_tool,
        get_tool_handler,
        register_connection,
        register_tool,
        register_tool_handler,
    )
    from .streaming import PromptyStream
    from .tools import bind_tools, tool
    from .tracing import Tracer, trace
    from .tracy import TracyTracer
    from .turns import TurnEngine, run_turn

_HOMES = {
    "ConsoleTracer": "console",
    "ModelInfo": "discovery",
    "enrich": "discovery",
    "list_models": "discovery",
    "map_model": "discovery",
    "EnvAccessError": "errors",
    "LoadError": "errors",
    "PromptyError": "errors",
    "AgentEvent": "events",
    "register_builtin_kinds": "kinds",
    "load": "loader",
    "load_async": "loader",
    "load_dotenv": "loader",
    "loads": "loader",
    "validate_inputs": "loader",
    "MAX_ITERATIONS": "loop",
    "MAX_LLM_RETRIES": "loop",
    "CancelledError": "loop",
    "ExecuteError": "loop",
    "GuardrailError": "loop",
    "GuardrailResult": "loop",
    "Guardrails": "loop",
    "IterationLimitError": "loop",
    "ModelRefusedError": "loop",
    "ToolNotRegisteredError": "loop",
    "Part": "messages",
    "PromptMessage": "messages",
    "PromptAgent": "model",
    "OtelTracer": "otel",
    "StructuredOutputError": "pipeline",
    "ToolCall": "pipeline",
    "invoke": "door",
    "invoke_async": "door",
    "prepare": "door",
    "prepare_async": "door",
    "run": "door",
    "run_async": "door",
    "turn": "door",
    "turn_async": "door",
    "clear_connections": "registry",
    "clear_tool_handlers": "registry",
    "clear_tools": "registry",
    "get_connection": "registry",
    "get_tool": "registry",
    "get_tool_handler": "registry",
    "register_connection": "registry",
    "register_tool": "registry",
    "register_tool_handler": "registry",
    "bind_tools": "tools",
    "tool": "tools",
    "PromptyStream": "streaming",
    "Tracer": "tracing",
    "trace": "tracing",
    "TracyTracer": "tracy",
    "TurnEngine": "turns",
    "run_turn": "turns",
}

__all__ = [
    "MAX_ITERATIONS",
    "MAX_LLM_RETRIES",
    "AgentEvent",
    "CancelledError",
    "ConsoleTracer",
    "EnvAccessError",
    "ExecuteError",
    "GuardrailError",
    "GuardrailResult",
    "Guardrails",
    "IterationLimitError",
    "LoadError",
    "ModelInfo",
    "ModelRefusedError",
    "OtelTracer",
    "Part",
    "PromptAgent",
    "PromptMessage",
    "PromptyError",
    "PromptyStream",
    "StructuredOutputError",
    "ToolCall",
    "ToolNotRegisteredError",
    "Tracer",
    "TracyTracer",
    "TurnEngine",
    "bind_tools",
    "clear_connections",
    "clear_tool_handlers",
    "clear_tools",
    "enrich",
    "get_connection",
    "get_tool",
    "get_tool_handler",
    "invoke",
    "invoke_async",
    "list_models",
    "load",
    "load_async",
    "load_dotenv",
    "loads",
    "map_model",
    "prepare",
    "prepare_async",
    "register_builtin_kinds",
    "register_connection",
    "register_tool",
    "register_tool_handler",
    "run",
    "run_async",
    "run_turn",
    "tool",
    "trace",
    "turn",
    "turn_async",
    "validate_inputs",
]

__getattr__ = _lazy_names(__name__, _HOMES)
