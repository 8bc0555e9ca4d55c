"""``tether worker`` and ``tether run --durable`` as a user types them: a run started from the
terminal is served by a worker process, its events streamed as JSON lines; bad command lines
get exit code 2 and one clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import durable_agents as da

from conftest import HERE, WorkerProcess
from tether.durable import DevServer


def _tether(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_tether_run_durable_streams_a_run_served_by_a_worker(
    temporal: DevServer, ledger: Path, tmp_path: Path
) -> None:
    queue = f"cli-{os.getpid()}"
    worker = WorkerProcess(temporal.address, queue, "planner", log=tmp_path / "w.log")
    worker.wait_ready()
    try:
        prompt = da.plan([("pay", {"to": "ann", "amount": 2})])
        done = _tether(
            "run", "--durable", "--agent", "durable_agents:planner", "--task-queue", queue,
            "--address", temporal.address, "--id", "cli-run-1", "--json", prompt,
        )  # fmt: skip
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "iteration_start" and kinds[-1] == "session_end"
    assert "tool_result" in kinds
    text = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert text == "done: paid 2 to ann"
    assert "worker ready: planner on task queue" in worker.log.read_text()


def test_bad_durable_command_lines_are_usage_errors(temporal: DevServer) -> None:
    missing = _tether("run", "--durable", "hello")
    assert missing.returncode == 2
    assert "needs --agent MODULE:ATTR and --task-queue Q" in missing.stderr
    unknown = _tether("worker", "--agent", "no_such_module:agent", "--task-queue", "q")
    assert unknown.returncode == 2
    assert "--agent no_such_module:agent: no module named 'no_such_module'" in unknown.stderr
    wrong = _tether("worker", "--agent", "durable_agents:plan", "--task-queue", "q")
    assert wrong.returncode == 2
    assert "not an Agent or TemporalAgent" in wrong.stderr
    no_queue = _tether("worker", "--agent", "durable_agents:planner")
    assert no_queue.returncode == 2
