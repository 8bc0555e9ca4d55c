"""Fixtures of the MCP-server tests: a folder for the agent's markers, a served HTTP agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_serve_helpers import HttpServer


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.fixture
def http_server(markers: Path) -> Iterator[HttpServer]:
    server = HttpServer(markers)
    yield server
    server.close()
