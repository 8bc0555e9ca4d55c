"""Reading a ``PromptAgent`` from parsed frontmatter (spec §4), field by field: the §4.4
shorthands are expanded and a value of the wrong type is a ``LoadError`` naming file, line, field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..env import Written, hidden
from ..errors import LoadError
from ..model import (
    Binding,
    ConnectionConfig,
    CustomTool,
    FormatConfig,
    FunctionTool,
    McpApprovalMode,
    McpServerTool,
    Model,
    ModelOptionsConfig,
    OpenApiTool,
    ParserConfig,
    PromptAgent,
    PromptyTool,
    Property,
    Template,
    ToolDefinition,
)
from .files import Doc, PathKey, Split, dotted

__all__ = ["PROPERTY_KINDS", "read_agent"]

PROPERTY_KINDS = frozenset(
    ("string", "integer", "float", "boolean", "array", "object", "thread", "image", "file", "audio")
)
_AGENT_KEYS = frozenset(
    {"kind", "name", "displayName", "description", "metadata", "model", "inputs", "outputs"}
    | {"tools", "template", "instructions"}
)
_MODEL_KEYS = ("id", "provider", "apiType", "connection", "options")
_CONNECTION_KEYS = frozenset(
    ("kind", "endpoint", "apiKey", "name", "target", "authenticationMode", "usageDescription")
)
_FLOAT_OPTIONS = {
    "temperature": "temperature",
    "topP": "top_p",
    "frequencyPenalty": "frequency_penalty",
    "presencePenalty": "presence_penalty",
}
_INT_OPTIONS = {"maxOutputTokens": "max_output_tokens", "topK": "top_k", "seed": "seed"}
_OTHER_OPTIONS = frozenset(("stopSequences", "allowMultipleToolCalls", "additionalProperties"))
_PROPERTY_KEYS = frozenset(
    {"kind", "description", "required", "nullable", "default", "example", "enumValues"}
    | {"items", "properties"}
)


def read_agent(data: dict[str, Any], doc: Doc, split: Split) -> PromptAgent:
    """The agent of the frontmatter mapping ``data`` (parsed from ``doc``, references resolved)
    and the body of ``split``; a field of the wrong type is a ``LoadError``."""
    root = _Node(data, doc, ())
    data = root.table()
    metadata = root.get("metadata").table_or_none()
    unknown = {k: v for k, v in data.items() if k not in _AGENT_KEYS}
    if unknown:  # §2.3: unknown top-level properties are kept, in metadata
        metadata = {**unknown, **(metadata or {})}
    return PromptAgent(
        name=root.get("name").text() or "",
        display_name=root.get("displayName").text(),
        description=root.get("description").text(),
        metadata=metadata,
        model=_model(root.get("model")),
        inputs=_properties(root.get("inputs")),
        outputs=_properties(root.get("outputs")),
        tools=_tools(root.get("tools")),
        template=_template(root.get("template")),
        instructions=split.body,
        source=root.doc.path,
        body_line=split.body_line,
    )


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return names.get(type(value), type(value).__name__)


@dataclass(frozen=True, slots=True)
class _Node:
    """A frontmatter value and where it sits, read with typed errors naming file, line, field."""

    value: Any
    doc: Doc
    at: PathKey

    @property
    def field(self) -> str:
        return dotted(self.at) or "frontmatter"

    @property
    def line(self) -> int | None:
        return self.doc.line_of(self.at)

    def error(self, message: str) -> LoadError:
        return self.doc.error(message, self.at)

    def wrong(self, expected: str) -> LoadError:
        return self.error(f"{self.field} must be {expected}, not {_type_name(self.value)}")

    def get(self, key: str | int) -> _Node:
        value = self.value
        if isinstance(value, dict | list):
            try:
                child = value[key]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                child = None
        else:
            child = None
        return _Node(child, self.doc, (*self.at, key))

    def table(self, expected: str = "a mapping") -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.wrong(expected)
        for key in self.value:
            if not isinstance(key, str):
                raise self.error(f"{self.field} has a key that is not a string: {key!r}")
        return self.value

    def table_or_none(self) -> dict[str, Any] | None:
        return None if self.value is None else self.table()

    def text(self) -> str | None:
        if self.value is not None and not isinstance(self.value, str):
            raise self.wrong("a string")
        return self.value

    def required_text(self, what: str) -> str:
        value = self.text()
        if not value:
            raise self.error(f"{self.field} is required: {what}")
        return value

    def flag(self) -> bool | None:
        if self.value is not None and not isinstance(self.value, bool):
            raise self.wrong("true or false")
        return self.value

    def integer(self) -> int | None:
        if self.value is not None and (
            isinstance(self.value, bool) or not isinstance(self.value, int)
        ):
            raise self.wrong("an integer")
        return self.value

    def number(self) -> float | None:
        if self.value is not None and (
            isinstance(self.value, bool) or not isinstance(self.value, int | float)
        ):
            raise self.wrong("a number")
        return self.value

    def texts(self) -> tuple[str, ...] | None:
        if self.value is None:
            return None
        if not isinstance(self.value, list):
            raise self.wrong("a list of strings")
        return tuple(self.get(i).required_text("a string") for i in range(len(self.value)))


def _model(node: _Node) -> Model | None:
    if node.value is None:
        return None
    if isinstance(node.value, str):
        return Model(id=node.value)
    data = node.table("a model id or a mapping of " + ", ".join(_MODEL_KEYS))
    for key in data:
        if key not in _MODEL_KEYS:
            raise node.get(key).error(
                f"Unknown model field '{key}' (a model has {', '.join(_MODEL_KEYS)})"
            )
    return Model(
        id=node.get("id").text() or "",
        provider=node.get("provider").text(),
        api_type=node.get("apiType").text() or "chat",
        connection=_connection(node.get("connection")),
        options=_options(node.get("options")),
    )


def _connection(node: _Node) -> ConnectionConfig | None:
    if node.value is None:
        return None
    data = node.table()
    kind = node.get("kind").required_text("key, reference, remote, anonymous, foundry, oauth, ...")
    return ConnectionConfig(
        kind=kind,
        endpoint=Written.mark(node.get("endpoint").text()),
        api_key=node.get("apiKey").text(),
        name=node.get("name").text(),
        target=node.get("target").text(),
        authentication_mode=node.get("authenticationMode").text(),
        usage_description=node.get("usageDescription").text(),
        extra={k: v for k, v in data.items() if k not in _CONNECTION_KEYS},
    )


def _options(node: _Node) -> ModelOptionsConfig | None:
    if node.value is None:
        return None
    data = node.table()
    extra = dict(node.get("additionalProperties").table_or_none() or {})
    for key, value in data.items():
        if key not in _FLOAT_OPTIONS and key not in _INT_OPTIONS and key not in _OTHER_OPTIONS:
            extra.setdefault(key, value)
    floats = {attr: node.get(key).number() for key, attr in _FLOAT_OPTIONS.items()}
    ints = {attr: node.get(key).integer() for key, attr in _INT_OPTIONS.items()}
    return ModelOptionsConfig(
        temperature=floats["temperature"],
        top_p=floats["top_p"],
        frequency_penalty=floats["frequency_penalty"],
        presence_penalty=floats["presence_penalty"],
        max_output_tokens=ints["max_output_tokens"],
        top_k=ints["top_k"],
        seed=ints["seed"],
        stop_sequences=node.get("stopSequences").texts(),
        allow_multiple_tool_calls=node.get("allowMultipleToolCalls").flag(),
        additional_properties=extra,
    )


def _properties(node: _Node) -> tuple[Property, ...] | None:
    """A property list, or a mapping of name to property or to a scalar shorthand (§2.7)."""
    if node.value is None:
        return None
    if isinstance(node.value, list):
        props = tuple(_property(node.get(i), None) for i in range(len(node.value)))
    elif isinstance(node.value, dict):
        props = tuple(_property(node.get(name), name) for name in node.table())
    else:
        raise node.wrong("a list of properties or a mapping of name to property")
    seen: set[str] = set()
    for i, prop in enumerate(props):
        if prop.name in seen:
            raise node.get(i if isinstance(node.value, list) else prop.name).error(
                f"Duplicate property name '{hidden(prop.name)}'"
            )
        seen.add(prop.name)
    return props


def _is_property(value: Any) -> bool:
    return isinstance(value, dict) and any(key in _PROPERTY_KEYS for key in value)


def _property(node: _Node, name: str | None, *, named: bool = True) -> Property:
    """One property; ``name`` is its key in mapping form (then a value that is not a property
    mapping is the §4.4 shorthand ``Property(kind=<inferred>, default=value)``)."""
    if name is not None and not _is_property(node.value):
        return _shorthand(node, name)
    node.table("a property mapping")
    if name is None:
        given = node.get("name")
        name = given.required_text("the property's name") if named else given.text() or ""
    kind = node.get("kind").text() or "string"
    if kind not in PROPERTY_KINDS:
        raise node.get("kind").error(
            f"Unknown property kind '{hidden(kind)}' (one of {', '.join(sorted(PROPERTY_KINDS))})"
        )
    enum = node.get("enumValues")
    if enum.value is not None and not isinstance(enum.value, list):
        raise enum.wrong("a list")
    items = node.get("items")
    return Property(
        name=name,
        kind=kind,
        description=node.get("description").text(),
        required=node.get("required").flag() or False,
        nullable=node.get("nullable").flag() or False,
        default=node.get("default").value,
        example=node.get("example").value,
        enum_values=None if enum.value is None else tuple(enum.value),
        items=None if items.value is None else _property(items, None, named=False),
        properties=_properties(node.get("properties")),
        line=node.line,
    )


def _shorthand(node: _Node, name: str) -> Property:
    value = node.value
    kinds: list[tuple[type, str]] = [
        (bool, "boolean"),
        (int, "integer"),
        (float, "float"),
        (str, "string"),
        (list, "array"),
        (dict, "object"),
    ]
    if value is None:
        return Property(name=name, line=node.line)
    for python_type, kind in kinds:
        if isinstance(value, python_type):
            return Property(name=name, kind=kind, default=value, line=node.line)
    raise node.error(f"Cannot infer a property kind from {_type_name(value)} value {value!r}")


def _template(node: _Node) -> Template:
    if node.value is None:
        return Template()
    if isinstance(node.value, str):
        raise node.error(
            "Invalid template format: template must be a mapping such as "
            f"{{format: {{kind: {hidden(node.value)}}}, parser: {{kind: prompty}}}}, not a string"
        )
    node.table("a mapping with format and parser")
    fmt, parser = node.get("format"), node.get("parser")
    if fmt.value is None or isinstance(fmt.value, str):
        format_config = FormatConfig(kind=fmt.value or "jinja2")
    else:
        fmt.table()
        format_config = FormatConfig(
            kind=fmt.get("kind").text() or "jinja2",
            strict=fmt.get("strict").flag() or False,
            options=fmt.get("options").table_or_none(),
        )
    if parser.value is None or isinstance(parser.value, str):
        parser_config = ParserConfig(kind=parser.value or "prompty")
    else:
        parser.table()
        parser_config = ParserConfig(
            kind=parser.get("kind").text() or "prompty",
            options=parser.get("options").table_or_none(),
        )
    return Template(format=format_config, parser=parser_config)


def _tools(node: _Node) -> tuple[ToolDefinition, ...] | None:
    """A tool list, or a mapping of name to tool (§2.9); names must be unique."""
    if node.value is None:
        return None
    if isinstance(node.value, list):
        tools = [_tool(node.get(i), None) for i in range(len(node.value))]
    elif isinstance(node.value, dict):
        tools = [_tool(node.get(name), name) for name in node.table()]
    else:
        raise node.wrong("a list of tools")
    names = [t.name for t in tools]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise node.get(i if isinstance(node.value, list) else name).error(
                f"Duplicate tool name '{hidden(name)}'"
            )
    return tuple(tools)


def _tool(node: _Node, name: str | None) -> ToolDefinition:
    node.table("a tool mapping")
    name = name or node.get("name").required_text("the tool's name")
    kind = node.get("kind").required_text("function, prompty, mcp, openapi or a custom kind")
    description = node.get("description").text()
    bindings = _bindings(node.get("bindings"))
    if kind == "function":
        return FunctionTool(
            name=name,
            description=description,
            bindings=bindings,
            parameters=_parameters(node.get("parameters")),
            strict=node.get("strict").flag(),
        )
    if kind == "prompty":
        return PromptyTool(
            name=name,
            description=description,
            bindings=bindings,
            path=node.get("path").required_text("the .prompty file to run"),
            mode=node.get("mode").text() or "single",
        )
    if kind == "mcp":
        return McpServerTool(
            name=name,
            description=description,
            bindings=bindings,
            connection=_connection(node.get("connection")),
            server_name=node.get("serverName").text(),
            server_description=node.get("serverDescription").text(),
            approval_mode=_approval(node.get("approvalMode")),
            allowed_tools=node.get("allowedTools").texts(),
        )
    if kind == "openapi":
        return OpenApiTool(
            name=name,
            description=description,
            bindings=bindings,
            connection=_connection(node.get("connection")),
            specification=node.get("specification").text(),
        )
    return CustomTool(
        name=name,
        kind=kind,
        description=description,
        bindings=bindings,
        connection=_connection(node.get("connection")),
        options=node.get("options").table_or_none(),
    )


def _parameters(node: _Node) -> tuple[Property, ...]:
    """Tool parameters: a property list or mapping, or either wrapped as ``{properties: ...}``."""
    value = node.value
    if (
        isinstance(value, dict)
        and isinstance(value.get("properties"), list | dict)
        and not _is_property(value["properties"])
    ):
        node = node.get("properties")
    return _properties(node) or ()


def _bindings(node: _Node) -> dict[str, Binding] | None:
    """Bindings as ``{param: input}``, ``{param: {input: ...}}`` or ``[{name, input}]``."""
    if node.value is None:
        return None
    if isinstance(node.value, list):
        pairs = []
        for i in range(len(node.value)):
            item = node.get(i)
            item.table("a binding mapping with name and input")
            pairs.append((item.get("name").required_text("the bound parameter"), item))
    else:
        pairs = [(param, node.get(param)) for param in node.table("a mapping of bindings")]
    out: dict[str, Binding] = {}
    for param, binding in pairs:
        if isinstance(binding.value, str):
            out[param] = Binding(binding.value)
        else:
            binding.table("an input name or a mapping with input")
            out[param] = Binding(binding.get("input").required_text("the input bound to it"))
    return out


def _approval(node: _Node) -> McpApprovalMode | None:
    if node.value is None:
        return None
    if isinstance(node.value, str):
        return McpApprovalMode(kind=node.value)
    node.table("always, never, specify, or a mapping with kind")
    return McpApprovalMode(
        kind=node.get("kind").required_text("always, never or specify"),
        always_require_approval_tools=node.get("alwaysRequireApprovalTools").texts(),
        never_require_approval_tools=node.get("neverRequireApprovalTools").texts(),
    )
