"""``kind: mcp`` tools (§2.9, §11.2): the call goes to the MCP tool of the same name on the
server the connection names, through tether's MCP client.

Connections: ``key``/``anonymous``/``remote`` with an ``endpoint`` speak Streamable HTTP (the
``apiKey`` as a bearer token, ``headers`` added, both to that URL only); ``command``/``args``/
``env`` (a ``stdio`` connection, outside the spec) run a local server, only when the host
allowed it, as it runs a command a file names; ``reference`` uses an ``McpServer`` the
application registered (``register_connection``) and entered itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...mcp import McpError, McpServer, McpStdio, McpStreamable
from ...messages import TextBlock
from ..errors import ToolKindError
from ..execution.tool_sessions import ServerFactory, connected
from ..model import ConnectionConfig, McpApprovalMode, McpServerTool, PromptAgent, ToolDefinition
from ..registry import get_connection
from .common import check_env_credentials

__all__ = ["McpKind"]

_HTTP_KINDS = ("key", "anonymous", "remote")


@dataclass(frozen=True, slots=True)
class McpKind:
    """The handler of ``kind: mcp`` tools. ``allow_stdio`` lets ``.prompty`` files start
    local server commands; ``timeout`` bounds each call, ``connect_timeout`` each connection."""

    allow_stdio: bool = False
    timeout: float = 60.0
    connect_timeout: float = 30.0

    async def __call__(
        self,
        tool_def: ToolDefinition,
        args: Mapping[str, Any],
        agent: PromptAgent,
        inputs: Mapping[str, Any],
    ) -> Any:
        """Call the server's tool ``tool_def.name``; an error result raises ``McpError``."""
        definition = _callable(tool_def)
        async with self._server(definition, agent) as server:
            result = await server.call(definition.name, args)
        if result.is_error:
            raise McpError(f"MCP tool {definition.name!r} failed: {_text(result.content)}")
        return result.content

    async def parameters_schema_async(
        self, tool_def: ToolDefinition, agent: PromptAgent
    ) -> dict[str, Any] | None:
        """The server's input schema for the tool (None when the server has no such tool)."""
        definition = _callable(tool_def)
        async with self._server(definition, agent) as server:
            tools = await server.list_tools()
        found = [t for t in tools if getattr(t, "remote", t.name) == definition.name]
        return None if not found or found[0].schema is None else dict(found[0].schema)

    @asynccontextmanager
    async def _server(
        self, definition: McpServerTool, agent: PromptAgent
    ) -> AsyncIterator[McpServer]:
        connection = definition.connection
        if connection is None:
            raise ToolKindError(f"MCP tool {definition.name!r} has no connection")
        if connection.kind == "reference":
            yield _registered(connection)
            return
        key, factory = self._factory(definition, connection, agent)
        async with connected(key, factory) as server:
            yield server

    def _factory(
        self, definition: McpServerTool, connection: ConnectionConfig, agent: PromptAgent
    ) -> tuple[Hashable, ServerFactory]:
        name = definition.server_name
        if "command" in connection.extra:
            if not self.allow_stdio:
                raise ToolKindError(
                    f"MCP tool {definition.name!r} would run a local command; allow it with "
                    "register_builtin_kinds(allow_stdio=True) if the .prompty files are trusted"
                )
            command, args, env = _stdio_settings(connection)
            cwd = None if agent.source is None else str(Path(agent.source).parent)
            stdio_key = ("stdio", command, tuple(args), tuple(sorted(env.items())), cwd)
            return stdio_key, lambda: McpStdio(
                command,
                args,
                env,
                cwd=cwd,
                name=name,
                timeout=self.timeout,
                connect_timeout=self.connect_timeout,
            )
        if connection.kind not in _HTTP_KINDS or not connection.endpoint:
            raise ToolKindError(
                f"MCP tool {definition.name!r}: connection kind {connection.kind!r} is not "
                "supported (key, anonymous or remote with an endpoint; reference; or command)"
            )
        url, token = connection.endpoint, connection.api_key
        raw_headers = connection.extra.get("headers", {})
        given = raw_headers.items() if isinstance(raw_headers, Mapping) else ()
        credentials = {"apiKey": token, **{f"headers.{k}": v for k, v in given}}
        check_env_credentials(definition.name, url, url, credentials, agent.source)
        headers = _strings(raw_headers, "connection.headers")
        http_key = ("http", url, token, tuple(sorted(headers.items())))
        return http_key, lambda: McpStreamable(
            url,
            token,
            headers,
            name=name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
        )


def _callable(tool_def: ToolDefinition) -> McpServerTool:
    """``tool_def`` if the model may call it: allowed, and needing no approval."""
    if not isinstance(tool_def, McpServerTool):
        raise ToolKindError(f"tool {tool_def.name!r} is not an MCP tool")
    name = tool_def.name
    if tool_def.allowed_tools is not None and name not in tool_def.allowed_tools:
        raise ToolKindError(f"MCP tool {name!r} is not in allowedTools")
    if _needs_approval(tool_def.approval_mode, name):
        raise ToolKindError(
            f"MCP tool {name!r} needs approval (approvalMode), which this runtime cannot ask "
            "for: set approvalMode never, or handle the tool with register_tool"
        )
    return tool_def


def _needs_approval(mode: McpApprovalMode | None, name: str) -> bool:
    if mode is None or mode.kind == "never":
        return False
    if mode.kind == "specify":
        if name in (mode.always_require_approval_tools or ()):
            return True
        return name not in (mode.never_require_approval_tools or ())
    return True  # always, or a kind this runtime does not know: the safe reading


def _registered(connection: ConnectionConfig) -> McpServer:
    server = get_connection(connection.name or "")
    if not isinstance(server, McpServer):
        raise ToolKindError(
            f"connection {connection.name!r} is not a registered MCP server "
            "(register_connection(name, McpStdio(...)) and enter it)"
        )
    return server


def _stdio_settings(connection: ConnectionConfig) -> tuple[str, list[str], dict[str, str]]:
    command = connection.extra.get("command")
    if not isinstance(command, str) or not command:
        raise ToolKindError("connection.command must be a non-empty string")
    args = connection.extra.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ToolKindError("connection.args must be a list of strings")
    return command, args, _strings(connection.extra.get("env", {}), "connection.env")


def _strings(value: Any, field: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ToolKindError(f"{field} must be a mapping of strings to strings")
    return dict(value)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextBlock)) or "(no text)"
