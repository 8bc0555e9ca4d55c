"""``examples/08_durable_run.py`` as its docstring says: a real ``tether worker`` serving its
agent, and the example run as the client, against a real Temporal dev server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import WorkerProcess
from tether.durable import DevServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/08_durable_run.py"


def test_the_durable_example_runs_on_a_worker(temporal: DevServer, tmp_path: Path) -> None:
    worker = WorkerProcess(
        temporal.address, "examples", f"{ROOT / EXAMPLE}:agent", log=tmp_path / "worker.log"
    )
    try:
        worker.wait_ready()
        done = subprocess.run(
            [sys.executable, EXAMPLE, temporal.address],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "-> pay({'amount': 5, 'to': 'Ann'})"
    assert lines[1].startswith("<- paid 5 EUR to Ann (key pay-ann-")  # its idempotency key
    key = lines[1].removeprefix("<- paid 5 EUR to Ann (key ").removesuffix(")")
    assert key.endswith(":1:call_1")
    assert lines[2] == f"Done: paid 5 EUR to Ann (key {key})."  # streamed from the worker
    assert lines[3] == f"answer: Done: paid 5 EUR to Ann (key {key})."
    assert "worker ready: payer on task queue 'examples'" in worker.log.read_text()
