"""``tether mcp-serve``: an agent as an MCP server, over stdin and stdout (what Claude Desktop and
editors start), or Streamable HTTP at ``/mcp`` under uvicorn (``--http``) until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from ..mcp.httpguard import HttpGuard, is_loopback
from .app import close_transport, configure_logging
from .args import EXIT_OK, EXIT_USAGE, MCP_HOST, MCP_PORT, CommandError, UsageError
from .loading import ToolSpecError
from .own_agent import load_agent
from .serving import listen
from .terminal import error_line, safe_text

__all__ = ["command_mcp_serve"]

TOKEN_VARIABLE = "TETHER_MCP_TOKEN"


@dataclass(frozen=True, slots=True)
class Where:
    """Where an HTTP server listens, and the token its clients send (None: loopback only)."""

    host: str
    port: int
    token: str | None


def command_mcp_serve(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """Serve ``--agent`` until stdin closes (stdio) or Ctrl-C (``--http``)."""
    configure_logging(opts.verbose)
    try:
        where = http_settings(opts)
        from ..mcp import serve_agent  # noqa: PLC0415

        agent = load_agent(opts.agent)
        server = serve_agent(agent)
        app = None if where is None else server.asgi(token=where.token, host=where.host)
    except (UsageError, ToolSpecError, ValueError) as exc:
        err.print(error_line(str(exc)), soft_wrap=True)
        return EXIT_USAGE
    except ImportError as exc:
        raise CommandError.about("tether mcp-serve needs the mcp extra", exc) from exc
    try:
        if app is None or where is None:
            asyncio.run(_stdio(server, agent))
        else:
            asyncio.run(_http(app, where, agent, out))
    except KeyboardInterrupt:  # uvicorn stops on Ctrl-C, then raises it again
        if where is not None:
            out.print("stopped")
    return EXIT_OK


def http_settings(opts: argparse.Namespace) -> Where | None:
    """``--http``'s address and token (None for stdio); ``UsageError`` for an option that does
    not apply, or a host other than loopback without a token."""
    if not opts.http:
        for value, option in (
            (opts.host, "--host"),
            (opts.port, "--port"),
            (opts.token, "--token"),
        ):
            if value is not None:
                raise UsageError(f"{option} applies only with --http (stdio has no address)")
        return None
    host = MCP_HOST if opts.host is None else opts.host
    token = opts.token if opts.token is not None else os.environ.get(TOKEN_VARIABLE) or None
    if token is None and not is_loopback(host):
        raise UsageError(
            f"--host {host} is not a loopback address: give --token (or set {TOKEN_VARIABLE}), "
            "which every client must then send as 'Authorization: Bearer <token>'"
        )
    HttpGuard.checked(token, host)  # a token too short to be one: ValueError
    return Where(host, MCP_PORT if opts.port is None else opts.port, token)


async def _stdio(server: Any, agent: Any) -> None:
    try:
        await server.run_stdio()
    finally:
        await close_transport(agent.transport)


async def _http(app: Any, where: Where, agent: Any, out: Console) -> None:
    import uvicorn  # noqa: PLC0415

    listening = listen(where.host, where.port)
    try:
        port = listening.getsockname()[1]
        host = f"[{where.host}]" if ":" in where.host else where.host
        out.print(
            safe_text(f"tether mcp-serve: http://{host}:{port}/mcp (Ctrl-C stops)"), soft_wrap=True
        )
        sys.stdout.flush()  # a process that started this one reads the address from a pipe
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=3)
        await uvicorn.Server(config).serve(sockets=[listening])
    finally:
        listening.close()
        await close_transport(agent.transport)
