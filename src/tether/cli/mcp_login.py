"""``tether mcp login URL`` and ``tether mcp logout URL``: the browser step of OAuth for an MCP
server over HTTP (the authorization address printed and opened, the redirect taken on a
loopback port), and the tokens it keeps, which ``McpStreamable(url, auth=OAuth())`` then uses."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from rich.console import Console

from .app import configure_logging
from .args import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, MCP_SECRET_VARIABLE
from .terminal import error_line, safe_text

__all__ = ["command_mcp"]


def command_mcp(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """``tether mcp login`` or ``tether mcp logout``."""
    if opts.mcp_command is None:
        err.print(error_line("tether mcp needs an action: login or logout"), soft_wrap=True)
        return EXIT_USAGE
    try:
        from ..mcp import McpStreamable, OAuth  # noqa: PLC0415

        secret = os.environ.get(MCP_SECRET_VARIABLE) or None
        auth = OAuth(
            client_id=getattr(opts, "client_id", None),
            client_secret=secret if getattr(opts, "client_id", None) else None,
            token_file=opts.token_file,
            authorization_server=getattr(opts, "authorization_server", None),
            client_metadata_url=getattr(opts, "client_metadata_url", None),
        )
        label = McpStreamable(opts.url, auth=auth).label
    except ValueError as exc:
        err.print(error_line(str(exc)), soft_wrap=True)
        return EXIT_USAGE
    if opts.mcp_command == "logout":
        return _logout(auth, opts.url, label, out)
    return _login(auth, opts, label, out, err)


def _logout(auth: Any, url: str, label: str, out: Console) -> int:
    path = auth.token_path(url)
    if path is not None and path.exists():
        path.unlink()
        out.print(safe_text(f"logged out of {label} (removed {path})"), soft_wrap=True)
    else:
        out.print(safe_text(f"no tokens were kept for {label}"), soft_wrap=True)
    return EXIT_OK


def _login(auth: Any, opts: argparse.Namespace, label: str, out: Console, err: Console) -> int:
    from ..errors import TetherError  # noqa: PLC0415

    configure_logging(opts.verbose)

    def show(authorization_url: str) -> None:
        out.print("Open this address in a browser to log in:")
        out.print(safe_text(authorization_url), soft_wrap=True)
        sys.stdout.flush()  # a process that started this one reads the address from a pipe
        if not opts.no_browser:
            import webbrowser  # noqa: PLC0415 - only when a person logs in

            try:
                webbrowser.open(authorization_url)
            except Exception:  # no browser here: the printed address is enough
                return

    try:
        tools = asyncio.run(auth.login(opts.url, browser=show, port=opts.port, within=opts.timeout))
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED
    except TetherError as exc:
        err.print(error_line(str(exc)), soft_wrap=True, highlight=False)
        return EXIT_FAILED
    kept = auth.token_path(opts.url)
    out.print(
        safe_text(f"logged in to {label} ({tools} tools); tokens kept in {kept}"), soft_wrap=True
    )
    return EXIT_OK
