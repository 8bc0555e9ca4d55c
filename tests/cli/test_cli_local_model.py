"""The real commands against the real local model: ``tether run`` through a subprocess and
``tether chat`` through a pseudo-terminal (the default ``--model local``).

Each CLI process starts its own in-process server; the weights come from the shared cache
(``TETHER_CACHE_DIR`` when set, passed on with the environment), so they are fetched at most once.
The model runs at a few dozen tokens a second on a small machine: the tests are few, the answers
bounded with ``--max-tokens`` and ``--max-iterations``.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import parts

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(1200)]

TWO_ZONES = "What time is it in Tokyo and in Paris? Use the current_time tool for each city."
BOUNDS = ["--model", "local", "--max-tokens", "256", "--max-iterations", "6"]
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
SUMMARY = re.compile(
    r"\d+ iterations? · [\d,]+ tokens in( \([\d,]+ cached\))?, [\d,]+ out · [\d.]+ s"
)


@pytest.fixture(scope="module", autouse=True)
def _needs_local_model() -> None:
    """Skip where the local model cannot run, or fail where every part is promised."""
    from tether.local import LocalModelUnavailable, check_platform

    try:
        check_platform()
    except LocalModelUnavailable as exc:
        parts.absent("the local model", str(exc))


def tether_cli(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_run_shows_tool_calls_and_an_answer(tmp_path: Path) -> None:
    proc = tether_cli("run", *BOUNDS, "--trace", "run.jsonl", TWO_ZONES, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    calls = [line for line in lines if line.startswith("→ current_time(")]
    results = [line for line in lines if line.startswith("← current_time: ")]
    assert len(calls) >= 2 and len(calls) == len(results), proc.stdout  # Tokyo and Paris
    assert any("Asia/Tokyo" in r for r in results), proc.stdout
    assert any("Europe/Paris" in r for r in results), proc.stdout
    assert SUMMARY.fullmatch(lines[-1]), lines[-1]
    answer = [line for line in lines[:-1] if line[:2] not in ("→ ", "← ") and line.strip()]
    assert answer, f"no answer text in:\n{proc.stdout}"
    assert "Traceback" not in proc.stderr
    check_trace(tmp_path / "run.jsonl", calls=len(calls))


def check_trace(path: Path, calls: int) -> None:
    """The recorded trace of that run: one run span over its model calls (with the local
    model's usage) and one span per tool call (with its arguments); ``tether trace`` shows it."""
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    (run,) = [s for s in spans if s["kind"] == "run"]
    chats = [s for s in spans if s["kind"] == "model"]
    tools = [s for s in spans if s["kind"] == "tool"]
    assert len(chats) >= 2 and len(tools) == calls
    assert all(s["parent"] == run["span"] for s in chats + tools)
    assert all(s["attributes"]["gen_ai.usage.output_tokens"] > 0 for s in chats)
    assert all(s["attributes"]["gen_ai.request.model"] for s in chats)
    arguments = " ".join(s["attributes"]["gen_ai.tool.call.arguments"] for s in tools)
    assert "Tokyo" in arguments and "Paris" in arguments
    shown = tether_cli("trace", str(path), cwd=path.parent)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("execute_tool current_time") == calls


def test_run_json_lines(tmp_path: Path) -> None:
    proc = tether_cli("run", "--json", *BOUNDS, TWO_ZONES, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # every line is JSON
    kinds = [e["type"] for e in events]
    assert "tool_dispatch" in kinds and "tool_result" in kinds
    assert "text_delta" in kinds
    assert kinds[-1] == "session_end" and events[-1]["error"] is None
    assert events[-1]["total_usage"]["output_tokens"] > 0
    dispatched = [e for e in events if e["type"] == "tool_dispatch"]
    assert any(e["name"] == "current_time" for e in dispatched)


# -- chat through a pseudo-terminal -------------------------------------------------------------


class Terminal:
    """A child process on a pseudo-terminal: what it printed, what we typed."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        import pty
        import struct
        import termios
        from fcntl import ioctl

        pid, fd = pty.fork()
        if pid == 0:  # the child: a new session whose controlling terminal is the pty
            try:
                os.chdir(cwd)
                os.environ["TERM"] = "xterm-256color"
                os.environ["PYTHONUNBUFFERED"] = "1"
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.pid, self.fd = pid, fd
        self.raw = b""
        self.seen = 0  # how much of the cleaned text has been matched already

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace")).replace("\r", "")

    def send(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, pattern: str, timeout: float = 600) -> re.Match[str]:
        """Wait for ``pattern`` in what was printed after the last match."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            found = regex.search(self.text, self.seen)
            if found:
                self.seen = found.end()
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r}; got:\n{self.text}")
            if not self._read(min(1.0, max(deadline - time.monotonic(), 0.01))):
                raise AssertionError(f"the process ended before {pattern!r}; got:\n{self.text}")

    def wait(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.2)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        raise AssertionError(f"the process did not exit; got:\n{self.text}")

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_chat_survives_ctrl_c(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "tether.cli", "chat", *BOUNDS]
    term = Terminal(argv, tmp_path)
    try:
        term.expect(r"tether chat · model local")
        term.expect(r"> ")
        term.send("What is 12 * 12? Use the calculate tool.\r")
        term.expect(r"→ calculate\(")
        first = term.expect(SUMMARY.pattern)
        assert "cancelled" not in term.text[first.start() - 12 : first.start()]
        term.expect(r"> ")

        term.send("Write a long story about a cat who learns to sail, in ten paragraphs.\r")
        term.expect(r"ten paragraphs\.\n")  # the line was read: the turn is running
        # the story is streaming (words not of the spinner's "waiting for the first token"):
        # cancel it midway
        term.expect(r"\b(?!(?:waiting|for|the|first|token)\b)[A-Za-z]{2,}\W+[A-Za-z]{2,}")
        term.send("\x03")  # Ctrl-C: cancels this turn only
        term.expect(r"cancelled · " + SUMMARY.pattern)
        term.expect(r"> ")

        term.send("/usage\r")
        term.expect(r"session: 2 turns · [\d,]+ tokens in( \([\d,]+ cached\))?, [\d,]+ out")
        term.expect(r"last turn: cancelled · ")
        term.expect(r"> ")

        term.send("Say hello in five words.\r")
        term.expect(r"five words\.\n")
        last = term.expect(SUMMARY.pattern)
        before = term.text[max(last.start() - 12, 0) : last.start()]
        assert "cancelled" not in before and "failed" not in before, term.text
        assert "error:" not in term.text, term.text
        term.expect(r"> ")

        term.send("\x04")  # Ctrl-D quits
        assert term.wait() == 0, term.text
    finally:
        term.close()
