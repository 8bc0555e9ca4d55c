"""Loading .prompty files beyond the conformance vectors: errors that name file, line and field,
file references kept inside their roots (refused before any file is opened), size and shape
caps, every tool and connection kind, the shorthands, and input validation."""

from __future__ import annotations

import builtins
import json
import os
import pickle
import time
from pathlib import Path
from typing import Any

import pytest

from tether.prompty.errors import InputError, LoadError, MissingFileError, PromptyError
from tether.prompty.loading import files
from tether.prompty.loading.files import split_frontmatter
from tether.prompty.loading.loader import load, load_async, load_dotenv, loads, validate_inputs
from tether.prompty.model import (
    Binding,
    CustomTool,
    FunctionTool,
    McpServerTool,
    OpenApiTool,
    PromptAgent,
    PromptyTool,
    Property,
)


def write(folder: Path, text: str, name: str = "agent.prompty") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def load_text(tmp_path: Path, text: str, **kwargs: Any) -> PromptAgent:
    return load(write(tmp_path, text), **kwargs)


def load_error(tmp_path: Path, text: str, **kwargs: Any) -> LoadError:
    with pytest.raises(LoadError) as raised:
        load_text(tmp_path, text, **kwargs)
    return raised.value


# -- errors name the file, the line and the field ------------------------------------------


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\nname: ok\nmodel: [gpt-4\ninputs: {}\n---\nbody\n")
    assert error.path == str(tmp_path / "agent.prompty")
    assert error.line == 4  # where the parser found the flow sequence broken
    assert "Invalid frontmatter YAML" in str(error)
    assert f"line {error.line}" in str(error) and str(tmp_path) in str(error)


def test_yaml_error_line_counts_from_the_top_of_the_file(tmp_path: Path) -> None:
    error = load_error(tmp_path, "\n\n---\nname: a\nname2: 'open\n---\nbody\n")
    assert error.line == 5


def test_unknown_model_field_is_named(tmp_path: Path) -> None:
    text = "---\nname: v1\nmodel:\n  api: chat\n  configuration:\n    type: openai\n---\nhi\n"
    error = load_error(tmp_path, text)
    assert error.field == "model.api"
    assert error.line == 4
    assert "Unknown model field 'api'" in str(error) and "apiType" in str(error)


def test_model_of_the_wrong_shape(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\nmodel:\n  - gpt-4\n---\nhi\n")
    assert error.field == "model"
    assert error.line == 2
    assert "model must be a model id string" not in str(error)
    assert "a model id or a mapping" in str(error) and "not a list" in str(error)


@pytest.mark.parametrize(
    ("yaml_text", "field", "line", "says"),
    [
        (
            "model:\n  id: gpt-4\n  options:\n    temperature: hot\n",
            "model.options.temperature",
            5,
            "must be a number, not a string",
        ),
        (
            "model:\n  id: gpt-4\n  options:\n    maxOutputTokens: 1.5\n",
            "model.options.maxOutputTokens",
            5,
            "must be an integer",
        ),
        (
            "model:\n  id: gpt-4\n  options:\n    seed: true\n",
            "model.options.seed",
            5,
            "must be an integer, not a boolean",
        ),
        (
            "inputs:\n  - name: city\n    required: 'yes'\n",
            "inputs[0].required",
            4,
            "must be true or false",
        ),
        ("inputs:\n  - kind: string\n", "inputs[0].name", 3, "is required"),
        ("inputs:\n  city:\n    kind: strin\n", "inputs.city.kind", 4, "Unknown property kind"),
        (
            "tools:\n  - name: t\n    kind: function\n    strict: 1\n",
            "tools[0].strict",
            5,
            "true or false",
        ),
        ("tools:\n  - kind: function\n", "tools[0].name", 3, "is required"),
        ("tools:\n  - name: t\n", "tools[0].kind", 3, "is required"),
        (
            "tools:\n  - name: t\n    kind: function\n  - name: t\n    kind: mcp\n",
            "tools[1]",
            5,
            "Duplicate tool name 't'",
        ),
        (
            "model:\n  id: gpt-4\n  connection:\n    endpoint: x\n",
            "model.connection.kind",
            4,
            "is required",
        ),
        ("name: [a]\n", "name", 2, "must be a string, not a list"),
        ("tools: yes\n", "tools", 2, "must be a list of tools"),
        ("metadata: 3\n", "metadata", 2, "must be a mapping"),
        (
            "model:\n  id: gpt-4\n  options:\n    stopSequences: [1]\n",
            "model.options.stopSequences[0]",
            5,
            "must be a string",
        ),
    ],
)
def test_wrong_types_name_field_and_line(
    tmp_path: Path, yaml_text: str, field: str, line: int, says: str
) -> None:
    error = load_error(tmp_path, f"---\n{yaml_text}---\nbody\n")
    assert (error.field, error.line) == (field, line)
    assert says in str(error)
    assert f"line {line}" in str(error) and f"field {field}" in str(error)


def test_missing_env_names_field_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_NOT_SET", raising=False)
    text = (
        "---\nmodel:\n  id: gpt-4\n  connection:\n    kind: key\n"
        "    apiKey: ${env:TETHER_NOT_SET}\n---\nx\n"
    )
    error = load_error(tmp_path, text, env=["TETHER_NOT_SET"])
    assert "Environment variable 'TETHER_NOT_SET' not set" in str(error)
    assert (error.field, error.line) == ("model.connection.apiKey", 6)


def test_an_empty_env_default_is_no_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_NOT_SET", raising=False)
    error = load_error(tmp_path, "---\nname: ${env:TETHER_NOT_SET:}\n---\nx\n", env=os.environ)
    assert isinstance(error, ValueError) and error.field == "name"


def test_frontmatter_must_be_a_mapping(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\n- a\n- b\n---\nbody\n")
    assert "Frontmatter must be a YAML mapping" in str(error)


def test_unclosed_frontmatter_is_malformed(tmp_path: Path) -> None:
    error = load_error(tmp_path, "\n---\nname: x\nbody without end\n")
    assert "Malformed frontmatter" in str(error) and error.line == 2


def test_errors_are_the_spec_types_and_pickle() -> None:
    error = LoadError("boom", path="a.prompty", line=3, field="model.id")
    assert isinstance(error, ValueError) and isinstance(error, PromptyError)
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.path, again.line, again.field) == (
        str(error),
        "a.prompty",
        3,
        "model.id",
    )
    missing = MissingFileError("gone", path="x")
    assert isinstance(missing, FileNotFoundError) and isinstance(missing, LoadError)
    assert str(LoadError("bare")) == "bare"


# -- file references -----------------------------------------------------------------------


def _record_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_os_open(path, *args, **kwargs)

    def open_(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, str | os.PathLike):
            opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    return opened


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.json"
    secret.write_text('{"kind": "key", "apiKey": "leaked"}')
    return secret


@pytest.mark.parametrize("reference", ["../secret.json", "sub/../../secret.json", "ABSOLUTE"])
def test_escapes_are_refused_without_opening_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: str
) -> None:
    secret = _secret(tmp_path)
    reference = str(secret) if reference == "ABSOLUTE" else reference
    prompty = write(tmp_path / "app", f"---\nmodel:\n  connection: ${{file:{reference}}}\n---\nx\n")
    opened = _record_opens(monkeypatch)
    with pytest.raises(LoadError) as raised:
        load(prompty)
    assert "resolves outside allowed roots" in str(raised.value)
    assert (raised.value.field, raised.value.line) == ("model.connection", 3)
    assert str(prompty) in opened  # the recorder works...
    assert not any(Path(p).name == "secret.json" for p in opened)  # ...and saw no secret read


def test_symlink_escapes_are_refused_without_opening_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = _secret(tmp_path)
    app = tmp_path / "app"
    app.mkdir()
    (app / "link.json").symlink_to(secret)
    (app / "outside").symlink_to(tmp_path)
    opened = _record_opens(monkeypatch)
    for reference in ("link.json", "outside/secret.json"):
        prompty = write(app, f"---\nmodel:\n  connection: ${{file:{reference}}}\n---\nx\n")
        with pytest.raises(LoadError, match="outside allowed roots"):
            load(prompty)
    assert not any(Path(p).name in ("secret.json", "link.json") for p in opened)


def test_symlink_inside_the_tree_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "conn.json").write_text('{"kind": "anonymous", "endpoint": "e"}')
    (tmp_path / "conn.json").symlink_to(tmp_path / "real" / "conn.json")
    agent = load_text(tmp_path, "---\nmodel:\n  connection: ${file:conn.json}\n---\nx\n")
    assert agent.model is not None and agent.model.connection is not None
    assert agent.model.connection.endpoint == "e"


