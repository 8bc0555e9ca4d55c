"""The first turn on the real local model says what it waits for: checking the weights, loading
the model, the first token; as plain lines on stderr off a terminal (stdout stays JSON lines), as
a spinner cleared before the answer on one. Each test starts the model once (seconds): two only.
The same with a scripted slow model, for every case: tests/cli/test_cli_waiting.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from test_cli_local_model import Terminal, tether_cli
from test_cli_waiting import CLEAR, SPINNER, spinner_lines

import parts

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(900)]

SHORT = ["--model", "local", "--no-demo-tools", "--max-tokens", "64", "--max-iterations", "1"]
PROMPT = "Answer with one word: what colour is the sky?"


@pytest.fixture(scope="module", autouse=True)
def _needs_local_model() -> None:
    from tether.local import LocalModelUnavailable, check_platform

    try:
        check_platform()
    except LocalModelUnavailable as exc:
        parts.absent("the local model", str(exc))


def test_the_first_turn_says_each_phase_on_stderr(tmp_path: Path) -> None:
    proc = tether_cli("run", "--json", *SHORT, PROMPT, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # every line is JSON
    assert events[-1]["type"] == "session_end" and events[-1]["error"] is None
    said = [line for line in proc.stderr.splitlines() if line.startswith("tether: ")]
    assert said[:2] == ["tether: checking the model's weights…", "tether: loading the model…"]
    # the wait for the first token is said after the load, at most once: only if it passes 1 s,
    # which a short prompt on a quiet machine may not (test_cli_waiting.py pins it, slow model)
    assert said[2:] in ([], ["tether: waiting for the first token…"]), proc.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_terminal_shows_the_model_loading_then_the_answer(tmp_path: Path) -> None:
    term = Terminal([sys.executable, "-m", "tether.cli", "run", *SHORT, PROMPT], tmp_path)
    try:
        assert term.wait(timeout=600) == 0, term.text
    finally:
        term.close()
    raw = term.raw.decode()
    drawn = spinner_lines(raw)
    assert any(re.fullmatch(rf"[{SPINNER}] loading the model · \d+ s", d) for d in drawn), drawn
    last = max(raw.rfind(d) for d in drawn)
    summary = re.search(r"1 iteration · [\d,]+ tokens in", raw)
    assert summary is not None, term.text
    assert last < raw.find(CLEAR, last) < summary.start()  # cleared before the answer
