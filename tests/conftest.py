"""Shared fixtures: one real local model (llama.cpp serving Qwen2.5-Coder-1.5B) per test session,
and a temporary $TETHER_HOME for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tether.local import LocalModel


@pytest.fixture(autouse=True)
def _chats_in_a_temporary_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI keeps chats under $TETHER_HOME: never the user's own during tests."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path_factory.mktemp("tether-home")))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "local_model: uses the real local model server (skipped where it cannot run; "
        "a failure in CI, where CI is set)",
    )


@pytest.fixture(scope="session")
def local_model() -> Iterator[LocalModel]:
    """The weights fetched (once, then cached) and one server started for the whole session.

    Where the platform cannot run it, the test is skipped, except in CI (``$CI`` set), where
    that is a failure: CI must not pass by skipping the real model.
    """
    from tether.local import LocalModel, LocalModelUnavailable, WeightsError

    model = LocalModel()
    try:
        model.start_sync()
    except (LocalModelUnavailable, WeightsError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the local model, and it cannot run: {exc}")
        pytest.skip(f"the local model cannot run here: {exc}")
    try:
        yield model
    finally:
        model.stop_sync()
