"""tether's pytest plugin (registered by the package's ``pytest11`` entry point): the ``cassette``
fixture and the ``--record`` option that says how it records."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cassette import Cassette

__all__ = ["cassette", "pytest_addoption"]

_MODES = ("once", "new", "all", "none")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("tether").addoption(
        "--record",
        nargs="?",
        const="new",
        default="once",
        choices=_MODES,
        help=(
            "how the cassette fixture records: once (default: record a missing cassette, "
            "else replay), new (--record alone: also record requests not yet recorded), all "
            "(record every cassette again), none (replay only, never record: CI)"
        ),
    )


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """The test's HTTP exchanges recorded to, or replayed from,
    ``cassettes/<test module>/<test name>.json`` beside the test file."""
    name = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
    path = Path(request.path).parent / "cassettes" / request.path.stem / f"{name}.json"
    with Cassette(path, mode=request.config.getoption("record")) as recorder:
        yield recorder
