"""One operation of an OpenAPI 3 document, read for a ``kind: openapi`` tool: its method and
path, parameters, JSON body, security and servers, with local ``$ref``s inlined (cycles cut,
size capped), and the JSON Schema the model fills to call it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ToolKindError

__all__ = ["Operation", "Parameter", "operation_schema", "pick_operation"]

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_LOCATIONS = ("path", "query", "header")
_IGNORED_HEADERS = frozenset(("accept", "content-type", "authorization", "host", "cookie"))
_MAX_NODES = 20_000  # values in one operation's schemas once references are inlined


@dataclass(frozen=True, slots=True)
class Parameter:
    """A path, query or header parameter."""

    name: str
    location: str
    required: bool
    schema: Mapping[str, Any]
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """What calling one operation needs. ``flat_body``: the body is an object whose properties
    are the tool's own arguments (else one ``body`` argument carries it)."""

    method: str
    path: str
    parameters: tuple[Parameter, ...]
    body_schema: Mapping[str, Any] | None
    body_required: bool
    flat_body: bool
    security: tuple[Mapping[str, Any], ...] | None
    security_schemes: Mapping[str, Any]
    servers: tuple[Mapping[str, Any], ...]


def pick_operation(spec: Any, name: str) -> Operation:
    """The operation whose ``operationId`` is ``name``, else the document's only operation."""
    doc = _mapping(spec, "the OpenAPI document")
    found: list[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]] = []
    for path, item in _mapping(doc.get("paths", {}), "paths").items():
        item_map = _mapping(_Refs(doc).resolve(item), f"paths[{path}]")
        for method in METHODS:
            if method in item_map:
                found.append((path, method, item_map, _mapping(item_map[method], method)))
    chosen = [f for f in found if f[3].get("operationId") == name]
    if not chosen and len(found) == 1:
        chosen = found
    if len(chosen) != 1:
        ids = ", ".join(str(f[3].get("operationId")) for f in found) or "(none)"
        raise ToolKindError(f"no single OpenAPI operation for tool {name!r} (operationIds: {ids})")
    return _operation(doc, *chosen[0])


def operation_schema(op: Operation) -> dict[str, Any]:
    """The JSON Schema of the tool's arguments: parameters, then the body."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in op.parameters:
        schema = dict(p.schema)
        if p.description and "description" not in schema:
            schema["description"] = p.description
        props[p.name] = schema
        if p.required:
            required.append(p.name)
    if op.body_schema is not None and op.flat_body:
        props.update(op.body_schema.get("properties", {}))
        if op.body_required:
            required += [r for r in op.body_schema.get("required", ()) if isinstance(r, str)]
    elif op.body_schema is not None:
        props["body"] = dict(op.body_schema)
        if op.body_required:
            required.append("body")
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _operation(
    doc: Mapping[str, Any],
    path: str,
    method: str,
    item: Mapping[str, Any],
    operation: Mapping[str, Any],
) -> Operation:
    refs = _Refs(doc)
    params = _parameters(
        refs, [*_list(item.get("parameters")), *_list(operation.get("parameters"))]
    )
    body_schema, body_required = _body(refs, operation.get("requestBody"))
    names = {p.name for p in params}
    body_props = None if body_schema is None else body_schema.get("properties")
    flat = (
        isinstance(body_props, Mapping)
        and body_schema is not None
        and body_schema.get("type", "object") == "object"
        and not names & set(body_props)
    )
    security = operation.get("security", doc.get("security"))
    components = _mapping(doc.get("components", {}), "components")
    return Operation(
        method=method.upper(),
        path=path,
        parameters=params,
        body_schema=body_schema,
        body_required=body_required,
        flat_body=flat,
        security=None if security is None else tuple(_list(security)),
        security_schemes=_mapping(components.get("securitySchemes", {}), "securitySchemes"),
        servers=tuple(_list(operation.get("servers", doc.get("servers")))),
    )


def _parameters(refs: _Refs, raw: Sequence[Any]) -> tuple[Parameter, ...]:
    """Path-item parameters overridden by the operation's (same name and place)."""
    by_key: dict[tuple[str, str], Parameter] = {}
    for entry in raw:
        p = _mapping(refs.resolve(entry), "a parameter")
        name, where = p.get("name"), p.get("in")
        if not isinstance(name, str) or where not in _LOCATIONS:
            continue  # cookie parameters and malformed entries are not sent
        if where == "header" and name.lower() in _IGNORED_HEADERS:
            continue  # OpenAPI: such header parameters are ignored
        schema = refs.inline(p.get("schema", {"type": "string"}))
        description = p.get("description")
        by_key[(name, where)] = Parameter(
            name=name,
            location=where,
            required=where == "path" or p.get("required") is True,
            schema=schema if isinstance(schema, Mapping) else {},
            description=description if isinstance(description, str) else None,
        )
    return tuple(by_key.values())


def _body(refs: _Refs, raw: Any) -> tuple[Mapping[str, Any] | None, bool]:
    if raw is None:
        return None, False
    body = _mapping(refs.resolve(raw), "requestBody")
    content = _mapping(body.get("content", {}), "requestBody.content")
    media = next((m for m in content if m.split(";")[0].strip().endswith("json")), None)
    if media is None:
        raise ToolKindError("only JSON request bodies are supported")
    schema = refs.inline(_mapping(content[media], media).get("schema", {}))
    return (schema if isinstance(schema, Mapping) else {}), body.get("required") is True


class _Refs:
    """Local ``$ref`` resolution (``#/components/...``) over one document."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc
        self.nodes = 0

    def resolve(self, value: Any, depth: int = 0) -> Any:
        """``value``, or what its ``$ref`` points at (chains followed a bounded number of times)."""
        while isinstance(value, Mapping) and isinstance(value.get("$ref"), str):
            if depth > 16:
                raise ToolKindError("OpenAPI $ref chain too long")
            value = self._target(value["$ref"])
            depth += 1
        return value

    def inline(self, value: Any, seen: tuple[str, ...] = ()) -> Any:
        """``value`` with every local reference replaced by its target; a cycle becomes ``{}``."""
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            raise ToolKindError(f"OpenAPI schemas larger than {_MAX_NODES} values")
        if isinstance(value, Mapping):
            ref = value.get("$ref")
            if isinstance(ref, str):
                return {} if ref in seen else self.inline(self._target(ref), (*seen, ref))
            return {k: self.inline(v, seen) for k, v in value.items()}
        if isinstance(value, list):
            return [self.inline(v, seen) for v in value]
        return value

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ToolKindError(f"only local OpenAPI references are supported, not {ref!r}")
        node: Any = self.doc
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or key not in node:
                raise ToolKindError(f"OpenAPI reference {ref!r} points at nothing")
            node = node[key]
        return node


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ToolKindError(f"{what} in the OpenAPI document must be a mapping")
    return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
