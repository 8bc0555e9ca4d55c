"""ARCHITECTURE.md matches the code: its layer table is the layer test's, and every module, folder
and name it points to exists."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from test_public_api import LAYERS

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "tether"
TEXT = (ROOT / "ARCHITECTURE.md").read_text()


def test_the_layer_table_is_the_layer_test() -> None:
    rows = re.findall(r"^\| (\w+) \| ([^|]+) \|", TEXT, re.MULTILINE)
    table = {
        layer: set(re.findall(r"`(\w+)`", families)) for layer, families in rows if layer != "layer"
    }
    assert table == LAYERS


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
