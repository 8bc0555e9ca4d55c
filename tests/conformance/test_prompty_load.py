"""``LoadConformance.load`` (28): Prompty's loader vectors, each through tether's ``load``.

A vector names a ``fixture`` file, or gives ``frontmatter`` (dumped as YAML above a fixed body)
or ``frontmatter_raw`` (the whole file), written as ``vector.prompty`` in a temporary folder
(in ``agent_subdir`` when given) with its ``files`` beside it. ``env`` is the environment the
vector sees: its variables are set and any other variable the file references is unset, and
the file is loaded as the spec's applications load one, ``load(path)`` with no other argument
(it reads the process's environment). With ``inputs``, the result compared is
``validate_inputs`` of the loaded agent.

An ``error`` is met when the raised error (always one of the door's ``PromptyError``s) is of
that type name or its message contains the text, ignoring case; ``error_field`` is its
``field``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prompty_adapter import assert_subset, load

from tether.prompty.errors import PromptyError
from tether.prompty.loading.loader import load as load_prompty
from tether.prompty.loading.loader import validate_inputs

VECTORS = load("LoadConformance.load")
FIXTURES = Path(__file__).parent / "prompty" / "fixtures"
BODY = "system:\nYou are a test prompt.\n\nuser:\n{{question}}\n"


def _write(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(content))
    elif path.suffix in (".yaml", ".yml"):
        path.write_text(yaml.safe_dump(content))
    else:
        path.write_text(str(content))


def _prompty_file(given: dict[str, Any], tmp_path: Path) -> Path:
    if "fixture" in given:
        return FIXTURES / given["fixture"]
    folder = tmp_path / "root" / given.get("agent_subdir", "")
    folder.mkdir(parents=True, exist_ok=True)
    for relative, content in given.get("files", {}).items():
        _write(folder / relative, content)
    if "frontmatter_raw" in given:
        text = given["frontmatter_raw"]
    else:
        text = f"---\n{yaml.safe_dump(given['frontmatter'], sort_keys=False)}---\n{BODY}"
    path = folder / "vector.prompty"
    path.write_text(text)
    return path


def _env_names(text: str) -> set[str]:
    """The variables ``${env:NAME...}`` references in ``text`` name."""
    names = set()
    for chunk in text.split("${env:")[1:]:
        names.add(chunk.split("}", 1)[0].split(":", 1)[0])
    return names


def _set_env(given: dict[str, Any], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = given.get("env", {})
    texts = [path.read_text()] if path.exists() else []
    texts += [json.dumps(content) for content in given.get("files", {}).values()]
    for name in set().union(*map(_env_names, texts)) - set(env):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _outcome(given: dict[str, Any], path: Path) -> dict[str, Any]:
    agent = load_prompty(path)
    if "inputs" in given:
        return {"validated_inputs": validate_inputs(agent, given["inputs"])}
    return agent.to_dict()


def _check_error(error: BaseException, expected: dict[str, Any]) -> None:
    assert isinstance(error, PromptyError), f"not one of the door's errors: {error!r}"
    wanted = expected["error"]
    type_names = {cls.__name__ for cls in type(error).__mro__}
    assert wanted in type_names or wanted.lower() in str(error).lower(), (
        f"{error!r} is not {wanted!r}"
    )
    if "error_field" in expected:
        assert getattr(error, "field", None) == expected["error_field"]


@pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"LoadConformance.load:{v['name']}" for v in VECTORS]
)
def test_load(vector: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given, expected = vector["input"], vector["expected"]
    path = _prompty_file(given, tmp_path)
    _set_env(given, path, monkeypatch)
    if "error" in expected:
        with pytest.raises(Exception) as raised:
            _outcome(given, path)
        _check_error(raised.value, expected)
    else:
        assert_subset(expected, _outcome(given, path))
