"""The demo file tools see only the allowed directory: ``..``, absolute paths and links that lead
outside it are refused with a clear message."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tether import Agent
from tether.cli.demo_tools import OutsideRootError, demo_tools, resolve_inside
from tether.messages import ToolUseBlock
from tether.testing import ScriptedTransport


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\nworld\n")
    (root / "sub" / "notes.md").write_text("# notes\n")
    (tmp_path / "secret.txt").write_text("top secret")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.txt").write_text("outside")
    return root


def call(root: Path, name: str, **arguments: object) -> tuple[bool, str]:
    agent = Agent(system="", transport=ScriptedTransport([]), tools=list(demo_tools(root)))
    [result] = asyncio.run(agent.dispatch_tools([ToolUseBlock("c1", name, arguments)], 1))
    assert isinstance(result.content, str)
    return result.is_error, result.content


def test_demo_toolset_names() -> None:
    names = [t.name for t in demo_tools(Path())]
    assert names == ["current_time", "calculate", "convert_units", "list_files", "read_file"]
    for t in demo_tools(Path()):
        assert len(t.description) > 20, t.name


def test_read_inside(tree: Path) -> None:
    assert call(tree, "read_file", path="hello.txt") == (False, "hello\nworld\n")
    assert call(tree, "read_file", path="sub/../sub/notes.md") == (False, "# notes\n")
    assert call(tree, "read_file", path=str(tree / "hello.txt")) == (False, "hello\nworld\n")


def test_list_inside(tree: Path) -> None:
    is_error, text = call(tree, "list_files")
    assert not is_error
    assert text.splitlines() == [". holds 2 entries:", "hello.txt (12 bytes)", "sub/"]
    is_error, text = call(tree, "list_files", path="sub")
    assert text.splitlines() == ["sub holds 1 entry:", "notes.md (8 bytes)"]


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "..", "../outside"])
def test_dotdot_is_refused(tree: Path, path: str) -> None:
    for name in ("read_file", "list_files"):
        is_error, text = call(tree, name, path=path)
        assert is_error
        assert "is outside the allowed directory" in text
        assert "top secret" not in text


def test_absolute_path_outside_is_refused(tree: Path) -> None:
    is_error, text = call(tree, "read_file", path=str(tree.parent / "secret.txt"))
    assert is_error and "is outside the allowed directory" in text
    is_error, text = call(tree, "list_files", path="/")
    assert is_error and "is outside the allowed directory" in text


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_links_pointing_outside_are_refused(tree: Path) -> None:
    (tree / "link.txt").symlink_to(tree.parent / "secret.txt")
    (tree / "linkdir").symlink_to(tree.parent / "outside", target_is_directory=True)
    (tree / "inner.txt").symlink_to(tree / "hello.txt")
    for name, path in [
        ("read_file", "link.txt"),
        ("read_file", "linkdir/x.txt"),
        ("list_files", "linkdir"),
    ]:
        is_error, text = call(tree, name, path=path)
        assert is_error, (name, path)
        assert "is outside the allowed directory" in text
        assert "top secret" not in text and "outside\n" not in text
    assert call(tree, "read_file", path="inner.txt") == (False, "hello\nworld\n")
    _, listing = call(tree, "list_files")
    assert "link.txt (link)" in listing


def test_resolve_inside_raises_permission_error(tree: Path) -> None:
    with pytest.raises(OutsideRootError) as info:
        resolve_inside(tree, "../secret.txt")
    assert isinstance(info.value, PermissionError)
    assert resolve_inside(tree, "sub") == (tree / "sub").resolve()


def test_missing_and_wrong_kind(tree: Path) -> None:
    is_error, text = call(tree, "read_file", path="nope.txt")
    assert is_error and "does not exist" in text
    is_error, text = call(tree, "read_file", path="sub")
    assert is_error and "is a directory" in text
    is_error, text = call(tree, "list_files", path="hello.txt")
    assert is_error and "not a directory" in text


def test_binary_files_are_refused(tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    is_error, text = call(tree, "read_file", path="blob.bin")
    assert is_error and "binary" in text


def test_long_files_are_cut(tree: Path) -> None:
    (tree / "long.txt").write_text("x" * 5000)
    is_error, text = call(tree, "read_file", path="long.txt", max_chars=100)
    assert not is_error
    assert text.startswith("x" * 100 + "\n[... truncated: first 100 characters of 5,000 bytes]")
