"""The prefix a server's tools get in a session when their names collide with another source's,
read from the server as padwan-ai's session reads its transports."""

from __future__ import annotations

from typing import Any

from ..mcp.prefix import prefix_of

__all__ = ["derived_prefix", "named_by_itself"]


def derived_prefix(server: Any) -> str | None:
    """The prefix of ``server``'s tools on a collision, in the characters every provider takes;
    None when it asks never to be prefixed (``auto_prefix=False``). Read in order: its
    ``auto_prefix`` when that is a string (padwan's transports derive one), its ``prefix``
    (tether's servers), its ``label``, else ``mcp``."""
    auto = getattr(server, "auto_prefix", None)
    if auto is False:
        return None
    for given in (auto, getattr(server, "prefix", None), getattr(server, "label", None)):
        if isinstance(given, str) and given:
            return prefix_of(given)
    return "mcp"


def named_by_itself(server: Any) -> bool:
    """Whether ``server`` names its own tools (``name_prefix``): the session never prefixes
    them again."""
    return getattr(server, "name_prefix", None) is not None
