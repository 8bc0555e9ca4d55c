"""Issue 22 §2.5: files a ``.prompty`` names (``${file:}``, OpenAPI documents, child files) are
opened one name at a time from their root, so a folder swapped for a link between any check and
the open cannot lead outside the root.

Each race test moves a folder away and puts a link to outside the root in its place at the
last moment, as the file is opened: what is read is the file in the folder that was checked,
never the outside one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.prompty import load
from tether.prompty.errors import LoadError
from tether.prompty.execution.tool_schemas import parameters_schema
from tether.prompty.kinds.builtin import register_builtin_kinds
from tether.prompty.registry import clear_tool_handlers

INSIDE = '{"kind": "anonymous", "endpoint": "https://inside.example"}'
OUTSIDE = '{"kind": "anonymous", "endpoint": "https://outside.example"}'


@pytest.fixture(autouse=True)
def _kinds() -> Iterator[None]:
    clear_tool_handlers()
    register_builtin_kinds()
    yield
    clear_tool_handlers()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``app/sub/<files>`` inside the root, ``outside/<files>`` beside it."""
    (tmp_path / "app" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return tmp_path


def _swap_when_opened(
    monkeypatch: pytest.MonkeyPatch, name: str, folder: Path, target: Path
) -> list[bool]:
    """At the first ``os.open`` of a path ending in ``name``, move ``folder`` aside and link
    ``target`` in its place (then open): a race won at the worst moment."""
    real_open = os.open
    swapped: list[bool] = []

    def racing_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if not swapped and os.fspath(path).endswith(name):
            folder.rename(folder.with_name(folder.name + ".old"))
            folder.symlink_to(target, target_is_directory=True)
            swapped.append(True)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)
    return swapped


# --- ${file:...} ---------------------------------------------------------------------------


def _file_agent(tree: Path, reference: str) -> Path:
    path = tree / "app" / "agent.prompty"
    path.write_text(f"---\nmodel:\n  id: m\n  connection: ${{file:{reference}}}\n---\nx\n")
    return path


def test_a_middle_folder_swapped_for_a_link_cannot_lead_outside(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "app" / "sub" / "conn.json").write_text(INSIDE)
    (tree / "outside" / "conn.json").write_text(OUTSIDE)
    path = _file_agent(tree, "sub/conn.json")
    swapped = _swap_when_opened(monkeypatch, "conn.json", tree / "app" / "sub", tree / "outside")
    agent: Any = load(path)
    assert swapped
    assert agent.model.connection.endpoint == "https://inside.example"


@pytest.mark.parametrize("link", ["sub", "sub/conn.json"], ids=["middle-folder", "final-file"])
def test_a_link_that_leads_outside_is_refused(tree: Path, link: str) -> None:
    (tree / "outside" / "conn.json").write_text(OUTSIDE)
    shutil.rmtree(tree / "app" / "sub")
    if link == "sub":
        (tree / "app" / "sub").symlink_to(tree / "outside", target_is_directory=True)
    else:
        (tree / "app" / "sub").mkdir()
        (tree / "app" / "sub" / "conn.json").symlink_to(tree / "outside" / "conn.json")
    with pytest.raises(LoadError, match="outside allowed roots") as raised:
        load(_file_agent(tree, "sub/conn.json"))
    assert type(raised.value).__name__ == "OutsideRootError"
    assert raised.value.field == "model.connection"


def test_links_that_stay_inside_are_followed(tree: Path) -> None:
    (tree / "app" / "real").mkdir()
    (tree / "app" / "real" / "conn.json").write_text(INSIDE)
    (tree / "app" / "sub" / "conn.json").symlink_to("../real/conn.json")
    (tree / "app" / "abs").symlink_to(tree / "app" / "real", target_is_directory=True)
    for reference in ("sub/conn.json", "abs/conn.json", "sub/../real/conn.json"):
        agent: Any = load(_file_agent(tree, reference))
        assert agent.model.connection.endpoint == "https://inside.example", reference


def test_a_link_loop_is_a_load_error(tree: Path) -> None:
    (tree / "app" / "sub" / "a").symlink_to("b")
    (tree / "app" / "sub" / "b").symlink_to("a")
    with pytest.raises(LoadError):
        load(_file_agent(tree, "sub/a"))


# --- OpenAPI documents and child .prompty files --------------------------------------------

SPEC = """openapi: 3.0.3
info: {{title: t, version: '1'}}
servers: [{{url: 'https://api.example'}}]
paths:
  /items:
    get:
      operationId: getItems
      parameters: [{{name: {param}, in: query, schema: {{type: string}}}}]
"""


def _api_agent(tree: Path) -> Any:
    (tree / "app" / "sub" / "spec.yaml").write_text(SPEC.format(param="inside"))
    (tree / "outside" / "spec.yaml").write_text(SPEC.format(param="outside"))
    path = tree / "app" / "api.prompty"
    path.write_text(
        "---\ntools:\n  - {name: getItems, kind: openapi, specification: sub/spec.yaml}\n---\n"
    )
    return load(path)


def test_an_openapi_document_is_read_without_the_race(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _api_agent(tree)
    (tool,) = agent.tools
    swapped = _swap_when_opened(monkeypatch, "spec.yaml", tree / "app" / "sub", tree / "outside")
    schema = parameters_schema(tool, agent)
    assert swapped
    assert schema is not None and set(schema["properties"]) == {"inside"}


CHILD = "---\ninputs: [{{name: {name}}}]\n---\nuser:\nhi\n"


def _parent(tree: Path) -> Any:
    (tree / "app" / "sub" / "child.prompty").write_text(CHILD.format(name="inside"))
    (tree / "outside" / "child.prompty").write_text(CHILD.format(name="outside"))
    path = tree / "app" / "parent.prompty"
    path.write_text("---\ntools:\n  - {name: c, kind: prompty, path: sub/child.prompty}\n---\n")
    return load(path)


def test_a_child_prompty_file_is_read_without_the_race(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _parent(tree)
    (tool,) = agent.tools
    swapped = _swap_when_opened(
        monkeypatch, "child.prompty", tree / "app" / "sub", tree / "outside"
    )
    schema = parameters_schema(tool, agent)
    assert swapped
    assert schema is not None and set(schema["properties"]) == {"inside"}


@pytest.mark.parametrize("kind", ["openapi", "prompty"])
def test_tool_files_behind_a_link_outside_are_refused(tree: Path, kind: str) -> None:
    agent = _api_agent(tree) if kind == "openapi" else _parent(tree)
    (tool,) = agent.tools
    shutil.rmtree(tree / "app" / "sub")
    (tree / "app" / "sub").symlink_to(tree / "outside", target_is_directory=True)
    with pytest.raises(LoadError, match="outside allowed roots"):
        parameters_schema(tool, agent)
