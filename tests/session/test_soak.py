"""A short soak (bench/soak.py runs the full one): hundreds of AgentSession conversations on a
file store and on SQLite with faults injected; nothing acknowledged lost, no session stuck."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from soak import soak

from tether.stores import FileStore, SQLiteStore


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_a_soak_with_faults_loses_nothing_and_leaves_no_session_stuck(
    kind: str, tmp_path: Path
) -> None:
    def make() -> Any:
        return FileStore(tmp_path / "files") if kind == "file" else SQLiteStore(tmp_path / "s.db")

    figures = await soak(make, sessions=400, rate=0.05, seed=3)
    assert figures.cancelled and figures.model_errors and figures.tool_errors  # faults did happen
    assert figures.acknowledged > 400 * 5
    assert (figures.lost, figures.stuck) == (0, 0), figures
