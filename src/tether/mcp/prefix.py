"""The prefix a server's tools get when their names collide with another source's: made only of
the characters every provider takes in a tool name (letters, digits, ``_`` and ``-``), from the
name the server is given or the name it gives itself. Derived, as padwan-ai's ``auto_prefix``
is, it has letters, digits and ``_`` only: from the package or script its command runs
(``npx -y @scope/server-x@1.2`` is ``server_x``, not ``npx``) or its URL's host
(``mcp.example.com`` is ``mcp_example_com``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath
from urllib.parse import urlsplit

__all__ = [
    "MAX_PREFIX",
    "checked_name_prefix",
    "command_prefix",
    "derived_prefix",
    "host_prefix",
    "prefix_of",
]

MAX_PREFIX = 32  # characters; the rest of a tool's 64 is left to the tool's own name
_OTHER = re.compile(r"[^A-Za-z0-9_-]+")
_NOT_WORD = re.compile(r"[^A-Za-z0-9_]+")  # padwan-ai's: a derived prefix has no ``-``
_ALLOWED = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_PREFIX}}}")
# Commands that run a package or a script named by an argument: that argument names the server.
_LAUNCHERS = frozenset(
    {"npx", "uvx", "bunx", "pnpx", "node", "bun", "deno", "uv", "pipx", "npm", "pnpm", "yarn"}
    | {"python", "python3", "py", "pypy", "pypy3", "tsx", "ts-node", "docker", "podman"}
)
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*|py")
# Words after a launcher that say what to do, not what to run (``uv run x``, ``npm exec x``).
_VERBS = frozenset({"run", "exec", "x", "dlx", "tool"})
# Options known to take a value: the value is not the package.
_VALUED = frozenset(
    {"--from", "--with", "-p", "--package", "--python", "--cwd", "--directory", "--name"}
    | {"-e", "--env", "-v", "--volume", "--network", "--env-file", "-w", "--workdir"}
)
_VERSION = re.compile(r"(?<=.)(@[^/@]*|==.*|>=.*|~=.*)$")
_SCRIPT = re.compile(r"\.(py|js|mjs|cjs|ts|mts)$")
_GENERIC = frozenset({"index", "main", "server", "__main__", "cli", "app", "dist", "build", "src"})


def prefix_of(text: str) -> str:
    """``text`` in allowed characters (each run of others one ``_``), trimmed and cut to
    ``MAX_PREFIX``; ``mcp`` when nothing is left."""
    cleaned = _OTHER.sub("_", text).strip("_-")[:MAX_PREFIX].strip("_-")
    return cleaned or "mcp"


def derived_prefix(text: str) -> str:
    """``text`` as a derived prefix (padwan-ai's rule): each run of characters other than
    letters, digits and ``_`` one ``_``, trimmed of ``_`` and cut to ``MAX_PREFIX``; ``mcp``
    when nothing is left."""
    cleaned = _NOT_WORD.sub("_", text).strip("_")[:MAX_PREFIX].strip("_")
    return cleaned or "mcp"


def host_prefix(url: str) -> str:
    """The derived prefix of an HTTP server: its URL's host."""
    return derived_prefix(urlsplit(url).hostname or "")


def checked_name_prefix(value: object) -> str | None:
    """``value`` as a server's ``name_prefix`` (padwan-ai's: every tool of that server is
    offered as ``{name_prefix}__{tool}``): None, or 1 to ``MAX_PREFIX`` letters, digits, ``_``
    and ``-``, so that every provider takes the names it makes; else ``ValueError``."""
    if value is None:
        return None
    if not isinstance(value, str) or not _ALLOWED.fullmatch(value):
        raise ValueError(
            f"name_prefix must be 1 to {MAX_PREFIX} letters, digits, '_' and '-' (the characters "
            f"every provider takes in a tool name), got {value!r}"
        )
    return value


def command_prefix(command: str, args: Sequence[str]) -> str:
    """The derived prefix of the server ``command args...`` runs: for a launcher (``npx``,
    ``uvx``, ``node``, ``python``, ...) the package or script it is given, else the command's
    name."""
    program = PurePath(command).name
    if program.lower().removesuffix(".exe") not in _LAUNCHERS and not _PYTHON.fullmatch(program):
        return derived_prefix(_SCRIPT.sub("", program))
    target = _target(list(args))
    return derived_prefix(_package(target) if target else program)


def _target(args: list[str]) -> str | None:
    """The first argument that names what is run: after ``-m`` (Python's module), skipping
    options, the values of options known to take one, and verbs such as ``run``; None for
    inline code (``python -c``)."""
    skip = False
    for position, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "-c":
            return None
        elif arg == "-m" and position + 1 < len(args):
            return args[position + 1]
        elif arg.startswith("-"):
            skip = arg in _VALUED
        elif arg not in _VERBS:
            return arg
    return None


def _package(target: str) -> str:
    """A package or script argument as a name: its version pin, scope, directories and script
    extension gone (``/x/server-y/dist/index.js`` is ``server-y``)."""
    target = _VERSION.sub("", target)
    parts = [p for p in PurePath(target).parts if p not in ("/", ".", "..")]
    while len(parts) > 1 and _SCRIPT.sub("", parts[-1]) in _GENERIC:
        parts.pop()  # a generic file (dist/index.js): the directory names the server
    name = _SCRIPT.sub("", parts[-1]) if parts else target
    return name.lstrip("@")
