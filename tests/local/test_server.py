"""The llama.cpp server: start-up errors, lazy import, the chat template, and the running server."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tether import Tool, ToolSearch
from tether.local import (
    TOOL_CALL_TEMPLATE,
    LlamaServer,
    LocalModel,
    LocalModelUnavailable,
    ServerConfig,
    check_platform,
)
from tether.local import server as server_module
from tether.local.template import NO_MATCH_HINT, SEARCH_RESULT_HINT, TOOL_RESULT_HINT

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Add 1 and 2, and 3 and 4."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "add", "arguments": {"a": 3, "b": 4}},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "3"},
    {"role": "tool", "tool_call_id": "c2", "content": "7"},
    {"role": "assistant", "content": "3 and 7."},
    {"role": "user", "content": "Thanks."},
]


# -- without a server -----------------------------------------------------------------------------


def test_importing_tether_local_starts_nothing() -> None:
    code = (
        "import sys, threading, tether.local;"
        "print('xllamacpp' in sys.modules, threading.active_count())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "1"]


def test_missing_xllamacpp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes the import fail
    monkeypatch.setattr(server_module.sys, "platform", "linux")
    monkeypatch.setattr(server_module.platform, "machine", lambda: "x86_64")
    with pytest.raises(LocalModelUnavailable, match=r"tether\[local\]"):
        check_platform()


def test_an_unsupported_platform_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    monkeypatch.setattr(server_module.platform, "machine", lambda: "arm64")
    with pytest.raises(LocalModelUnavailable, match=r"Linux x86_64; this is .*/arm64"):
        check_platform()


def test_not_running_until_started() -> None:
    model = LocalModel()
    assert not model.running
    with pytest.raises(RuntimeError, match="start"):
        _ = model.base_url
    with pytest.raises(RuntimeError, match="start"):
        model.chat_transport()
    model.stop_sync()  # stopping what never started is fine
    model.stop_sync()


def test_server_config_is_checked() -> None:
    with pytest.raises(ValueError, match="n_ctx"):
        ServerConfig(n_ctx=10)
    with pytest.raises(ValueError, match="n_parallel"):
        ServerConfig(n_parallel=0)
    with pytest.raises(ValueError, match="poll"):
        ServerConfig(poll=101)
    assert ServerConfig().api_key != ServerConfig().api_key  # a fresh key each time
    with pytest.raises(TypeError):
        LocalModel(no_such_option=1)


def test_a_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    server = LlamaServer(tmp_path / "absent.gguf", alias="x")
    with pytest.raises(LocalModelUnavailable):
        server.start()
    assert not server.running
    server.stop()


def test_a_broken_model_file_is_a_clear_error(tmp_path: Path) -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed")
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file")
    server = LlamaServer(bad, alias="x")
    with pytest.raises(LocalModelUnavailable, match="could not start"):
        server.start()
    assert not server.running


# -- the template, rendered by Jinja as llama.cpp and Hugging Face do -----------------------------


def _render(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, trim: bool) -> str:
    jinja2 = pytest.importorskip("jinja2")
    env = jinja2.Environment(trim_blocks=trim, lstrip_blocks=trim)
    env.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)
    return str(
        env.from_string(TOOL_CALL_TEMPLATE).render(
            messages=messages, tools=tools, add_generation_prompt=True
        )
    )


def test_template_shows_tool_calls_as_a_json_fence() -> None:
    prompt = _render(CONVERSATION, TOOLS, trim=True)
    # Both argument forms (a JSON string, an object) come out the same, with single braces.
    assert '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```' in prompt
    assert '```json\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n```' in prompt
    assert "{{" not in prompt
    assert '{"name": "function_name", "arguments": {"argument_name": "value"}}' in prompt
    assert json.dumps(TOOLS[0]) in prompt
    # The two results share one turn, followed once by the hint to answer in text.
    assert prompt.count(TOOL_RESULT_HINT) == 1
    assert "<tool_response>\n3\n</tool_response>\n<tool_response>\n7\n</tool_response>\n" in prompt
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert prompt.endswith("<|im_start|>user\nThanks.<|im_end|>\n<|im_start|>assistant\n")


def test_template_whitespace_does_not_depend_on_jinja_settings() -> None:
    assert _render(CONVERSATION, TOOLS, trim=True) == _render(CONVERSATION, TOOLS, trim=False)


def test_template_without_tools_is_plain_chatml() -> None:
    prompt = _render([{"role": "user", "content": "Hi"}], [], trim=True)
    assert prompt == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


# -- the running server (one per session) ---------------------------------------------------------


def _auth(local: LocalModel) -> dict[str, str]:
    return {"Authorization": f"Bearer {local.api_key}"}


@pytest.mark.local_model
def test_server_is_healthy_on_loopback(local_model: LocalModel) -> None:
    url = urlsplit(local_model.base_url)
    assert url.scheme == "http"
    assert url.hostname == "127.0.0.1"
    resp = httpx.get(local_model.base_url + "/health")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok"}
    if sys.platform.startswith("linux"):
        assert _listening_addresses(url.port or 0) == {"127.0.0.1"}


def _listening_addresses(port: int) -> set[str]:
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        host, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
            found.add(".".join(str(int(host[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


@pytest.mark.local_model
def test_server_wants_its_key(local_model: LocalModel) -> None:
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    url = local_model.base_url + "/v1/chat/completions"
    assert httpx.post(url, json=body, timeout=60).status_code == 401
    assert httpx.post(url, json=body, headers=_auth(local_model), timeout=60).status_code == 200


@pytest.mark.local_model
def test_server_serves_the_model_under_its_alias(local_model: LocalModel) -> None:
    resp = httpx.get(local_model.base_url + "/v1/models", headers=_auth(local_model))
    assert local_model.model in {m["id"] for m in resp.json()["data"]}


@pytest.mark.local_model
def test_server_renders_our_template(local_model: LocalModel) -> None:
    resp = httpx.post(
        local_model.base_url + "/apply-template",
        json={"messages": CONVERSATION, "tools": TOOLS},
        headers=_auth(local_model),
    )
    prompt = resp.json()["prompt"]
    assert '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```' in prompt
    assert TOOL_RESULT_HINT in prompt
    if importlib.util.find_spec("jinja2") is not None:
        assert prompt == _render(CONVERSATION, TOOLS, trim=True)


@pytest.mark.local_model
def test_starting_again_is_a_no_op(local_model: LocalModel) -> None:
    before = local_model.base_url
    assert local_model.start_sync() is local_model
    assert local_model.base_url == before


@pytest.mark.local_model
def test_transports_point_at_the_server(local_model: LocalModel) -> None:
    root = local_model.base_url
    assert local_model.chat_transport().base_url == root + "/v1"
    assert local_model.responses_transport().base_url == root + "/v1"
    assert local_model.anthropic_transport().base_url == root
    transport = local_model.chat_transport(temperature=0, headers={"X-Test": "1"})
    assert transport.options.temperature == 0
    assert transport.model == local_model.model


def test_after_a_search_the_hint_is_to_call_what_it_found_or_search_again() -> None:
    search = ToolSearch(threshold=0)
    add = Tool(
        "add",
        lambda a, b: a + b,
        description="Add two integers.",
        schema=TOOLS[0]["function"]["parameters"],
    )
    asyncio.run(search.select([], [add]))
    found, nothing = search.tool.handler(query="add integers"), search.tool.handler(query="zebra")
    call = {"id": "c1", "type": "function", "function": {"name": "search_tools", "arguments": "{}"}}
    turns = [
        {"role": "user", "content": "Add 1 and 2."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": found},
    ]
    prompt = _render(turns, TOOLS, trim=True)
    assert prompt.endswith(f"\n{SEARCH_RESULT_HINT}<|im_end|>\n<|im_start|>assistant\n")
    assert TOOL_RESULT_HINT not in prompt
    prompt = _render([*turns[:2], {**turns[2], "content": nothing}], TOOLS, trim=True)
    assert prompt.endswith(f"\n{NO_MATCH_HINT}<|im_end|>\n<|im_start|>assistant\n")
    assert TOOL_RESULT_HINT not in prompt and SEARCH_RESULT_HINT not in prompt
