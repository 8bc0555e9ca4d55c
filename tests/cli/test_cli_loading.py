"""``--tools MODULE:ATTR``: from an importable module or a .py file; a bad value is a one-line
usage error (exit code 2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tether import Tool, tool
from tether.cli import main
from tether.cli.loading import ToolSpecError, load_tool_spec, merge_tools

TOOLS_SOURCE = textwrap.dedent(
    '''
    from tether import tool

    @tool
    def shout(text: str) -> str:
        """Upper-case some text."""
        return text.upper()

    def whisper(text: str) -> str:
        """Lower-case some text."""
        return text.lower()

    ALL = [shout, whisper]
    NUMBER = 42
    EMPTY = []
    '''
)


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / f"mytools_{uuid.uuid4().hex[:8]}.py"
    path.write_text(TOOLS_SOURCE)
    return path


def test_from_a_file_path(tools_file: Path) -> None:
    [shout] = load_tool_spec(f"{tools_file}:shout")
    assert isinstance(shout, Tool) and shout.name == "shout"
    [whisper] = load_tool_spec(f"{tools_file}:whisper")  # a plain function is wrapped
    assert whisper.name == "whisper" and whisper.description == "Lower-case some text."
    assert [t.name for t in load_tool_spec(f"{tools_file}:ALL")] == ["shout", "whisper"]


def test_from_a_module(tools_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tools_file.parent)
    monkeypatch.syspath_prepend(str(tools_file.parent))
    tools = load_tool_spec(f"{tools_file.stem}:ALL")
    assert [t.name for t in tools] == ["shout", "whisper"]
    assert tools[0].handler("hi") == "HI"


def test_a_relative_file_path(tools_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tools_file.parent)
    assert [t.name for t in load_tool_spec(f"./{tools_file.name}:shout")] == ["shout"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expects MODULE:ATTR"),
        ("mod:", "expects MODULE:ATTR"),
        (":attr", "expects MODULE:ATTR"),
        ("missing_dir/missing.py:x", "no such file"),
        ("tether_no_such_module_xyz:x", "no module named 'tether_no_such_module_xyz'"),
        ("tether.cli.demo.calc:no_such_attr", "has no attribute 'no_such_attr'"),
        ("tether.cli.demo.calc:MAX_EXPRESSION_CHARS", "is a int, not a Tool"),
        ("tether.cli.demo.calc:CalculationError", "is a type, not a Tool"),
        ("tether.cli.demo.calc:1bad", "not an attribute name"),
        ("not a module:x", "not a module name"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ToolSpecError, match=message) as info:
        load_tool_spec(spec)
    assert "\n" not in str(info.value)


def test_bad_values_in_a_file(tools_file: Path) -> None:
    with pytest.raises(ToolSpecError, match="NUMBER is a int"):
        load_tool_spec(f"{tools_file}:NUMBER")
    with pytest.raises(ToolSpecError, match="empty list"):
        load_tool_spec(f"{tools_file}:EMPTY")


def test_a_file_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken_tools.py"
    broken.write_text("raise RuntimeError('boom\\nsecond line')\n")
    with pytest.raises(ToolSpecError, match=r"running .* failed: RuntimeError: boom$"):
        load_tool_spec(f"{broken}:x")
    syntax = tmp_path / "syntax_tools.py"
    syntax.write_text("def (:\n")
    with pytest.raises(ToolSpecError, match="SyntaxError"):
        load_tool_spec(f"{syntax}:x")


def test_merge_user_tools_replace_demo_ones() -> None:
    @tool
    def calculate(expression: str) -> str:
        """My own calculator."""
        return expression

    from tether.cli.demo.tools import demo_tools

    merged = merge_tools(demo_tools(Path()), [calculate])
    assert [t.name for t in merged].count("calculate") == 1
    assert merged[-1] is calculate
    with pytest.raises(ToolSpecError, match="two tools are named 'calculate'"):
        merge_tools([], [calculate, calculate])


def test_main_bad_tools_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--tools", str(tmp_path / "nope.py") + ":x", "hello"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("tether: error: --tools ") and "no such file" in lines[0]


def test_main_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["run", "--max-iterations", "0", "hi"],
        ["run", "--temperature", "hot", "hi"],
        ["run", "--root", "/definitely/not/here", "hi"],
        ["run", "--model", "nosuchprovider:x", "hi"],
        ["fly"],
        [],
    ):
        assert main(argv) == 2, argv
        assert "error" in capsys.readouterr().err.lower() or not argv


def test_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out
    for code in ("0 ", "1 ", "2 ", "130"):
        assert f"  {code}" in out


def test_the_real_command_with_a_bad_tools_path(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tether.cli", "run", "--tools", "missing_tools.py:x", "hi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "tether: error: --tools missing_tools.py:x: no such file: missing_tools.py"
    ]
