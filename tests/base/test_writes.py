"""``tether.base.writes``: a write that makes no progress raises rather than looping (the short
writes it goes on after are tested through the trace sink, tests/tracing/test_sink_failure.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.base.writes import write_all


def test_a_write_that_makes_no_progress_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "write", lambda fd, data: 0)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="no progress"):
            write_all(fd, b"line\n")
    finally:
        os.close(fd)
