"""``kind: openapi`` tools (§2.9, §11.2): one HTTP call per tool call, built from an OpenAPI
document beside the agent's file. The call's arguments fill the path, query, header and JSON
body; the base URL is the connection's ``endpoint`` or the document's first server; the key
goes only to that host (as the document's security scheme says, else as a bearer token), and
redirects are never followed. The answer's text is the result (JSON re-serialised compactly)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from ..errors import ToolKindError
from ..model import OpenApiTool, PromptAgent, ToolDefinition
from .common import check_env_credentials, contained_file, read_data_file
from .openapi_spec import Operation, operation_schema, pick_operation

__all__ = ["OpenApiKind"]

_EXCERPT = 2_000  # characters of an error response quoted


@dataclass(frozen=True, slots=True)
class OpenApiRequest:
    """An HTTP request for one OpenAPI operation, ready to send."""

    method: str
    url: str
    params: list[tuple[str, str]]
    headers: dict[str, str]
    body: Any = None
    has_body: bool = False


@dataclass(frozen=True, slots=True)
class OpenApiKind:
    """The handler of ``kind: openapi`` tools; documents may also lie in ``allowed_roots``.
    ``timeout`` bounds a whole call; at most ``max_response_bytes`` of an answer are read."""

    allowed_roots: tuple[Path, ...] = ()
    timeout: float = 30.0
    max_response_bytes: int = 1 << 20

    async def __call__(
        self,
        tool_def: ToolDefinition,
        args: Mapping[str, Any],
        agent: PromptAgent,
        inputs: Mapping[str, Any],
    ) -> str:
        """Make the call; an HTTP error or an unreachable server raises ``ToolKindError``."""
        definition, op = await asyncio.to_thread(self._operation, tool_def, agent)
        base = _base_url(definition, op)
        request = _request(op, base, dict(args))
        key = None if definition.connection is None else definition.connection.api_key
        if key:
            endpoint = None if definition.connection is None else definition.connection.endpoint
            check_env_credentials(definition.name, endpoint, base, {"apiKey": key}, agent.source)
            _authorize(request, op, key)
        try:
            return _redacted(await self._send(request), key)
        except ToolKindError as exc:  # an error page may quote the key back
            raise ToolKindError(_redacted(str(exc), key)) from None

    def parameters_schema(self, tool_def: ToolDefinition, agent: PromptAgent) -> dict[str, Any]:
        """The operation's parameters and body as the tool's JSON Schema."""
        return operation_schema(self._operation(tool_def, agent)[1])

    def _operation(
        self, tool_def: ToolDefinition, agent: PromptAgent
    ) -> tuple[OpenApiTool, Operation]:
        if not isinstance(tool_def, OpenApiTool):
            raise ToolKindError(f"tool {tool_def.name!r} is not an OpenAPI tool")
        reference = tool_def.specification
        if not reference:
            raise ToolKindError(f"OpenAPI tool {tool_def.name!r} names no specification")
        if "://" in reference:
            raise ToolKindError(
                f"OpenAPI tool {tool_def.name!r}: specifications are read from files, not URLs"
            )
        field = f"tools[{tool_def.name}].specification"
        spec = read_data_file(contained_file(reference, agent, self.allowed_roots, field), field)
        return tool_def, pick_operation(spec, tool_def.name)

    async def _send(self, request: OpenApiRequest) -> str:
        timeout = httpx.Timeout(self.timeout)
        try:
            async with (
                asyncio.timeout(self.timeout),
                httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client,
                client.stream(
                    request.method,
                    request.url,
                    params=tuple(request.params),
                    headers=request.headers,
                    json=request.body if request.has_body else None,
                ) as response,
            ):
                raw, cut = await _read_capped(response, self.max_response_bytes)
        except TimeoutError:
            raise ToolKindError(f"{request.method} {_where(request.url)} timed out") from None
        except httpx.HTTPError as exc:
            raise ToolKindError(
                f"{request.method} {_where(request.url)} failed: {type(exc).__name__}"
            ) from None
        return _answer(request, response, raw, cut)


def _base_url(definition: OpenApiTool, op: Operation) -> str:
    """The connection's endpoint, else the document's first server (variables at defaults)."""
    endpoint = None if definition.connection is None else definition.connection.endpoint
    base = endpoint or _server_url(op)
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolKindError(f"OpenAPI tool {definition.name!r}: base URL {base!r} is not http(s)")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ToolKindError(
            f"OpenAPI tool {definition.name!r}: the base URL may hold no login, query or fragment"
        )
    return base.rstrip("/")


def _server_url(op: Operation) -> str:
    if not op.servers or not isinstance(op.servers[0].get("url"), str):
        raise ToolKindError("the OpenAPI document has no servers and the connection no endpoint")
    url: str = op.servers[0]["url"]
    variables = op.servers[0].get("variables")
    for name, variable in (variables if isinstance(variables, Mapping) else {}).items():
        default = variable.get("default") if isinstance(variable, Mapping) else None
        url = url.replace("{" + str(name) + "}", str(default))
    return url


def _request(op: Operation, base: str, args: dict[str, Any]) -> OpenApiRequest:
    """The request for ``args``: each parameter from its argument, the rest the body."""
    path, params, headers = op.path, [], {}
    for p in op.parameters:
        value = args.pop(p.name, None)
        if value is None:
            if p.required:
                raise ToolKindError(f"missing required argument {p.name!r}")
            continue
        if p.location == "path":
            path = path.replace("{" + p.name + "}", _segment(p.name, value))
        elif p.location == "query":
            values = value if isinstance(value, list) else [value]
            params += [(p.name, _scalar(v)) for v in values]
        else:
            headers[p.name] = _header(p.name, value)
    if "{" in path:
        raise ToolKindError(f"path {op.path!r} has a parameter the document does not declare")
    body, has_body = _body(op, args)
    url = base + path
    if not op.path.startswith("/") or _origin(url) != _origin(base):
        raise ToolKindError(f"path {op.path!r} would leave the server {_where(base)}")
    return OpenApiRequest(op.method, url, params, headers, body, has_body)


def _body(op: Operation, rest: dict[str, Any]) -> tuple[Any, bool]:
    if op.body_schema is None:
        if rest:
            raise ToolKindError(f"unknown arguments: {', '.join(sorted(rest))}")
        return None, False
    if op.flat_body:
        return rest, bool(rest) or op.body_required
    if "body" not in rest:
        if op.body_required:
            raise ToolKindError("missing required argument 'body'")
        return None, False
    return rest["body"], True


def _segment(name: str, value: Any) -> str:
    text = _scalar(value)
    if text in ("", ".", ".."):
        raise ToolKindError(f"path argument {name!r} may not be {text!r}")
    return quote(text, safe="")


def _header(name: str, value: Any) -> str:
    text = _scalar(value)
    if any(c in text for c in "\r\n\0"):
        raise ToolKindError(f"header argument {name!r} may not hold line breaks")
    return text


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _authorize(request: OpenApiRequest, op: Operation, key: str) -> None:
    """Put the key where the operation's security scheme says (bearer when none is declared)."""
    if op.security is None:
        request.headers["Authorization"] = f"Bearer {key}"
        return
    for requirement in op.security:
        for name in requirement if isinstance(requirement, Mapping) else ():
            scheme = op.security_schemes.get(name)
            if isinstance(scheme, Mapping) and _apply(scheme, request, key):
                return
    # security: [] or only schemes tether cannot fill: the operation gets no key


