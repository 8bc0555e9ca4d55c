"""The helpers cassette tests share with the transport and MCP tests: the misbehaving HTTP server
and the MCP servers' helpers."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).parents[1]
for folder in ("transports", "mcp"):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))
