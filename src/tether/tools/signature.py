"""Arguments from a function's signature: the JSON Schema a model sees and the pydantic validator
that checks a call's arguments (shared by ``@tool`` and ``Tool`` built without a schema)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import pydantic
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticUndefined, core_schema

from ..errors import ToolArgumentError
from .docstrings import parse_docstring

__all__ = ["ArgumentsValidator", "default_name", "docstring", "from_signature"]

ArgumentsValidator = Callable[[Mapping[str, Any]], Mapping[str, Any]]
_MAX_INPUT_REPR = 80


class _SchemaGenerator(GenerateJsonSchema):
    """Gives types with no JSON form (e.g. a bound client object) an empty schema, not an error."""

    def handle_invalid_for_json_schema(
        self, schema: core_schema.CoreSchema, error_info: str
    ) -> JsonSchemaValue:
        return {}


def from_signature(
    func: Callable[..., Any], tool_name: str, local_ns: Mapping[str, Any] | None = None
) -> tuple[str, dict[str, Any], ArgumentsValidator]:
    """``func``'s docstring summary, its arguments' JSON Schema and a validator for them.

    Raises ``TypeError`` when the signature cannot describe keyword arguments (``*args``,
    ``**kwargs``, positional-only parameters, unresolvable annotations).
    """
    summary, param_docs = parse_docstring(docstring(func))
    model, fields = _build_model(func, tool_name, param_docs, local_ns or {})
    return summary, _schema(model), _make_validator(tool_name, model, fields)


def _unpartial(func: Callable[..., Any]) -> Callable[..., Any]:
    while isinstance(func, functools.partial):
        func = func.func
    return func


def docstring(func: Callable[..., Any]) -> str | None:
    """The docstring of what ``func`` wraps (a partial's function)."""
    return inspect.getdoc(_unpartial(func))


def default_name(func: Callable[..., Any]) -> str:
    """A tool name for ``func``: its ``__name__``, else its type's name."""
    target = _unpartial(func)
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__name__


def _unwrap(func: Callable[..., Any]) -> Any:
    """What carries ``func``'s annotations and docstring: a partial's function, an object's call."""
    target: Any = _unpartial(func)
    if inspect.isclass(target):
        return target.__init__
    return target if inspect.isroutine(target) else type(target).__call__


def _type_hints(func: Callable[..., Any], local_ns: Mapping[str, Any]) -> dict[str, Any]:
    """Resolved annotations of ``func`` (``Annotated`` kept), trying the caller's locals too."""
    target = _unwrap(func)
    try:
        try:
            return typing.get_type_hints(target, include_extras=True)
        except NameError:
            return typing.get_type_hints(target, localns=dict(local_ns), include_extras=True)
    except (NameError, TypeError) as exc:
        raise TypeError(f"tool: cannot resolve the type hints of {func!r}: {exc}") from exc


def _user_field(hint: Any) -> FieldInfo | None:
    """The ``Field(...)`` inside ``Annotated[T, Field(...)]``, if any (the last one wins)."""
    if typing.get_origin(hint) is not Annotated:
        return None
    found = [m for m in hint.__metadata__ if isinstance(m, FieldInfo)]
    return found[-1] if found else None


def _field_name(param: str, index: int, taken: set[str]) -> str:
    """A model field name for ``param``: itself unless pydantic would reject or shadow it."""
    if not param.startswith("_") and not hasattr(pydantic.BaseModel, param):
        return param
    candidate = f"tool_param_{index}"
    while candidate in taken:
        candidate += "_"
    return candidate


def _build_model(
    func: Callable[..., Any],
    tool_name: str,
    param_docs: Mapping[str, str],
    local_ns: Mapping[str, Any],
) -> tuple[type[pydantic.BaseModel], tuple[tuple[str, str], ...]]:
    """The arguments model of ``func`` and its ``(field name, parameter name)`` pairs."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"tool: cannot read the signature of {func!r}: {exc}") from exc
    hints = _type_hints(func, local_ns)
    taken = set(sig.parameters)
    definitions: dict[str, Any] = {}
    fields: list[tuple[str, str]] = []
    for index, param in enumerate(sig.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"tool {tool_name!r}: {star}{param.name} is not supported; "
                "declare each argument as a named parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {tool_name!r}: positional-only parameter {param.name!r} is not supported; "
                "tools are called with keyword arguments"
            )
        hint = hints.get(param.name, Any)
        user = _user_field(hint)
        alias = user.alias if user is not None and user.alias else param.name
        extra: dict[str, Any] = {}
        doc = param_docs.get(param.name)
        if doc and (user is None or user.description is None):
            extra["description"] = doc
        default = PydanticUndefined if param.default is param.empty else param.default
        field = _field_name(param.name, index, taken)
        taken.add(field)
        definitions[field] = (hint, pydantic.Field(default, alias=alias, **extra))
        fields.append((field, param.name))
    model = pydantic.create_model(
        f"{tool_name}_arguments",
        __config__=pydantic.ConfigDict(arbitrary_types_allowed=True),
        **definitions,
    )
    return model, tuple(fields)


def _auto_title(name: str) -> str:
    return name.title().replace("_", " ").strip()


def _drop_auto_titles(properties: Any) -> None:
    if isinstance(properties, dict):
        for key, prop in properties.items():
            if isinstance(prop, dict) and prop.get("title") == _auto_title(key):
                del prop["title"]


def _schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema without pydantic's generated titles (``$defs`` kept)."""
    schema = model.model_json_schema(by_alias=True, schema_generator=_SchemaGenerator)
    schema.pop("title", None)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    _drop_auto_titles(schema["properties"])
    for definition in schema.get("$defs", {}).values():
        if isinstance(definition, dict):
            _drop_auto_titles(definition.get("properties"))
    return schema


def _describe(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_context=False):
        loc = ".".join(str(p) for p in err["loc"])
        text = err["msg"]
        if err["type"] != "missing":
            shown = repr(err["input"])
            if len(shown) > _MAX_INPUT_REPR:
                shown = shown[: _MAX_INPUT_REPR - 3] + "..."
            text = f"{text} (got {shown})"
        parts.append(f"{loc!r}: {text}" if loc else text)
    return "; ".join(parts)


def _make_validator(
    tool_name: str, model: type[pydantic.BaseModel], fields: tuple[tuple[str, str], ...]
) -> ArgumentsValidator:
    """A validator returning the handler's keyword arguments as validated objects."""
    validate = model.model_validate
    identity = all(f == p for f, p in fields)

    def validator(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        if type(arguments) is not dict:
            if not isinstance(arguments, Mapping):
                raise ToolArgumentError(
                    f"Invalid arguments for tool {tool_name!r}: expected an object, "
                    f"got {type(arguments).__name__}"
                )
            arguments = dict(arguments)
        try:
            values = validate(arguments).__dict__
        except pydantic.ValidationError as exc:
            raise ToolArgumentError(
                f"Invalid arguments for tool {tool_name!r}: {_describe(exc)}"
            ) from exc
        if identity:
            return values
        return {p: values[f] for f, p in fields}

    return validator
