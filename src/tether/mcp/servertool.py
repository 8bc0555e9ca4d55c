"""``ServerTool``: one of an MCP server's tools as the loop offers it. Its name always fits every
provider, whatever it is renamed to (a session prefixes a name another tool already has), and
the server is always called by the name it gave."""

from __future__ import annotations

from dataclasses import dataclass

from ..tools.tool import Tool
from .names import fitted

__all__ = ["ServerTool"]


@dataclass(slots=True, eq=False)
class ServerTool(Tool):
    """A ``Tool`` whose ``name`` is fitted to providers' limits on every construction (copies
    made with ``dataclasses.replace`` included); ``remote`` is the server's own name for it."""

    remote: str = ""

    def __post_init__(self) -> None:
        if not self.remote:
            self.remote = self.name
        self.name = fitted(self.name)
        Tool.__post_init__(self)
