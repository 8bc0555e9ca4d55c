"""Whether a host is this machine only: the one test behind every loopback-or-token rule (the
chat server, the MCP server)."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, no port; IPv6 with or without brackets) is this
    machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False
