"""ARCHITECTURE.md matches the code: its layer table is the layer test's, and every module, folder
and name it points to exists."""

from __future__ import annotations

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
