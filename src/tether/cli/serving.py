"""``tether serve``: the agent behind HTTP (``tether.serve.app`` under uvicorn) until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import socket
from typing import Any

from rich.console import Console

from ..agent import Agent
from ..stores.sqlite import SQLiteStore
from .app import close_transport
from .args import EXIT_OK, EXIT_USAGE, CommandError, store_path
from .terminal import error_line, safe_text

__all__ = ["command_serve", "listen"]


def command_serve(opts: argparse.Namespace, agent: Agent, out: Console, err: Console) -> int:
    """Serve ``agent`` on ``--host``/``--port``; a host other than loopback needs a token (one
    is made up, and printed, when none is given)."""
    try:
        from ..serve import app  # noqa: PLC0415 - Starlette: the serve extra
        from ..serve.access import is_loopback  # noqa: PLC0415
    except ImportError as exc:
        message = "tether serve needs the serve extra (starlette, uvicorn)"
        raise CommandError.about(message, exc) from exc
    token = opts.token
    made = token is None and not is_loopback(opts.host)
    if made:
        token = secrets.token_urlsafe(32)
    path = store_path(opts.store)
    path.parent.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(path)  # opens nothing until first used
    try:
        served = app(agent, store, token, allow_origins=opts.allow_origin, a2a=opts.a2a)
    except ImportError as exc:  # --a2a without the a2a extra
        raise CommandError.about("tether serve --a2a needs the a2a extra (a2a-sdk)", exc) from exc
    except ValueError as exc:  # a token or an origin that cannot be one
        said = str(exc) if str(exc).startswith("--allow-origin") else f"--token: {exc}"
        err.print(error_line(said), soft_wrap=True)
        return EXIT_USAGE
    try:
        asyncio.run(_serve(served, store, agent, opts, out, token if made else None))
    except KeyboardInterrupt:  # uvicorn stops on Ctrl-C, then raises it again: the way to stop
        out.print("stopped")
    return EXIT_OK


async def _serve(
    served: Any,
    store: SQLiteStore,
    agent: Agent,
    opts: argparse.Namespace,
    out: Console,
    made: str | None,
) -> None:
    import uvicorn  # noqa: PLC0415

    listening = listen(opts.host, opts.port)
    try:
        _announce(served, listening.getsockname()[1], opts, out, made)
        # Open streams get a few seconds to end on Ctrl-C; then the app's shutdown stops the
        # runs still going (each leaves a valid history) instead of waiting for them.
        config = uvicorn.Config(served, log_level="warning", timeout_graceful_shutdown=3)
        await _server_class()(config, served).serve(sockets=[listening])
    finally:
        listening.close()
        await store.aclose()
        await close_transport(agent.transport)


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port``. Made with the TCP protocol named, so that
    asyncio sets TCP_NODELAY on the connections it accepts (with protocol 0 it does not, and
    each small write then waits ~40 ms for the client's delayed ACK)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(2048)
    except BaseException:
        listening.close()
        raise
    return listening


def _server_class() -> type:
    import uvicorn  # noqa: PLC0415

    class Server(uvicorn.Server):
        """uvicorn's server, which on Ctrl-C first ends the streams of the runs under way."""

        def __init__(self, config: uvicorn.Config, served: Any) -> None:
            super().__init__(config)
            self._served = served
            self._loop = asyncio.get_running_loop()

        def handle_exit(self, sig: int, frame: Any) -> None:
            self._loop.call_soon_threadsafe(self._served.stop_soon)
            super().handle_exit(sig, frame)

    return Server


def _announce(
    served: Any, port: int, opts: argparse.Namespace, out: Console, made: str | None
) -> None:
    host = socket.gethostname() if opts.host in ("0.0.0.0", "::", "") else opts.host
    base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    where = store_path(opts.store)
    out.print(
        safe_text(f"tether serve: {base}/ (sessions in {where}; Ctrl-C stops)"), soft_wrap=True
    )
    if opts.a2a:
        out.print(safe_text(f"A2A: {base}/.well-known/agent-card.json"), soft_wrap=True)
    if served.needs_token:
        link = f"{base}/login?code={served.login_code()}"
        out.print(safe_text(f"open this link once to sign a browser in: {link}"), soft_wrap=True)
    if made is not None:
        out.print(safe_text(f"API clients send: Authorization: Bearer {made}"), soft_wrap=True)
