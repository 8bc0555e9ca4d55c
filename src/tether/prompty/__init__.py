"""The Prompty door: ``.prompty`` files loaded, rendered, parsed and run by tether's engine.

It follows the Prompty runtime specification, version 0.1.0-draft, as of the Prompty commit its
conformance vectors were taken from (``tests/conformance/prompty/README.md``); a "§n" in this
package, or a "Prompty §n" anywhere in tether, is a section of that version.

- ``load(path)`` → ``PromptAgent`` (``${env:}`` read as the spec says; ``env=[...]`` or
  ``env=()`` for a file from elsewhere: ``EnvAccessError`` for any other variable; a credential
  from the environment never goes to an endpoint the file writes: ``CredentialEndpointError``);
  ``prepare(agent, inputs)`` → messages;
  ``run(agent, messages)`` one model call; ``invoke(path, inputs)`` load + prepare + run;
  ``turn(agent_or_path, inputs, tools=None, **options)`` a conversational round with the
  agent loop (§9, §13); each has an ``_async`` twin.
- Resumable turns (§14): ``TurnEngine(transport, tools, journal=...)`` and its
  ``run_turn(RunTurnRequest)`` → ``RunTurnResult``; the host's ports ``DurabilityPort``
  (``MemoryJournal``), ``PermissionPort``, ``HostToolExecutor`` (``host_tools``).
- Tools: ``tool`` (a typed handler), ``bind_tools``, the registries ``register_tool``,
  ``register_tool_handler``, ``register_connection``; ``prompty``, ``mcp`` and ``openapi``
  tools are handled without set-up (``register_builtin_kinds`` changes their settings).
- Tracing (§3): ``Tracer``, ``trace``; backends ``TracyTracer``, ``ConsoleTracer``,
  ``OtelTracer``.
- Errors: one tree in ``errors``; the spec's ``CancelledError`` is ``TurnCancelled`` and its
  ``GuardrailError`` is ``TurnGuardrailError`` (so neither shadows asyncio's or tether's name).

The parts, each a subpackage: ``loading`` (files to ``PromptAgent``), ``render`` (templates and
parsing into messages), ``execution`` (the model, tools and agent loop on tether's engine),
``kinds`` (built-in tool kinds), ``turns`` (the §14 turn engine), ``tracing``. Names load on
first use: importing this package imports neither jinja2 nor YAML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from: ``__all__`` is this table, and the
# imports below repeat it for type checkers only (tests/test_public_api.py keeps them equal).
_HOMES = {
    "AgentEvent": "execution.events",
    "ConsoleTracer": "tracing.console",
    "CredentialEndpointError": "errors",
    "DurabilityPort": "turns.journal",
    "EnvAccessError": "errors",
    "ExecuteError": "errors",
    "GuardrailResult": "execution.loop",
    "Guardrails": "execution.loop",
    "HostToolExecutor": "turns.tools",
    "IndeterminateOutcome": "errors",
    "IterationLimitError": "errors",
    "LoadError": "errors",
    "MAX_ITERATIONS": "execution.loop",
    "MAX_LLM_RETRIES": "execution.loop",
    "MemoryJournal": "turns.journal",
    "ModelInfo": "discovery",
    "ModelRefusedError": "errors",
    "OtelTracer": "tracing.otel",
    "ParseError": "errors",
    "Part": "messages",
    "PermissionPort": "turns.ports",
    "PromptAgent": "model",
    "PromptMessage": "messages",
    "PromptyError": "errors",
    "PromptyStream": "execution.streaming",
    "RenderError": "errors",
    "RequestedToolCall": "pipeline",
    "RunTurnRequest": "turns.records",
    "RunTurnResult": "turns.records",
    "StructuredOutputError": "errors",
    "ToolKindError": "errors",
    "ToolNotRegisteredError": "errors",
    "Tracer": "tracing.tracer",
    "TracyTracer": "tracing.tracy",
    "TurnCancelled": "errors",
    "TurnEngine": "turns.engine",
    "TurnGuardrailError": "errors",
    "TurnLimitExceeded": "errors",
    "TurnOptions": "turns.data",
    "WireError": "errors",
    "bind_tools": "execution.tools",
    "clear_connections": "registry",
    "clear_tool_handlers": "registry",
    "clear_tools": "registry",
    "enrich": "discovery",
    "get_connection": "registry",
    "get_tool": "registry",
    "get_tool_handler": "registry",
    "host_tools": "turns.tools",
    "invoke": "pipeline",
    "invoke_async": "pipeline",
    "list_models": "discovery",
    "load": "loading.loader",
    "load_async": "loading.loader",
    "load_dotenv": "loading.loader",
    "loads": "loading.loader",
    "map_model": "discovery",
    "prepare": "pipeline",
    "prepare_async": "pipeline",
    "register_builtin_kinds": "kinds.builtin",
    "register_connection": "registry",
    "register_tool": "registry",
    "register_tool_handler": "registry",
    "run": "pipeline",
    "run_async": "pipeline",
    "run_turn": "turns.engine",
    "tool": "execution.tools",
    "trace": "tracing.tracer",
    "turn": "pipeline",
    "turn_async": "pipeline",
    "validate_inputs": "loading.loader",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .discovery import ModelInfo as ModelInfo
    from .discovery import enrich as enrich
    from .discovery import list_models as list_models
    from .discovery import map_model as map_model
    from .errors import CredentialEndpointError as CredentialEndpointError
    from .errors import EnvAccessError as EnvAccessError
    from .errors import ExecuteError as ExecuteError
    from .errors import IndeterminateOutcome as IndeterminateOutcome
    from .errors import IterationLimitError as IterationLimitError
    from .errors import LoadError as LoadError
    from .errors import ModelRefusedError as ModelRefusedError
    from .errors import ParseError as ParseError
    from .errors import PromptyError as PromptyError
    from .errors import RenderError as RenderError
    from .errors import StructuredOutputError as StructuredOutputError
    from .errors import ToolKindError as ToolKindError
    from .errors import ToolNotRegisteredError as ToolNotRegisteredError
    from .errors import TurnCancelled as TurnCancelled
    from .errors import TurnGuardrailError as TurnGuardrailError
    from .errors import TurnLimitExceeded as TurnLimitExceeded
    from .errors import WireError as WireError
    from .execution.events import AgentEvent as AgentEvent
    from .execution.loop import MAX_ITERATIONS as MAX_ITERATIONS
    from .execution.loop import MAX_LLM_RETRIES as MAX_LLM_RETRIES
    from .execution.loop import GuardrailResult as GuardrailResult
    from .execution.loop import Guardrails as Guardrails
    from .execution.streaming import PromptyStream as PromptyStream
    from .execution.tools import bind_tools as bind_tools
    from .execution.tools import tool as tool
    from .kinds.builtin import register_builtin_kinds as register_builtin_kinds
    from .loading.loader import load as load
    from .loading.loader import load_async as load_async
    from .loading.loader import load_dotenv as load_dotenv
    from .loading.loader import loads as loads
    from .loading.loader import validate_inputs as validate_inputs
    from .messages import Part as Part
    from .messages import PromptMessage as PromptMessage
    from .model import PromptAgent as PromptAgent
    from .pipeline import RequestedToolCall as RequestedToolCall
    from .pipeline import invoke as invoke
    from .pipeline import invoke_async as invoke_async
    from .pipeline import prepare as prepare
    from .pipeline import prepare_async as prepare_async
    from .pipeline import run as run
    from .pipeline import run_async as run_async
    from .pipeline import turn as turn
    from .pipeline import turn_async as turn_async
    from .registry import clear_connections as clear_connections
    from .registry import clear_tool_handlers as clear_tool_handlers
    from .registry import clear_tools as clear_tools
    from .registry import get_connection as get_connection
    from .registry import get_tool as get_tool
    from .registry import get_tool_handler as get_tool_handler
    from .registry import register_connection as register_connection
    from .registry import register_tool as register_tool
    from .registry import register_tool_handler as register_tool_handler
    from .tracing.console import ConsoleTracer as ConsoleTracer
    from .tracing.otel import OtelTracer as OtelTracer
    from .tracing.tracer import Tracer as Tracer
    from .tracing.tracer import trace as trace
    from .tracing.tracy import TracyTracer as TracyTracer
    from .turns.data import TurnOptions as TurnOptions
    from .turns.engine import TurnEngine as TurnEngine
    from .turns.engine import run_turn as run_turn
    from .turns.journal import DurabilityPort as DurabilityPort
    from .turns.journal import MemoryJournal as MemoryJournal
    from .turns.ports import PermissionPort as PermissionPort
    from .turns.records import RunTurnRequest as RunTurnRequest
    from .turns.records import RunTurnResult as RunTurnResult
    from .turns.tools import HostToolExecutor as HostToolExecutor
    from .turns.tools import host_tools as host_tools

__getattr__ = _lazy_names(__name__, _HOMES)
