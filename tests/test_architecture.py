"""ARCHITECTURE.md matches the code: its tables are the tests' (layers, the loop's order), its
layout the top of the package, its commands the CLI's, its httpx modules the ones that import
httpx, and every module, folder, class and name it points to exists."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import test_public_api
from test_public_api import LAYERS, LOOP_LAYERS
from tether.cli import COMMANDS

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "tether"
TEXT = (ROOT / "ARCHITECTURE.md").read_text()


def _section(title: str) -> str:
    """The text under the heading ``title``, up to the next heading (of any level)."""
    found = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#|\Z)", TEXT, re.MULTILINE | re.DOTALL)
    assert found, f"ARCHITECTURE.md has no heading {title!r}"
    return found.group(1)


def _rows(title: str) -> list[list[str]]:
    """The cells of each row of the tables under ``title``, less each table's header."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in _section(title).splitlines()
        if line.startswith("|")
    ]

    def rule(row: list[str]) -> bool:
        return all(set(cell) <= set("-:") for cell in row)

    return [
        row
        for i, row in enumerate(rows)
        if not rule(row) and not (i + 1 < len(rows) and rule(rows[i + 1]))
    ]


def _named(cell: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", cell))


def test_the_layer_table_is_the_layer_test() -> None:
    table = {layer: _named(families) for layer, families, *_ in _rows("Layers")}
    assert table == LAYERS


def test_the_loops_order_is_loop_layers() -> None:
    """The table shows ``LOOP_LAYERS`` rank by rank, lowest first."""
    table = [(rank, _named(modules)) for rank, modules, *_ in _rows("The loop's order")]
    assert table == list(LOOP_LAYERS.items())


def test_the_layout_shows_every_entry_at_the_top_of_the_package() -> None:
    top = {
        p.name + ("/" if p.is_dir() else "")
        for p in SRC.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    shown = [row[0].strip("`") for row in _rows("Layout")]
    assert sorted(shown) == sorted(top)


def test_the_commands_it_lists_are_the_clis() -> None:
    listed = [re.fullmatch(r"`tether ([\w-]+)`", row[0]) for row in _rows("The doors")]
    assert all(listed), [row[0] for row in _rows("The doors")]
    assert sorted(m.group(1) for m in listed if m) == sorted(COMMANDS)


def _importers(library: str) -> set[str]:
    """Each module (path under ``src/tether``) importing ``library``, at module level or in a
    function."""
    found = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if any(name.split(".")[0] == library for name in names):
                found.add(str(path.relative_to(SRC)))
    return found


def test_the_modules_it_says_need_httpx_are_the_ones_importing_it() -> None:
    libraries = re.findall(r"^- \*\*(\w+)\*\*(.*?)(?=^- |\Z)", _section("Libraries"), re.S | re.M)
    named = {library: set(re.findall(r"`([\w/]+\.py)`", text)) for library, text in libraries}
    assert {"httpx", "httpx2"} <= set(named)
    for library, modules in named.items():
        assert _importers(library) == modules, library


def _defined() -> set[str]:
    """Every name the package defines or takes (classes, functions, variables, attributes,
    parameters) and every module or package name in it."""
    names = {
        part for path in SRC.rglob("*") for part in path.relative_to(SRC).with_suffix("").parts
    }
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name | ast.arg):
                names.add(node.id if isinstance(node, ast.Name) else node.arg)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return names | {"tether"} | set(vars(test_public_api)) | set(vars(builtins))


def test_every_name_it_gives_is_in_the_code() -> None:
    """Each name in code quotes (``Agent.run``, ``visible``, ``DurableRun.events()``) is one the
    code defines: a renamed function or class shows here, not in a reader's search."""
    defined = _defined()
    quoted = re.findall(r"`([A-Za-z_][\w.]*)(?:\(.*?\))?`", TEXT)
    unknown = sorted(
        {name for name in quoted if not name.endswith(".md")}
        - {name for name in quoted if set(name.split(".")) <= defined}
    )
    assert not unknown, unknown


def test_every_path_it_names_exists() -> None:
    named = set(re.findall(r"`([\w./-]+(?:\.py|/))`", TEXT))
    assert len(named) > 30
    missing = [
        path
        for path in sorted(named)
        if not any((base / path).exists() for base in (SRC, SRC.parent, ROOT, SRC / "transports"))
    ]
    assert not missing, missing


def test_every_class_it_names_is_importable_from_the_module_it_says() -> None:
    named = re.findall(r"`([A-Z]\w+)` \(`([\w/]+)\.py`", TEXT)
    assert named
    for name, path in named:
        module = importlib.import_module("tether." + path.replace("/", "."))
        assert hasattr(module, name), (name, path)


def _classes() -> dict[str, list[str]]:
    """Each class name defined at the top level of a module, with the modules defining it."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    return found


def test_no_class_name_has_two_meanings() -> None:
    twice = {n: where for n, where in _classes().items() if len(where) > 1 and n[0] != "_"}
    assert not twice, twice


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert not long, long


def test_the_prompty_doors_exceptions_live_in_its_errors_module() -> None:
    """Every exception the Prompty door defines is in ``prompty/errors.py``, except the turn
    engine's two private signals, which never reach a caller."""
    signals = {"JournalFailed", "TurnHalted"}
    errors = vars(importlib.import_module("tether.prompty.errors"))
    elsewhere = []
    for path in sorted((SRC / "prompty").rglob("*.py")):
        module = importlib.import_module(
            "tether."
            + ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        )
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and module.__name__ != "tether.prompty.errors"
                and name not in signals
            ):
                elsewhere.append(f"{module.__name__}.{name}")
    assert not elsewhere, elsewhere
    assert {"PromptyError", "TurnCancelled", "TurnGuardrailError", "RenderError"} <= set(errors)
