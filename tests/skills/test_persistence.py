"""``JsonLinesPersistence`` keeps a run's events whatever they hold and whatever the disk does:
text JSON's UTF-8 cannot carry is escaped, a write is whole or raises (the file as it was), a
line a crash cut short is left out, and a damaged line is an error naming the file and line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.skills import (
    CallSkillAction,
    EventStream,
    FinalAnswerAction,
    JsonLinesParseError,
    JsonLinesPersistence,
    MaxIterationsObservation,
    ModelErrorObservation,
    SkillObservation,
)
from tether.skills import persistence as persistence_module

pytestmark = pytest.mark.timeout(60)

FUZZ = settings(
    fuzz(200),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def events() -> list[Any]:
    return [
        CallSkillAction(skill_name="look", args={"city": "Oslo"}, thought="t"),
        SkillObservation("look", "sunny"),
        FinalAnswerAction(answer="Sunny.", thought="done"),
    ]


def _as_json(event: Any) -> Any:
    return persistence_module.event_to_json(event)


def written(path: Path, values: list[Any]) -> JsonLinesPersistence:
    store = JsonLinesPersistence(path)
    for value in values:
        store.append(value)
    return store


# -- what a line can hold --------------------------------------------------------------------------


def test_a_lone_surrogate_is_escaped_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    store = written(path, [SkillObservation("look", "a\ud800b"), SkillObservation("look", "é")])
    raw = path.read_bytes()
    assert b"\\ud800" in raw  # escaped, so the line is valid UTF-8
    assert "é".encode() in raw  # other text stays readable
    assert list(store.load_stream()) == [
        SkillObservation("look", "a\ud800b"),
        SkillObservation("look", "é"),
    ]


def test_a_value_that_cannot_be_written_touches_nothing(tmp_path: Path) -> None:
    path = tmp_path / "new" / "events.jsonl"
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        JsonLinesPersistence(path).append(SkillObservation("look", deep))
    assert not path.exists()


def test_a_model_error_round_trips(tmp_path: Path) -> None:
    store = written(tmp_path / "e.jsonl", [ModelErrorObservation("ConnectionError: down", 4)])
    assert list(store.load_stream()) == [ModelErrorObservation("ConnectionError: down", 4)]


# -- whole writes ----------------------------------------------------------------------------------


def test_short_writes_are_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    sizes: list[int] = []

    def short_write(fd: int, data: Any) -> int:
        sizes.append(len(data))
        return real_write(fd, bytes(data[:5]))  # the kernel may write less than asked

    monkeypatch.setattr(persistence_module.os, "write", short_write)
    store = written(tmp_path / "events.jsonl", events())
    assert len(sizes) > 3
    assert list(store.load_stream()) == events()


def test_a_write_failing_midway_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    store = written(path, events())
    before = path.read_bytes()
    real_write = os.write
    calls = 0

    def failing_write(fd: int, data: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[:7]))
        raise OSError(27, "File too large")

    monkeypatch.setattr(persistence_module.os, "write", failing_write)
    with pytest.raises(OSError, match="File too large"):
        store.append(SkillObservation("look", "x" * 100))
    assert path.read_bytes() == before
    monkeypatch.undo()
    store.append(FinalAnswerAction(answer="again"))
    assert list(store.load_stream())[-1] == FinalAnswerAction(answer="again")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-size limits")
def test_a_file_size_limit_is_an_error_and_the_file_is_kept_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    written(path, events())
    size = path.stat().st_size
    child = textwrap.dedent(
        f"""
        import json, resource, signal, sys
        from tether.skills import JsonLinesPersistence, SkillObservation
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({size + 20}, {size + 20}))
        try:
            JsonLinesPersistence({str(path)!r}).append(SkillObservation("look", "x" * 200))
        except OSError as exc:
            print(json.dumps({{"raised": type(exc).__name__, "errno": exc.errno}}))
        else:
            print(json.dumps({{"raised": None}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["raised"] == "OSError" and report["errno"] == 27  # EFBIG
    assert path.stat().st_size == size  # no part of the line is left behind
    assert list(JsonLinesPersistence(path).load_stream()) == events()


# -- reading back ----------------------------------------------------------------------------------


def test_a_line_a_crash_cut_short_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    store = written(path, events())
    with path.open("ab") as f:
        f.write(b'{"type": "SkillObservation", "skill_na')
    assert list(store.load_stream()) == events()
    assert len(store.load()) == 3


def test_the_next_append_drops_a_cut_line_instead_of_joining_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    store = written(path, events())
    with path.open("ab") as f:
        f.write(b'{"type": "Skill')
    store.append(FinalAnswerAction(answer="later"))
    assert list(store.load_stream()) == [*events(), FinalAnswerAction(answer="later")]
    assert path.read_bytes().endswith(b"\n")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (b'{"type": "SkillObs\n', "not JSON"),
        (b"\xff\xfe{}\n", "not UTF-8"),
        (b"[" * 5000 + b"]" * 5000 + b"\n", "not JSON"),
    ],
)
def test_a_damaged_line_is_an_error_naming_the_file_and_line(
    tmp_path: Path, damage: bytes, reason: str
) -> None:
    path = tmp_path / "events.jsonl"
    written(path, events()[:1])
    with path.open("ab") as f:
        f.write(damage)
    written(path, events()[1:])
    with pytest.raises(JsonLinesParseError) as caught:
        JsonLinesPersistence(path).load()
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.path == path and error.line == 2
    assert str(error).startswith(f"{path}: line 2: {reason}")


@pytest.mark.parametrize(
    "line",
    [
        {"type": "SkillObservation"},
        {"type": "CallSkillAction", "skill_name": "look", "args": [1]},
        {"type": "FinalAnswerAction", "answer": 3},
        {"type": "ModelErrorObservation", "message": "m", "attempts": True},
        {"type": "MaxIterationsObservation", "iterations": 2, "partial_state": "abc"},
        {"type": "MaxIterationsObservation", "iterations": 2, "partial_state": [{"x": 1}]},
    ],
)
def test_a_line_that_is_not_the_event_its_type_names_is_an_error(
    tmp_path: Path, line: dict[str, Any]
) -> None:
    path = tmp_path / "events.jsonl"
    store = written(path, [*events(), line, FinalAnswerAction(answer="after")])
    assert store.load()[3] == line  # as plain JSON it reads
    with pytest.raises(JsonLinesParseError, match=r"line 4: not a "):
        store.load_stream()


def test_nested_partial_states_still_load(tmp_path: Path) -> None:
    inner = MaxIterationsObservation(1, "", EventStream(events()))
    outer = MaxIterationsObservation(2, "x", EventStream([inner]))
    store = written(tmp_path / "e.jsonl", [outer])
    assert list(store.load_stream()) == [outer]


TYPES = ["CallSkillAction", "SkillObservation", "MaxIterationsObservation", "Other", 3]
FIELDS = ["type", "skill_name", "args", "result", "iterations", "partial_state", "attempts"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(TYPES),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=10,
)
LINES = st.one_of(
    st.binary(max_size=40),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.builds(lambda e: json.dumps(e).encode(), st.sampled_from(events()).map(_as_json)),
)


@FUZZ
@given(st.lists(LINES, max_size=6).map(b"\n".join) | st.binary(max_size=300))
def test_any_bytes_load_as_values_or_a_typed_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    store = JsonLinesPersistence(path)
    for read in (store.load, store.load_stream):
        try:
            read()
        except JsonLinesParseError as exc:
            assert exc.path == path and exc.line >= 1
