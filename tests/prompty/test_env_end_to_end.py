"""Issue 35 §1, as a Prompty user runs a file: ``${env:NAME}`` and ``${env:NAME:default}`` resolve
with a plain ``load(path)`` (the spec's behaviour), and the request really goes out to a local
OpenAI-compatible server with the key from the environment; a key from the environment never
goes to an endpoint written in the file (refused before any request, the key in no error or log).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prompty_chat_server import ChatServer, chat_server

from tether import prompty
from tether.prompty import CredentialEndpointError, LoadError
from tether.prompty.execution.tools import engine_tools
from tether.prompty.execution.wire import transport_for
from tether.prompty.kinds.builtin import register_builtin_kinds
from tether.prompty.tracing.tracer import Tracer
from tether.transports.openai_chat import OpenAIChatTransport

KEY = "sk-e2e-0123456789abcdefghijklmnop"
QUESTION = {"question": "Weather in Paris?"}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    with chat_server() as running:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", running.url)
        monkeypatch.delenv("PROMPTY_E2E_MODEL", raising=False)
        yield running


@pytest.fixture
def traced() -> Iterator[list[Any]]:
    """Every value the Prompty tracer is given while the test runs."""
    values: list[Any] = []

    @contextmanager
    def recording(name: str) -> Iterator[Any]:
        yield lambda key, value: values.append((name, key, value))

    Tracer.add("recording", recording)
    try:
        yield values
    finally:
        Tracer.remove("recording")


def _file(tmp_path: Path, connection: str, model_id: str = "gpt-4o-mini") -> Path:
    path = tmp_path / "weather.prompty"
    path.write_text(
        "---\nname: weather\n"
        f"model:\n  id: {model_id}\n  provider: openai\n  apiType: chat\n"
        f"  connection:\n{connection}"
        "inputs:\n  - {name: question, kind: string}\n"
        "---\nsystem:\nYou answer weather questions.\n\nuser:\n{{question}}\n"
    )
    return path


FROM_ENV = (
    "    kind: key\n    endpoint: ${env:AZURE_OPENAI_ENDPOINT}\n    apiKey: ${env:OPENAI_API_KEY}\n"
)


def _sent_with_the_key(server: ChatServer) -> dict[str, Any]:
    (request,) = server.seen
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == f"Bearer {KEY}"
    return request


def test_endpoint_and_key_from_the_environment(
    server: ChatServer, tmp_path: Path, traced: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = prompty.load(_file(tmp_path, FROM_ENV))
    assert prompty.invoke(agent, QUESTION) == "Sunny in Paris."
    request = _sent_with_the_key(server)
    assert request["body"]["model"] == "gpt-4o-mini"
    assert traced and KEY not in json.dumps(traced, default=repr)
    assert KEY not in caplog.text


def test_a_key_from_the_environment_goes_to_the_providers_default_host(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = prompty.load(_file(tmp_path, "    kind: key\n    apiKey: ${env:OPENAI_API_KEY}\n"))
    made = transport_for(agent.model)
    assert isinstance(made, OpenAIChatTransport) and made.base_url == "https://api.openai.com/v1"
    # The provider's own host, played by the local server (no network in tests).
    monkeypatch.setattr(OpenAIChatTransport, "default_base_url", server.url)
    assert prompty.invoke(agent, QUESTION) == "Sunny in Paris."
    _sent_with_the_key(server)


def test_a_variable_with_a_default(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, FROM_ENV, model_id="${env:PROMPTY_E2E_MODEL:local-default}")
    assert prompty.invoke(prompty.load(path), QUESTION) == "Sunny in Paris."
    monkeypatch.setenv("PROMPTY_E2E_MODEL", "from-the-environment")
    assert prompty.invoke(prompty.load(path), QUESTION) == "Sunny in Paris."
    models = [r["body"]["model"] for r in server.seen]
    assert models == ["local-default", "from-the-environment"]
    assert all(r["authorization"] == f"Bearer {KEY}" for r in server.seen)


def test_a_key_from_the_environment_never_goes_to_an_endpoint_written_in_the_file(
    server: ChatServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, traced: list[Any]
) -> None:
    caplog.set_level(logging.DEBUG)
    written = f"    kind: key\n    endpoint: {server.url}\n    apiKey: ${{env:OPENAI_API_KEY}}\n"
    agent = prompty.load(_file(tmp_path, written))
    with pytest.raises(CredentialEndpointError) as raised:
        prompty.invoke(agent, QUESTION)
    error = raised.value
    assert isinstance(error, LoadError)
    assert server.seen == []  # refused before any request
    assert (error.field, error.variable, error.host) == (
        "model.connection.apiKey",
        "OPENAI_API_KEY",
        "127.0.0.1",
    )
    shown = [str(error), repr(error), repr(error.args), str(pickle.loads(pickle.dumps(error)))]
    assert all(KEY not in text for text in shown)
    assert "${env:OPENAI_API_KEY}" in str(error) and "127.0.0.1" in str(error)
    assert KEY not in caplog.text and KEY not in json.dumps(traced, default=repr)
    # The same endpoint given by the application's own code is trusted.
    assert agent.model is not None and agent.model.connection is not None
    given = dataclasses.replace(agent.model.connection, endpoint=server.url)
    mine = dataclasses.replace(agent, model=dataclasses.replace(agent.model, connection=given))
    assert prompty.invoke(mine, QUESTION) == "Sunny in Paris."
    _sent_with_the_key(server)


def test_turn_on_a_path(server: ChatServer, tmp_path: Path) -> None:
    answer = prompty.turn(str(_file(tmp_path, FROM_ENV)), QUESTION)
    assert answer == "Sunny in Paris."
    _sent_with_the_key(server)


ITEMS = """openapi: 3.0.3
info: {title: items, version: '1'}
servers: [{url: 'http://127.0.0.1:9/v1'}]
paths:
  /items:
    get: {operationId: getItems}
"""


async def test_a_tool_key_from_the_environment_goes_to_a_tool_endpoint_from_the_environment(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ITEMS_API", server.url)
    (tmp_path / "items.yaml").write_text(ITEMS)
    tool = (
        "  - {name: getItems, kind: openapi, specification: items.yaml, connection: "
        "{kind: key, endpoint: '${env:ITEMS_API}', apiKey: '${env:OPENAI_API_KEY}'}}\n"
    )
    path = tmp_path / "items.prompty"
    path.write_text(f"---\nname: items\ntools:\n{tool}---\nuser:\nWhat is in stock?\n")
    register_builtin_kinds()
    (declared,) = engine_tools(prompty.load(path))
    assert "umbrella" in await declared.handler()
    (request,) = server.seen
    assert request["path"] == "/v1/items" and request["authorization"] == f"Bearer {KEY}"
