"""The demo file tools see only the allowed directory: ``..`` and absolute paths that lead outside
it, symbolic links, and files that are not regular files are refused with a clear message."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether import Agent
from tether.cli.demo.tools import OutsideDirectoryError, demo_tools, resolve_inside
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


def test_links_are_not_followed(tree: Path) -> None:
    """Links are refused wherever they point, naming the link; a listing still shows them."""
    (tree / "link.txt").symlink_to(tree.parent / "secret.txt")
    (tree / "linkdir").symlink_to(tree.parent / "outside", target_is_directory=True)
    (tree / "inner.txt").symlink_to(tree / "hello.txt")
    (tree / "innerdir").symlink_to(tree / "sub", target_is_directory=True)
    for name, path, link in [
        ("read_file", "link.txt", "link.txt"),
        ("read_file", "linkdir/x.txt", "linkdir"),
        ("read_file", "./linkdir/../linkdir/x.txt", "linkdir"),
        ("list_files", "linkdir", "linkdir"),
        ("read_file", "inner.txt", "inner.txt"),
        ("read_file", "innerdir/notes.md", "innerdir"),
        ("list_files", "innerdir", "innerdir"),
    ]:
        is_error, text = call(tree, name, path=path)
        assert is_error, (name, path)
        assert f"LinkRefusedError: {link!r} is a symbolic link" in text, text
        assert "top secret" not in text and "outside\n" not in text
    _, listing = call(tree, "list_files")
    assert "link.txt (link)" in listing and "innerdir (link)" in listing


def test_dotdot_inside_the_root_is_folded_as_text(tree: Path) -> None:
    assert call(tree, "read_file", path="./sub//../hello.txt") == (False, "hello\nworld\n")
    assert call(tree, "list_files", path="sub/..")[1].startswith(". holds 2 entries:")
    assert resolve_inside(tree, "sub/../sub/./notes.md") == (tree / "sub/notes.md").resolve()


def test_resolve_inside_raises_permission_error(tree: Path) -> None:
    with pytest.raises(OutsideDirectoryError) as info:
        resolve_inside(tree, "../secret.txt")
    assert isinstance(info.value, PermissionError)
    assert resolve_inside(tree, "sub") == (tree / "sub").resolve()


def test_missing_and_wrong_kind(tree: Path) -> None:
    is_error, text = call(tree, "read_file", path="nope.txt")
    assert is_error and "does not exist" in text
    is_error, text = call(tree, "read_file", path="sub")
    assert is_error and "is a directory" in text
    is_error, text = call(tree, "list_files", path="hello.txt")
    assert is_error and "'hello.txt' is a file, not a directory" in text
    is_error, text = call(tree, "read_file", path="hello.txt/x")
    assert is_error and "'hello.txt' is a file, not a directory" in text
    is_error, text = call(tree, "read_file", path="nope/x.txt")
    assert is_error and "'nope' does not exist" in text
    is_error, text = call(tree, "read_file", path=".")
    assert is_error and "is a directory" in text


def test_binary_files_are_refused(tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    is_error, text = call(tree, "read_file", path="blob.bin")
    assert is_error and "binary" in text


def test_long_files_are_cut(tree: Path) -> None:
    (tree / "long.txt").write_text("x" * 5000)
    is_error, text = call(tree, "read_file", path="long.txt", max_chars=100)
    assert not is_error
    assert text.startswith("x" * 100 + "\n[... truncated: first 100 characters of 5,000 bytes]")


# -- special files, and a directory swapped for a link while a path is being opened -----------


def _make_special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
        return
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays behind


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_special_files_are_refused_without_blocking(tree: Path, kind: str) -> None:
    _make_special(tree / "special", kind)
    is_error, text = call(tree, "read_file", path="special")
    assert is_error
    assert "'special' is not a regular file" in text
    assert not call(tree, "list_files")[0]


def _swap_for_link(directory: Path, target: Path) -> None:
    directory.rename(directory.with_name(directory.name + ".moved"))
    directory.symlink_to(target, target_is_directory=True)


def _swap_on_open(
    monkeypatch: pytest.MonkeyPatch, directory: Path, target: Path, when: Callable[[str], bool]
) -> list[str]:
    """Make ``os.open``/``os.scandir`` swap ``directory`` for a link on the first call that
    ``when`` accepts: after every check on the path, before (or during) the opening."""
    swapped: list[str] = []
    real_open, real_scandir = os.open, os.scandir

    def maybe_swap(path: object) -> None:
        name = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else ""
        if not swapped and when(name):
            _swap_for_link(directory, target)
            swapped.append(name)

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> int:
        maybe_swap(path)
        return real_open(path, *args, **kwargs)

    def fake_scandir(path: Any = ".") -> Any:
        maybe_swap(path)
        return real_scandir(path)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "scandir", fake_scandir)
    return swapped


@pytest.mark.parametrize(
    ("name", "path", "when"),
    [
        ("read_file", "sub/notes.md", lambda name: True),  # before the first open
        ("read_file", "sub/notes.md", lambda name: name.endswith("notes.md")),  # mid-walk
        ("list_files", "sub", lambda name: True),
    ],
    ids=["read-before-open", "read-before-last-open", "list-before-open"],
)
def test_directory_swapped_for_a_link_during_the_open_cannot_escape(
    tree: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    path: str,
    when: Callable[[str], bool],
) -> None:
    outside = tree.parent / "outside"
    (outside / "notes.md").write_text("outside secret")
    swapped = _swap_on_open(monkeypatch, tree / "sub", outside, when)
    is_error, text = call(tree, name, path=path)
    assert swapped, "the swap never happened"
    assert "outside secret" not in text and "x.txt" not in text
    assert is_error or text in ("# notes\n", "sub holds 1 entry:\nnotes.md (8 bytes)"), text


@pytest.mark.parametrize(("name", "path"), [("read_file", "a\x00b"), ("list_files", "\x00")])
def test_nul_in_a_path_is_refused(tree: Path, name: str, path: str) -> None:
    is_error, text = call(tree, name, path=path)
    assert is_error and "NUL character" in text
