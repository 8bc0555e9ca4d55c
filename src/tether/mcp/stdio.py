"""``McpStdio``: an MCP server run as a child process, spoken to over its stdin and stdout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from .child import child_streams
from .elicitation import OnElicit
from .prefix import command_prefix
from .redact import scrub, secret_args, secret_env
from .sampling import Sampling
from .server import McpServer
from .stderr import StderrTail

__all__ = ["McpStdio"]


class McpStdio(McpServer):
    """``command args...`` as an MCP server. The child gets a minimal environment (``HOME``,
    ``PATH``, ``SHELL``, ``TERM``, ``USER``, ``LOGNAME``) plus ``env``; the last 64 KB of its
    stderr are kept so a failure can quote its last lines (with the values of ``env`` and what
    looks like a credential in ``args`` blanked); whatever it starts ends with the session.
    Its ``auto_prefix`` is ``name``, else the package or script a launcher runs
    (``npx -y @scope/server-x@1`` is ``server_x``), else the command's name; its ``prefix``
    is ``name``, else ``name_prefix``, else that. With ``name_prefix`` every tool is offered
    as ``{name_prefix}__{tool}``, as padwan-ai's is. Past ``tool_search`` tools (40;
    ``False``: never) the model is offered a search for them instead of every schema.
    ``on_elicit`` answers the server when it asks the user for input (``Elicitation``)."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | Path | None = None,
        name: str | None = None,
        name_prefix: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        list_timeout: float = 5.0,
        tool_search: int | bool = 40,
        on_elicit: OnElicit | None = None,
        on_sampling: Sampling | None = None,
    ) -> None:
        if not command:
            raise ValueError("McpStdio needs a command")
        if isinstance(args, str):
            raise TypeError("McpStdio args must be a list of strings, not one string")
        super().__init__(
            command_prefix(command, args),
            timeout,
            connect_timeout,
            list_timeout,
            name=name,
            name_prefix=name_prefix,
            tool_search=tool_search,
            on_elicit=on_elicit,
            on_sampling=on_sampling,
        )
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self._stderr = StderrTail()

    def describe(self) -> str:
        # The command only: its arguments may hold a token.
        return f"MCP server {self.prefix!r} ({self.command})"

    def __repr__(self) -> str:
        return f"McpStdio({self.command!r}, name={self.prefix!r})"

    @property
    def label(self) -> str:
        """The command line as configured, what looks like a credential in it blanked."""
        return scrub(" ".join([self.command, *self.args]), secret_args(self.args))

    def _transport(self) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        self._stderr = StderrTail()  # this process's own
        return child_streams(self.command, self.args, self.env, self.cwd, self._stderr)

    def _secrets(self) -> Sequence[str]:
        return [*secret_env(self.env), *secret_args(self.args)]

    def _tail(self) -> str:
        return self._stderr.text()