def test_allowed_roots_come_only_from_the_host(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "conn.yaml").write_text("kind: reference\nname: team\n")
    text = "---\nallowed_roots: [..]\nmodel:\n  connection: ${file:../shared/conn.yaml}\n---\nx\n"
    with pytest.raises(LoadError, match="outside allowed roots"):
        load_text(tmp_path / "app", text)
    agent = load_text(tmp_path / "app", text, allowed_roots=[shared])
    assert agent.model is not None and agent.model.connection is not None
    assert agent.model.connection.to_dict() == {"kind": "reference", "name": "team"}


def test_referenced_files_parse_by_extension_and_resolve_their_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_KEY", "from-env")
    (tmp_path / "conn.json").write_text('{"kind": "key", "apiKey": "${env:TETHER_TEST_KEY}"}')
    (tmp_path / "notes.md").write_text("just text: {a: 1}\n")
    (tmp_path / "meta.yml").write_text("tags: [a, b]\n")
    text = (
        "---\nmetadata:\n  notes: ${file:notes.md}\n  extra: ${file:meta.yml}\n"
        "  other: ${vault:secret}\nmodel:\n  connection: ${file:conn.json}\n---\nx\n"
    )
    agent = load_text(tmp_path, text, env=["TETHER_TEST_KEY"])
    assert agent.metadata == {
        "notes": "just text: {a: 1}\n",
        "extra": {"tags": ["a", "b"]},
        "other": "${vault:secret}",
    }
    assert agent.model is not None and agent.model.connection is not None
    assert agent.model.connection.api_key == "from-env"
    assert "from-env" not in repr(agent)


