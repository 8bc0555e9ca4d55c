"""What goes wrong outside the run is one ``tether: error: ...`` line on stderr and a non-zero
exit code, never a traceback: a bad ``--store``, an unwritable ``--html`` page, an absurd time
zone."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tether.cli import main
from tether.cli.app import build_agent, run_turn
from tether.cli.demo.tools import current_time, demo_tools
from tether.cli.render import RichRenderer
from tether.testing import Call, Reply, ScriptedTransport


def one_error_line(stderr: str) -> str:
    (line,) = stderr.splitlines()
    assert line.startswith("tether: error: ") and "Traceback" not in stderr
    return line


def tether_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("kind", ["directory", "not a database"])
def test_sessions_of_a_bad_store(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    if kind == "directory":
        store.mkdir()
    else:
        store.write_bytes(b"this is not SQLite, " * 100)
    assert main(["sessions", "--store", str(store)]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert str(store) in line


def test_sessions_of_a_bad_store_in_a_real_process(tmp_path: Path) -> None:
    proc = tether_cli("sessions", "--store", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1
    one_error_line(proc.stderr)


def test_chat_on_a_store_it_cannot_create(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tether.cli.make_transport", lambda opts: ScriptedTransport([]))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["chat", "--store", str(blocker / "chats.db")]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"tether: error: cannot open the session store {blocker / 'chats.db'}: ")


def _a_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "run.jsonl"
    trace.write_text(
        '{"v": 1, "trace": "t", "span": "s", "parent": null, "kind": "run",'
        ' "name": "invoke_agent a", "start": 1, "end": 2, "attributes": {}}\n'
    )
    return trace


def test_an_unwritable_html_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _a_trace(tmp_path)
    page = tmp_path / "missing" / "page.html"
    assert main(["trace", str(trace), "--html", str(page)]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert str(page) in line
    assert main(["trace", str(trace), "--html", str(tmp_path)]) == 1  # a directory
    one_error_line(capsys.readouterr().err)


def test_an_unwritable_html_page_in_a_real_process(tmp_path: Path) -> None:
    trace = _a_trace(tmp_path)
    proc = tether_cli("trace", str(trace), "--html", str(tmp_path / "no" / "p.html"), cwd=tmp_path)
    assert proc.returncode == 1
    one_error_line(proc.stderr)


def test_a_300_character_time_zone_is_an_unknown_zone() -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        asyncio.run(current_time.handler("Europe/" + "x" * 300))


def test_a_300_character_time_zone_in_a_run_says_so_in_one_line(tmp_path: Path) -> None:
    zone = "z" * 300
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("current_time", {"timezone": zone})]), Reply("sorry")]
    )
    out = Console(file=io.StringIO(), force_terminal=False, width=400)
    agent = build_agent(model, demo_tools(tmp_path), system="s")
    outcome = asyncio.run(run_turn(agent, "time?", RichRenderer(out)))
    assert outcome.error is None and outcome.text == "sorry"
    result = model.requests[1].messages[-1].content[0]
    shown = getattr(result, "content", "")
    assert "unknown time zone" in str(shown)
    assert "OSError" not in str(shown) and "zoneinfo" not in str(shown)  # no machine path
