"""The agent a ``.prompty`` file loads into (spec §2.3-§2.9): frozen data, each class with a
``to_dict`` giving the spec's camelCase JSON shape (unset optional keys left out, except the
agent's own top-level fields, which are always present and ``None`` when absent)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .paths import Place

__all__ = [
    "Binding",
    "Connection",
    "CustomTool",
    "FormatConfig",
    "FunctionTool",
    "McpApprovalMode",
    "McpTool",
    "Model",
    "ModelOptions",
    "OpenApiTool",
    "ParserConfig",
    "PromptAgent",
    "PromptyTool",
    "Property",
    "Template",
    "ToolDefinition",
]


def _set(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
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
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape, with ``extra`` keys as written."""
        out: dict[str, Any] = {"kind": self.kind}
        _set(out, "endpoint", self.endpoint)
        _set(out, "apiKey", self.api_key)
        _set(out, "name", self.name)
        _set(out, "target", self.target)
        _set(out, "authenticationMode", self.authentication_mode)
        _set(out, "usageDescription", self.usage_description)
        return {**self.extra, **out}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelOptions:
    """Model parameters (§2.6); options the spec does not name are kept in
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
    additional_properties: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape (only the options set)."""
        out: dict[str, Any] = {}
        _set(out, "temperature", self.temperature)
        _set(out, "maxOutputTokens", self.max_output_tokens)
        _set(out, "topP", self.top_p)
        _set(out, "topK", self.top_k)
        _set(out, "frequencyPenalty", self.frequency_penalty)
        _set(out, "presencePenalty", self.presence_penalty)
        _set(out, "seed", self.seed)
        if self.stop_sequences is not None:
            out["stopSequences"] = list(self.stop_sequences)
        _set(out, "allowMultipleToolCalls", self.allow_multiple_tool_calls)
        if self.additional_properties:
            out["additionalProperties"] = dict(self.additional_properties)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Model:
    """Which model to call and how (§2.4); ``model: gpt-4`` loads as ``Model(id="gpt-4")``."""

    id: str = ""
    provider: str | None = None
    api_type: str = "chat"
    connection: Connection | None = None
    options: ModelOptions | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        out: dict[str, Any] = {"id": self.id}
        _set(out, "provider", self.provider)
        out["apiType"] = self.api_type
        if self.connection is not None:
            out["connection"] = self.connection.to_dict()
        if self.options is not None:
            out["options"] = self.options.to_dict()
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Property:
    """One input, output or tool parameter (§2.7). ``default`` ``None`` means no default;
    ``example`` is documentation only. ``line`` is where it is declared, for error messages."""

    name: str = ""
    kind: str = "string"
    description: str | None = None
    required: bool = False
    nullable: bool = False
    default: Any = None
    example: Any = None
    enum_values: tuple[Any, ...] | None = None
    items: Property | None = None
    properties: tuple[Property, ...] | None = None
    line: int | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape (``required``/``nullable`` only when true)."""
        out: dict[str, Any] = {"name": self.name} if self.name else {}
        out["kind"] = self.kind
        _set(out, "description", self.description)
        if self.required:
            out["required"] = True
        if self.nullable:
            out["nullable"] = True
        _set(out, "default", self.default)
        _set(out, "example", self.example)
        if self.enum_values is not None:
            out["enumValues"] = list(self.enum_values)
        if self.items is not None:
            out["items"] = self.items.to_dict()
        if self.properties is not None:
            out["properties"] = [p.to_dict() for p in self.properties]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatConfig:
    """The template engine (§2.8): ``jinja2``, ``mustache`` or a registered other."""

    kind: str = "jinja2"
    strict: bool = False
    options: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.strict:
            out["strict"] = True
        if self.options is not None:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ParserConfig:
    """The parser that turns rendered text into messages (§2.8); ``prompty`` by default."""

    kind: str = "prompty"
    options: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.options is not None:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Template:
    """Template engine and parser; jinja2 and prompty when the file names none."""

    format: FormatConfig = field(default_factory=FormatConfig)
    parser: ParserConfig = field(default_factory=ParserConfig)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        return {"format": self.format.to_dict(), "parser": self.parser.to_dict()}


@dataclass(frozen=True, slots=True)
class Binding:
    """A tool parameter bound to an agent input (§2.9.1): hidden from the model, injected
    from ``inputs[input]`` when the tool runs."""

    input: str

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        return {"input": self.input}


@dataclass(frozen=True, slots=True, kw_only=True)
class _ToolBase:
    name: str
    description: str | None = None
    bindings: Mapping[str, Binding] | None = None

    def _dict(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": kind}
        _set(out, "description", self.description)
        out.update({k: v for k, v in fields.items() if v is not None})
        if self.bindings is not None:
            out["bindings"] = {name: b.to_dict() for name, b in self.bindings.items()}
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool(_ToolBase):
    """A function the host implements; ``parameters`` become its JSON schema."""

    parameters: tuple[Property, ...] = ()
    strict: bool | None = None
    kind: str = "function"

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        params = [p.to_dict() for p in self.parameters]
        return self._dict(self.kind, {"parameters": params, "strict": self.strict})


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptyTool(_ToolBase):
    """Another .prompty file run as a tool (``path`` relative to this file)."""

    path: str
    mode: str = "single"
    kind: str = "prompty"

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        return self._dict(self.kind, {"path": self.path, "mode": self.mode})


@dataclass(frozen=True, slots=True, kw_only=True)
class McpApprovalMode:
    """When an MCP tool call needs approval: ``always``, ``never`` or ``specify`` (per tool)."""

    kind: str
    always_require_approval_tools: tuple[str, ...] | None = None
    never_require_approval_tools: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.always_require_approval_tools is not None:
            out["alwaysRequireApprovalTools"] = list(self.always_require_approval_tools)
        if self.never_require_approval_tools is not None:
            out["neverRequireApprovalTools"] = list(self.never_require_approval_tools)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class McpTool(_ToolBase):
    """The tools of an MCP server."""

    connection: Connection | None = None
    server_name: str | None = None
    server_description: str | None = None
    approval_mode: McpApprovalMode | None = None
    allowed_tools: tuple[str, ...] | None = None
    kind: str = "mcp"

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        return self._dict(
            self.kind,
            {
                "connection": None if self.connection is None else self.connection.to_dict(),
                "serverName": self.server_name,
                "serverDescription": self.server_description,
                "approvalMode": None
                if self.approval_mode is None
                else self.approval_mode.to_dict(),
                "allowedTools": None if self.allowed_tools is None else list(self.allowed_tools),
            },
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenApiTool(_ToolBase):
    """The operations of an OpenAPI specification (a path or URL)."""

    connection: Connection | None = None
    specification: str | None = None
    kind: str = "openapi"

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        conn = None if self.connection is None else self.connection.to_dict()
        return self._dict(self.kind, {"connection": conn, "specification": self.specification})


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomTool(_ToolBase):
    """A tool of any other ``kind``, handled by a kind handler the host registers."""

    kind: str
    connection: Connection | None = None
    options: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape."""
        conn = None if self.connection is None else self.connection.to_dict()
        opts = None if self.options is None else dict(self.options)
        return self._dict(self.kind, {"connection": conn, "options": opts})


ToolDefinition = FunctionTool | PromptyTool | McpTool | OpenApiTool | CustomTool


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptAgent:
    """A loaded .prompty file: frontmatter settings plus the body as ``instructions``.

    ``source`` is the file it came from and ``body_line`` the 1-based line where the body
    starts, so later stages can point at the file in their errors. ``origin`` is the folder
    its tools' files are found in, when it was opened beneath a root (a child ``.prompty``).
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
    source: str | None = field(default=None, compare=False)
    body_line: int = field(default=1, compare=False)
    kind: str = "prompt"
    origin: Place | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape: every top-level field, ``None`` where the file sets none."""

        def props(ps: tuple[Property, ...] | None) -> list[dict[str, Any]] | None:
            return None if ps is None else [p.to_dict() for p in ps]

        return {
            "kind": self.kind,
            "name": self.name,
            "displayName": self.display_name,
            "description": self.description,
            "metadata": None if self.metadata is None else dict(self.metadata),
            "model": None if self.model is None else self.model.to_dict(),
            "inputs": props(self.inputs),
            "outputs": props(self.outputs),
            "tools": None if self.tools is None else [t.to_dict() for t in self.tools],
            "template": self.template.to_dict(),
            "instructions": self.instructions,
        }