def test_missing_referenced_file_is_file_not_found(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\nmodel:\n  connection: ${file:nope.json}\n---\nx\n")
    assert isinstance(error, FileNotFoundError) and isinstance(error, MissingFileError)
    assert "Referenced file not found: nope.json" in str(error)
    assert (error.field, error.line) == ("model.connection", 3)


def test_missing_prompty_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="Prompty file not found"):
        load(tmp_path / "absent.prompty")


def test_self_including_files_stop(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text("again: ${file:loop.yaml}\n")
    error = load_error(tmp_path, "---\nmetadata: ${file:loop.yaml}\n---\nx\n")
    assert "nest deeper" in str(error)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    error = load_error(tmp_path, "---\nmetadata:\n  a: ${file:pipe.txt}\n---\nx\n")
    assert "Not a regular file" in str(error)


# -- caps -----------------------------------------------------------------------------------


def test_file_size_cap(tmp_path: Path) -> None:
    big = "---\nname: big\n---\n" + "x" * files.MAX_FILE_BYTES
    error = load_error(tmp_path, big)
    assert "larger than" in str(error)
    (tmp_path / "big.txt").write_text("y" * (files.MAX_FILE_BYTES + 1))
    error = load_error(tmp_path, "---\nmetadata:\n  a: ${file:big.txt}\n---\nx\n")
    assert "larger than" in str(error) and error.path == str(tmp_path / "big.txt")


def test_yaml_length_cap(tmp_path: Path) -> None:
    text = "---\nmetadata:\n  pad: '" + "p" * files.MAX_YAML_CHARS + "'\n---\nx\n"
    assert "longer than" in str(load_error(tmp_path, text))


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    started = time.monotonic()
    error = load_error(tmp_path, "---\nmetadata:\n  " + "\n  ".join(lines) + "\n---\nx\n")
    assert "once aliases are expanded" in str(error)
    assert time.monotonic() - started < 2


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\nmetadata: &m\n  self: *m\n---\nx\n")
    assert "recursive" in str(error) and error.line == 3


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\nmetadata: " + "[" * 200 + "]" * 200 + "\n---\nx\n")
    assert "nested deeper" in str(error)
    (tmp_path / "deep.json").write_text("[" * 100 + "]" * 100)
    error = load_error(tmp_path, "---\nmetadata: ${file:deep.json}\n---\nx\n")
    assert "nested deeper" in str(error)


def test_unsafe_yaml_tags_are_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, "---\nname: !!python/object/apply:os.system ['true']\n---\nx\n")
    assert "Invalid frontmatter YAML" in str(error)


# -- splitting and the body -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "frontmatter", "body"),
    [
        ("---\nname: test\n---\nHello world", "\nname: test\n", "Hello world"),
        ("Just a prompt with no frontmatter", None, "Just a prompt with no frontmatter"),
        ("---\n---\nBody only", "\n", "Body only"),
        ("  ---\nname: test\n---\nBody", "\nname: test\n", "Body"),
        ("+++\nname: test\n+++\r\nBody\r\n", "\nname: test\n", "Body"),
        ("---\ndescription: a --- b\n---\nBody", "\ndescription: a --- b\n", "Body"),
    ],
)
def test_split_frontmatter(text: str, frontmatter: str | None, body: str) -> None:
    split = split_frontmatter(text)
    assert (split.frontmatter, split.body) == (frontmatter, body)


