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
from .args import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .terminal import error_line, safe_text

__all__ = ["add_mcp_commands", "command_mcp"]

SECRET_VARIABLE = "TETHER_MCP_CLIENT_SECRET"


def add_mcp_commands(commands: Any, parser_class: Any) -> None:
    """``tether mcp login`` and ``tether mcp logout``."""
    mcp = commands.add_parser(
        "mcp",
        help="log in to (or out of) an MCP server that asks for OAuth",
        description="Log in to an MCP server over HTTP that asks for OAuth 2.1: the tokens are "
        "kept (0600) where McpStreamable(url, auth=OAuth()) finds them.",
    )
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", parser_class=parser_class)
    login = actions.add_parser(
        "login",
        help="log in with the browser and keep the tokens",
        description="Log in to the MCP server at URL: its authorization server's address is "
        "printed (and opened in the browser), you approve there, the browser comes back to "
        "127.0.0.1, and the tokens are kept. A client registers itself where the "
        f"authorization server offers it; else give --client-id (its secret, if any, in "
        f"${SECRET_VARIABLE}).",
    )
    login.add_argument("url", metavar="URL", help="the MCP server's address, e.g. .../mcp")
    _token_file(login)
    login.add_argument("--client-id", metavar="ID", help="a client registered beforehand")
    login.add_argument(
        "--authorization-server",
        metavar="URL",
        help="the only authorization server the MCP server may send you to",
    )
    login.add_argument(
        "--port",
        type=int,
        default=0,
        help="the loopback port the browser comes back to (default: the one registered last, "
        "else a free one; a client given by --client-id needs its registered one)",
    )
    login.add_argument(
        "--no-browser", action="store_true", help="only print the address, do not open it"
    )
    login.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for the login (default: %(default)s)",
    )
    login.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    logout = actions.add_parser(
        "logout",
        help="forget the tokens kept for a server",
        description="Remove the tokens (and the registration) kept for the MCP server at URL.",
    )
    logout.add_argument("url", metavar="URL", help="the MCP server's address")
    _token_file(logout)


def _token_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="where the tokens are kept (default: one file per server under $TETHER_HOME/"
        "mcp-oauth, else tether/mcp-oauth in the user's config directory)",
    )


def command_mcp(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """``tether mcp login`` or ``tether mcp logout``."""
    if opts.mcp_command is None:
        err.print(error_line("tether mcp needs an action: login or logout"), soft_wrap=True)
        return EXIT_USAGE
    try:
        from ..mcp import OAuth, McpStreamable  # noqa: PLC0415

        secret = os.environ.get(SECRET_VARIABLE) or None
        auth = OAuth(
            client_id=getattr(opts, "client_id", None),
            client_secret=secret if getattr(opts, "client_id", None) else None,
            token_file=opts.token_file,
            authorization_server=getattr(opts, "authorization_server", None),
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
    if not 0 <= opts.port <= 65535 or opts.timeout <= 0:
        err.print(error_line("--port is 0 to 65535 and --timeout a positive number"))
        return EXIT_USAGE

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
        tools = asyncio.run(auth.login(opts.url, browser=show, port=opts.port, timeout=opts.timeout))
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
