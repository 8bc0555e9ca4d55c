"""Shared fixtures: one real local model (llama.cpp serving Qwen2.5-Coder-1.5B) per test session,
and a temporary $TETHER_HOME for every test; the check, before each test, that the real parts it
needs are here (``parts.py``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

import parts

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
        f"a failure where {parts.ALL_PARTS} is set)",
    )
    config.addinivalue_line(
        "markers", "needs(kind): needs the test server kind (postgres, redis); see parts.py"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    parts.require(item)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if parts.skipped:
        what = ", ".join(f"{part} ({n})" for part, n in sorted(parts.skipped.items()))
        terminalreporter.write_line(f"skipped for want of real parts: {what}; {parts.HOW}")
    if _skips_refused(terminalreporter):
        terminalreporter.write_line(f"a test skipped, and {parts.ALL_PARTS} promises none: failed")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Where every part is promised, a run that skipped anything has not passed."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == pytest.ExitCode.OK and _skips_refused(reporter):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _skips_refused(reporter: pytest.TerminalReporter | None) -> bool:
    return bool(os.environ.get(parts.ALL_PARTS) and reporter and reporter.stats.get("skipped"))


@pytest.fixture(scope="session")
def local_model() -> Iterator[LocalModel]:
    """The weights fetched (once, then cached) and one server started for the whole session.

    Where the platform cannot run it, the test is skipped, except where every part is promised
    (``scripts/test.sh``, CI), where that is a failure: CI must not pass by skipping the model.
    """
    from tether.local import LocalModel, LocalModelUnavailable, WeightsError

    model = LocalModel()
    try:
        model.start_sync()
    except (LocalModelUnavailable, WeightsError) as exc:
        parts.absent("the local model", str(exc))
    try:
        yield model
    finally:
        model.stop_sync()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Debian's headless Chromium, driven by Playwright (no browser download)."""
    playwright = pytest.importorskip("playwright.async_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        parts.absent("Chromium")
    async with playwright.async_playwright() as p:
        launched = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()