def test_body_line_and_body_only_files(tmp_path: Path) -> None:
    agent = load_text(tmp_path, "---\nname: x\n---\n\n\nsystem:\nhi\n")
    assert (agent.instructions, agent.body_line) == ("system:\nhi", 6)
    plain = load_text(tmp_path, "user:\n{{q}}\n")
    assert (plain.instructions, plain.body_line, plain.model, plain.kind) == (
        "user:\n{{q}}\n",
        1,
        None,
        "prompt",
    )


def test_loads_takes_text(tmp_path: Path) -> None:
    agent = loads("---\nname: t\nkind: agent\n---\nbody", base_dir=tmp_path, source="mem")
    assert (agent.name, agent.kind, agent.source) == ("t", "prompt", "mem")


async def test_load_async(tmp_path: Path) -> None:
    agent = await load_async(write(tmp_path, "---\nname: a\n---\nb\n"))
    assert agent.name == "a"


# -- shorthands, tools, connections ----------------------------------------------------------


def test_input_shorthands(tmp_path: Path) -> None:
    text = (
        "---\ninputs:\n  s: Jane\n  i: 42\n  f: 3.14\n  b: true\n  l: [1, 2, 3]\n  o: {a: 1}\n"
        "  n:\n  full:\n    kind: integer\n    default: 7\n---\nx\n"
    )
    inputs = load_text(tmp_path, text).inputs
    assert inputs is not None
    assert [(p.name, p.kind, p.default) for p in inputs] == [
        ("s", "string", "Jane"),
        ("i", "integer", 42),
        ("f", "float", 3.14),
        ("b", "boolean", True),
        ("l", "array", [1, 2, 3]),
        ("o", "object", {"a": 1}),
        ("n", "string", None),
        ("full", "integer", 7),
    ]


def test_template_forms(tmp_path: Path) -> None:
    agent = load_text(tmp_path, "---\ntemplate:\n  format: mustache\n---\nx\n")
    assert agent.template.to_dict() == {
        "format": {"kind": "mustache"},
        "parser": {"kind": "prompty"},
    }
    assert load_text(tmp_path, "---\nname: n\n---\nx\n").template.format.kind == "jinja2"
    error = load_error(tmp_path, "---\ntemplate: mustache\n---\nx\n")
    assert "Invalid template format" in str(error) and error.field == "template"


def test_every_tool_kind(tmp_path: Path) -> None:
    text = """---
tools:
  - name: get_orders
    kind: function
    parameters:
      properties:
        - name: user_id
          kind: string
          required: true
        - name: limit
          kind: integer
          default: 10
    bindings:
      user_id: current_user
  - name: child
    kind: prompty
    path: ./child.prompty
  - name: fs
    kind: mcp
    serverName: files
    approvalMode: never
    allowedTools: [read]
    connection: {kind: reference, name: fs}
  - name: weather
    kind: openapi
    specification: ./spec.json
    connection: {kind: anonymous, endpoint: https://api.example}
  - name: search
    kind: bing_search
    connection: {kind: key, endpoint: https://bing, apiKey: k}
    options: {count: 3}
---
x
"""
    tools = load_text(tmp_path, text).tools
    assert tools is not None
    assert [type(t) for t in tools] == [
        FunctionTool,
        PromptyTool,
        McpServerTool,
        OpenApiTool,
        CustomTool,
    ]
    function = tools[0]
    assert isinstance(function, FunctionTool)
    assert [p.name for p in function.parameters] == ["user_id", "limit"]
    assert function.bindings == {"user_id": Binding("current_user")}
    assert tools[1].to_dict() == {
        "name": "child",
        "kind": "prompty",
        "path": "./child.prompty",
        "mode": "single",
    }
    assert tools[2].to_dict()["approvalMode"] == {"kind": "never"}
    assert tools[4].to_dict() == {
        "name": "search",
        "kind": "bing_search",
        "connection": {"kind": "key", "endpoint": "https://bing", "apiKey": "k"},
        "options": {"count": 3},
    }


def test_tools_and_bindings_in_mapping_form(tmp_path: Path) -> None:
    text = """---
tools:
  lookup:
    kind: function
    parameters:
      city: {kind: string, required: true}
    bindings:
      - name: city
        input: home
---
x
"""
    tools = load_text(tmp_path, text).tools
    assert tools is not None
    assert tools[0].to_dict() == {
        "name": "lookup",
        "kind": "function",
        "parameters": [{"name": "city", "kind": "string", "required": True}],
        "bindings": {"city": {"input": "home"}},
    }