def _apply(scheme: Mapping[str, Any], request: OpenApiRequest, key: str) -> bool:
    kind, name, where = scheme.get("type"), scheme.get("name"), scheme.get("in")
    if kind == "apiKey" and isinstance(name, str) and where == "header":
        request.headers[name] = key
    elif kind == "apiKey" and isinstance(name, str) and where == "query":
        request.params.append((name, key))
    elif (kind == "http" and str(scheme.get("scheme", "")).lower() == "bearer") or kind in (
        "oauth2",
        "openIdConnect",
    ):
        request.headers["Authorization"] = f"Bearer {key}"
    else:
        return False
    return True


async def _read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _answer(request: OpenApiRequest, response: httpx.Response, raw: bytes, cut: bool) -> str:
    try:
        text = raw.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = raw.decode("utf-8", errors="replace")
    if response.is_redirect:
        raise ToolKindError(
            f"{request.method} {_where(request.url)} answered {response.status_code} "
            "(a redirect, not followed)"
        )
    if not response.is_success:
        raise ToolKindError(
            f"{request.method} {_where(request.url)} answered HTTP {response.status_code}: "
            f"{text[:_EXCERPT]}"
        )
    if cut:
        return f"{text}\n[response cut at {len(raw)} bytes]"
    if "json" in response.headers.get("content-type", ""):
        try:
            return json.dumps(json.loads(text), ensure_ascii=False)
        except (ValueError, RecursionError):
            return text
    return text


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def _redacted(text: str, key: str | None) -> str:
    return text.replace(key, "[REDACTED]") if key and len(key) >= 8 else text


def _where(url: str) -> str:
    """The URL without its query, which may hold the key."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"
