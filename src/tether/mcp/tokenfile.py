"""Where an MCP server's OAuth tokens are kept: ``TokenStore`` (what any keeper does: ``load``
and ``save`` one record) and ``TokenFile``, the default keeper, a JSON file only its owner may
read (0600, in a 0700 directory), replaced whole on each save so a crash never leaves half a
record. A file that others may read, or a link, is refused rather than used."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from ..base.writes import write_all
from .server import McpError

__all__ = ["TokenFile", "TokenStore", "default_token_file"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_MAX_FILE = 1 << 20  # bytes; a token record is a few hundred


@runtime_checkable
class TokenStore(Protocol):
    """Keeps one MCP server's OAuth record (a JSON object: ``tokens``, ``client``): ``load``
    gives the last one saved (None when there is none), ``save`` replaces it."""

    async def load(self) -> dict[str, Any] | None: ...

    async def save(self, record: dict[str, Any]) -> None: ...


def default_token_file(url: str) -> Path:
    """The file for the server at ``url``: under ``$TETHER_HOME/mcp-oauth``, else
    ``tether/mcp-oauth`` in the user's config directory (``$XDG_CONFIG_HOME``, else
    ``~/.config``), named after the URL's host, port and path."""
    home = os.environ.get("TETHER_HOME")
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    base = Path(home) / "mcp-oauth" if home else Path(config) / "tether" / "mcp-oauth"
    parts = urlsplit(url)
    resource = f"{parts.scheme}://{parts.netloc}{parts.path}"
    slug = re.sub(r"[^A-Za-z0-9]+", "_", f"{parts.netloc}{parts.path}").strip("_")[:60]
    digest = hashlib.sha256(resource.encode()).hexdigest()[:12]
    return base / f"{slug}-{digest}.json"


class TokenFile:
    """A ``TokenStore`` in the file at ``path`` (0600; its directory is made 0700)."""

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"

    async def load(self) -> dict[str, Any] | None:
        """The record saved last; None when there is no file. ``McpError`` for a file that
        others may read or write, a link, or one that is not a token record."""
        try:
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise McpError(f"cannot read the token file {self.path}: {exc.strerror}") from None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise McpError(f"the token file {self.path} is not a regular file")
            if mode & 0o077:
                raise McpError(
                    f"the token file {self.path} may be read by others (mode "
                    f"{stat.S_IMODE(mode):o}): make it private (chmod 600) or remove it"
                )
            data = os.read(fd, _MAX_FILE)
        finally:
            os.close(fd)
        try:
            record = json.loads(data)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise McpError(f"the token file {self.path} is not a token record: log in again")
        return record

    async def save(self, record: dict[str, Any]) -> None:
        """Replace the record, whole: a new 0600 file renamed over the old one."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _CLOEXEC
        fd = os.open(temporary, flags, 0o600)
        try:
            if hasattr(os, "fchmod"):  # a file a crash left keeps the mode it was made with
                os.fchmod(fd, 0o600)
            write_all(fd, json.dumps(record, indent=1).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, self.path)