@pytest.mark.parametrize(
    "connection",
    [
        {"kind": "key", "endpoint": "https://e", "apiKey": "k"},
        {"kind": "reference", "name": "mine", "target": "t"},
        {"kind": "remote", "name": "r", "endpoint": "https://e"},
        {"kind": "anonymous", "endpoint": "https://e"},
        {"kind": "foundry", "endpoint": "https://e", "project": "p"},
        {
            "kind": "oauth",
            "endpoint": "https://e",
            "authenticationMode": "user",
            "clientId": "c",
            "scopes": ["s"],
        },
    ],
)
def test_every_connection_kind(tmp_path: Path, connection: dict[str, Any]) -> None:
    text = f"---\nmodel:\n  id: m\n  connection: {json.dumps(connection)}\n---\nx\n"
    model = load_text(tmp_path, text).model
    assert model is not None and model.connection is not None
    assert model.connection.to_dict() == connection


def test_secrets_stay_out_of_reprs(tmp_path: Path) -> None:
    conn = {"kind": "oauth", "endpoint": "e", "apiKey": "sk-1", "clientSecret": "cs-2"}
    agent = load_text(tmp_path, f"---\nmodel:\n  connection: {json.dumps(conn)}\n---\nx\n")
    assert "sk-1" not in repr(agent) and "cs-2" not in repr(agent)


def test_unknown_options_pass_through(tmp_path: Path) -> None:
    text = (
        "---\nmodel:\n  id: m\n  options:\n    temperature: 1\n    stopSequences: [END]\n"
        "    response_format: {type: json}\n    additionalProperties: {size: big}\n---\nx\n"
    )
    model = load_text(tmp_path, text).model
    assert model is not None and model.options is not None
    assert model.options.to_dict() == {
        "temperature": 1,
        "stopSequences": ["END"],
        "additionalProperties": {"size": "big", "response_format": {"type": "json"}},
    }


def test_unknown_top_level_keys_are_kept_in_metadata(tmp_path: Path) -> None:
    agent = load_text(tmp_path, "---\nversion: 2\nmetadata: {tags: [a]}\n---\nx\n")
    assert agent.metadata == {"version": 2, "tags": ["a"]}


# -- input validation -----------------------------------------------------------------------


def test_validate_inputs(tmp_path: Path) -> None:
    text = (
        "---\ninputs:\n  - name: items\n    kind: array\n    default: [1]\n"
        "  - name: city\n    required: true\n  - name: note\n    example: sample\n---\nx\n"
    )
    agent = load_text(tmp_path, text)
    with pytest.raises(InputError) as raised:
        validate_inputs(agent, {})
    error = raised.value
    assert isinstance(error, ValueError)
    assert (error.field, error.line, error.path) == ("city", 6, agent.source)
    assert "Missing required input: city" in str(error)
    got = validate_inputs(agent, {"city": 5, "extra": "kept"})
    assert got == {"city": 5, "extra": "kept", "items": [1]}
    got["items"].append(2)
    assert validate_inputs(agent, {"city": "x"})["items"] == [1]


# -- dotenv ----------------------------------------------------------------------------------


def test_load_never_reads_dotenv_and_the_helper_does_not_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_DOTENV_NEW", raising=False)
    monkeypatch.setenv("TETHER_DOTENV_SET", "from-process")
    (tmp_path / ".env").write_text(
        "# comment\nTETHER_DOTENV_NEW='from file'\nTETHER_DOTENV_SET=from-file\n"
    )
    prompty = write(tmp_path, "---\nname: ${env:TETHER_DOTENV_NEW}\n---\nx\n")
    with pytest.raises(LoadError, match="not set"):
        load(prompty, env=["TETHER_DOTENV_NEW"])
    try:
        assert load_dotenv(prompty) == {"TETHER_DOTENV_NEW": "from file"}
        assert os.environ["TETHER_DOTENV_SET"] == "from-process"
        assert load(prompty, env=["TETHER_DOTENV_NEW"]).name == "from file"
    finally:
        os.environ.pop("TETHER_DOTENV_NEW", None)
    assert load_dotenv(tmp_path / "nowhere" / "x.prompty") == {}


def test_properties_to_dict_round_trip() -> None:
    prop = Property(name="p", kind="array", items=Property(kind="string"), required=True)
    assert prop.to_dict() == {
        "name": "p",
        "kind": "array",
        "required": True,
        "items": {"kind": "string"},
    }
