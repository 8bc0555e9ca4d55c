"""Issue 22 §2.2: a value read with ``${env:NAME}`` never appears in an error or a trace.

Wherever a file puts such a reference (a kind, a name, a format, a provider, a connection),
an error about the value names the reference, ``${env:NAME}``; and the tracer blanks the
value whatever the variable is called.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tether.prompty import load
from tether.prompty.env import EnvValue
from tether.prompty.errors import PromptyError
from tether.prompty.execution.wire import transport_for
from tether.prompty.pipeline import prepare
from tether.prompty.tracing.tracer import Tracer

VALUE = "value-of-a-plain-variable-42"
SHORT = "bq"  # too short for any text search: only knowing where it came from hides it


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIN_SETTING", VALUE)
    monkeypatch.setenv("TINY", SHORT)


def _load(tmp_path: Path, frontmatter: str, body: str = "user:\nhi") -> Any:
    path = tmp_path / "agent.prompty"
    path.write_text(f"---\n{frontmatter}\n---\n{body}\n")
    return load(path, env=["PLAIN_SETTING", "TINY"])


def _refuses(error: BaseException, name: str, value: str) -> None:
    text = str(error)
    assert isinstance(error, PromptyError | ValueError)
    assert "${env:" + name + "}" in text, text
    assert value not in text, text


@pytest.mark.parametrize(("name", "value"), [("PLAIN_SETTING", VALUE), ("TINY", SHORT)])
@pytest.mark.parametrize(
    "frontmatter",
    [
        "inputs:\n  - name: x\n    kind: ${env:VAR}",
        "tools:\n  - {name: '${env:VAR}', kind: function}\n  - {name: '${env:VAR}', kind: mcp}",
        "inputs:\n  - {name: '${env:VAR}'}\n  - {name: '${env:VAR}'}",
        "template: ${env:VAR}",
    ],
    ids=["kind", "duplicate-tool", "duplicate-input", "template"],
)
def test_load_errors_name_the_reference_not_the_value(
    tmp_path: Path, frontmatter: str, name: str, value: str
) -> None:
    with pytest.raises(PromptyError) as raised:
        _load(tmp_path, frontmatter.replace("VAR", name))
    _refuses(raised.value, name, value)


@pytest.mark.parametrize(("name", "value"), [("PLAIN_SETTING", VALUE), ("TINY", SHORT)])
def test_a_renderer_error_names_the_reference(tmp_path: Path, name: str, value: str) -> None:
    agent = _load(tmp_path, f"template:\n  format: ${{env:{name}}}")
    with pytest.raises(PromptyError) as raised:
        prepare(agent, {})
    _refuses(raised.value, name, value)


@pytest.mark.parametrize(("name", "value"), [("PLAIN_SETTING", VALUE), ("TINY", SHORT)])
@pytest.mark.parametrize(
    "model",
    [
        "{id: gpt-4, provider: '${env:VAR}'}",
        "{id: gpt-4, apiType: '${env:VAR}'}",
        "{id: gpt-4, connection: {kind: '${env:VAR}'}}",
        "{id: gpt-4, connection: {kind: reference, name: '${env:VAR}'}}",
    ],
    ids=["provider", "api-type", "connection-kind", "connection-name"],
)
def test_wire_errors_name_the_reference(tmp_path: Path, model: str, name: str, value: str) -> None:
    agent = _load(tmp_path, "model: " + model.replace("VAR", name))
    with pytest.raises(ValueError) as raised:
        transport_for(agent.model)
    _refuses(raised.value, name, value)


class _Recording:
    def __init__(self) -> None:
        self.values: list[Any] = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[Any]:
        yield lambda key, value: self.values.append((key, value))


def test_traces_blank_values_from_the_environment_whatever_the_name(tmp_path: Path) -> None:
    name, value = "PLAIN_SETTING", VALUE
    recording = _Recording()
    Tracer.add("recording", recording)
    try:
        agent = _load(
            tmp_path,
            f"inputs:\n  note:\n    kind: string\n    default: ${{env:{name}}}",
            "system:\nfixed text\nuser:\n{{ note }}",
        )
        messages = prepare(agent, {})
    finally:
        Tracer.remove("recording")
    assert messages[-1].text_value == value  # the value is used...
    traced = json.dumps(recording.values)
    assert recording.values and value not in traced.replace("fixed text", "")  # ...never traced


def test_a_value_from_the_environment_keeps_its_reference_through_copies(tmp_path: Path) -> None:
    agent = _load(tmp_path, "inputs:\n  note:\n    default: ${env:PLAIN_SETTING}")
    (note,) = agent.inputs
    value = note.default
    assert isinstance(value, EnvValue) and value == VALUE
    assert repr(value) == "${env:PLAIN_SETTING}" and VALUE not in repr(agent)
    for kept in (copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert isinstance(kept, EnvValue) and kept == VALUE
        assert kept.reference == "${env:PLAIN_SETTING}"


def test_engine_traces_blank_values_from_the_environment_whatever_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.tracing.redact import environment_secrets, redact

    monkeypatch.setenv("GREETING_TEXT", "open-sesame-1234")  # a name that says nothing secret
    path = tmp_path / "p.prompty"
    path.write_text("---\nname: p\ninputs:\n  g:\n    default: ${env:GREETING_TEXT}\n---\n{{g}}\n")
    load(path, env=["GREETING_TEXT"])
    assert "open-sesame-1234" in environment_secrets()
    assert redact("the user said open-sesame-1234 today") == "the user said [REDACTED] today"
