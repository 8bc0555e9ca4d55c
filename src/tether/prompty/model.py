"""The agent a ``.prompty`` file loads into (spec §2.3-§2.9): frozen data, each class's
``to_dict`` (``serial``) giving the spec's camelCase JSON shape: unset optional keys left out,
except the agent's own top-level fields, which are always present and ``None`` when absent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .serial import FLATTEN, OMIT_EMPTY, SKIP, JsonShape, SparseJsonShape

if TYPE_CHECKING:
    from .env import EnvAccess
    from .paths import Place

__all__ = [
    "Binding",
    "ConnectionConfig",
    "CustomTool",
    "FormatConfig",
    "FunctionTool",
    "McpApprovalMode",
    "McpServerTool",
    "Model",
    "ModelOptionsConfig",
    "OpenApiTool",
    "ParserConfig",
    "PromptAgent",
    "PromptyTool",
    "Property",
    "Template",
    "ToolDefinition",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionConfig(SparseJsonShape):
    """How to reach a model or tool server (§2.5); ``kind`` is key, reference, remote,
    anonymous, foundry, oauth or another. Keys of other connection kinds stay in ``extra``;
    neither it nor ``api_key`` shows in the repr, as either may hold a secret."""

    kind: str
    endpoint: str | None = None
    api_key: str | None = field(default=None, repr=False)
    name: str | None = None
    target: str | None = None
    authentication_mode: str | None = None
    usage_description: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False, metadata=FLATTEN)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelOptionsConfig(SparseJsonShape):
    """A model's ``options`` (§2.6), its parameters; options the spec does not name are kept in
    ``additional_properties`` and passed through to the provider."""

    temperature: float | None = None
    max_output_tokens: int | None = None
    top_p: float | None = None
    top_k: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop_sequences: tuple[str, ...] | None = None
    allow_multiple_tool_calls: bool | None = None
    additional_properties: Mapping[str, Any] = field(default_factory=dict, metadata=OMIT_EMPTY)


@dataclass(frozen=True, slots=True, kw_only=True)
class Model(SparseJsonShape):
    """Which model to call and how (§2.4); ``model: gpt-4`` loads as ``Model(id="gpt-4")``."""

    id: str = ""
    provider: str | None = None
    api_type: str = "chat"
    connection: ConnectionConfig | None = None
    options: ModelOptionsConfig | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Property(SparseJsonShape):
    """One input, output or tool parameter (§2.7). ``default`` ``None`` means no default;
    ``example`` is documentation only. ``line`` is where it is declared, for error messages."""

    name: str = field(default="", metadata=OMIT_EMPTY)
    kind: str = "string"
    description: str | None = None
    required: bool = field(default=False, metadata=OMIT_EMPTY)
    nullable: bool = field(default=False, metadata=OMIT_EMPTY)
    default: Any = None
    example: Any = None
    enum_values: tuple[Any, ...] | None = None
    items: Property | None = None
    properties: tuple[Property, ...] | None = None
    line: int | None = field(default=None, compare=False, repr=False, metadata=SKIP)


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatConfig(SparseJsonShape):
    """The template engine (§2.8): ``jinja2``, ``mustache`` or a registered other."""

    kind: str = "jinja2"
    strict: bool = field(default=False, metadata=OMIT_EMPTY)
    options: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParserConfig(SparseJsonShape):
    """The parser that turns rendered text into messages (§2.8); ``prompty`` by default."""

    kind: str = "prompty"
    options: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Template(SparseJsonShape):
    """Template engine and parser; jinja2 and prompty when the file names none."""

    format: FormatConfig = field(default_factory=FormatConfig)
    parser: ParserConfig = field(default_factory=ParserConfig)


@dataclass(frozen=True, slots=True)
class Binding(SparseJsonShape):
    """A tool parameter bound to an agent input (§2.9.1): hidden from the model, injected
    from ``inputs[input]`` when the tool runs."""

    input: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _ToolBase(SparseJsonShape):
    name: str
    description: str | None = None
    bindings: Mapping[str, Binding] | None = None
    _json_keys = ("name", "kind", "description", ..., "bindings")


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool(_ToolBase):
    """A function the host implements; ``parameters`` become its JSON schema."""

    parameters: tuple[Property, ...] = ()
    strict: bool | None = None
    kind: str = "function"


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptyTool(_ToolBase):
    """Another .prompty file run as a tool (``path`` relative to this file)."""

    path: str
    mode: str = "single"
    kind: str = "prompty"


@dataclass(frozen=True, slots=True, kw_only=True)
class McpApprovalMode(SparseJsonShape):
    """When an MCP tool call needs approval: ``always``, ``never`` or ``specify`` (per tool)."""

    kind: str
    always_require_approval_tools: tuple[str, ...] | None = None
    never_require_approval_tools: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerTool(_ToolBase):
    """The tools of an MCP server (a tool of kind ``mcp``)."""

    connection: ConnectionConfig | None = None
    server_name: str | None = None
    server_description: str | None = None
    approval_mode: McpApprovalMode | None = None
    allowed_tools: tuple[str, ...] | None = None
    kind: str = "mcp"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenApiTool(_ToolBase):
    """The operations of an OpenAPI specification (a path or URL)."""

    connection: ConnectionConfig | None = None
    specification: str | None = None
    kind: str = "openapi"


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomTool(_ToolBase):
    """A tool of any other ``kind``, handled by a kind handler the host registers."""

    kind: str
    connection: ConnectionConfig | None = None
    options: Mapping[str, Any] | None = None


ToolDefinition = FunctionTool | PromptyTool | McpServerTool | OpenApiTool | CustomTool


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptAgent(JsonShape):
    """A loaded .prompty file: frontmatter settings plus the body as ``instructions``.

    ``source`` is the file it came from and ``body_line`` the 1-based line where the body
    starts, so later stages can point at the file in their errors. ``origin`` is the folder
    its tools' files are found in, when it was opened beneath a root (a child ``.prompty``).
    ``env_access`` is the environment it was loaded with: its child ``.prompty`` files read no
    variable it could not.
    """

    name: str = ""
    display_name: str | None = None
    description: str | None = None
    metadata: Mapping[str, Any] | None = None
    model: Model | None = None
    inputs: tuple[Property, ...] | None = None
    outputs: tuple[Property, ...] | None = None
    tools: tuple[ToolDefinition, ...] | None = None
    template: Template = field(default_factory=Template)
    instructions: str = ""
    source: str | None = field(default=None, compare=False, metadata=SKIP)
    body_line: int = field(default=1, compare=False, metadata=SKIP)
    kind: str = "prompt"
    origin: Place | None = field(default=None, compare=False, repr=False, metadata=SKIP)
    env_access: EnvAccess | None = field(default=None, compare=False, repr=False, metadata=SKIP)
    _json_keys = ("kind", ...)
