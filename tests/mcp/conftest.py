"""Real MCP servers for the tests: ``@modelcontextprotocol/server-everything`` (npm, installed by
``scripts/test.sh`` into ``$TETHER_CACHE_DIR/npm``), ``mcp-server-time`` (PyPI),
``servers/changing.py`` (the SDK's own server) and ``servers/hostile.py`` (JSON-RPC by hand,
breaking every rule on request). Missing servers skip their tests, or fail them under
``scripts/test.sh`` (``parts.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import free_port, http_server, wait_for_port

from parts import absent

HERE = Path(__file__).parent
CACHE = Path(
    os.environ.get("TETHER_CACHE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether"
)
EVERYTHING = Path(
    os.environ.get("TETHER_MCP_EVERYTHING")
    or CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
CHANGING = HERE / "servers" / "changing.py"


@pytest.fixture(scope="session")
def everything() -> list[str]:
    """The command line of server-everything over stdio."""
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        absent("@modelcontextprotocol/server-everything (with node)")
    return [node, str(EVERYTHING), "stdio"]


@pytest.fixture(scope="session")
def time_server() -> str:
    """The ``mcp-server-time`` executable."""
    found = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    if not Path(found).exists():
        absent("mcp-server-time")
    return found


@pytest.fixture
def changing(tmp_path: Path) -> tuple[list[str], Path]:
    """The command line of the changing server over stdio, and its marker directory."""
    return [sys.executable, str(CHANGING), "stdio", str(tmp_path)], tmp_path


@pytest.fixture
def everything_http(everything: list[str]) -> Iterator[str]:
    """server-everything over Streamable HTTP on 127.0.0.1; its URL."""
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port), "HOST": "127.0.0.1"}
    proc = subprocess.Popen(
        [everything[0], everything[1], "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def changing_http(tmp_path: Path) -> Iterator[str]:
    """The changing server over Streamable HTTP on 127.0.0.1; its URL."""
    with http_server(CHANGING, str(tmp_path)) as url:
        yield url


HOSTILE = HERE / "servers" / "hostile.py"


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[list[str], Path]:
    """The command line of the hostile server over stdio (flags go after it), and its marker
    directory."""
    return [sys.executable, str(HOSTILE), "stdio", str(tmp_path)], tmp_path


@pytest.fixture
def hostile_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The hostile server over Streamable HTTP on 127.0.0.1: its URL and marker directory."""
    with http_server(HOSTILE, str(tmp_path)) as url:
        yield url, tmp_path
