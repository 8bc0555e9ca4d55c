"""Model discovery against a real HTTP server on this machine: the request each provider gets,
pagination, enrichment, where the key goes (and where it never goes), and failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tether.errors import AuthenticationError, BadRequestError, ConnectionFailedError
from tether.prompty.discovery import ModelInfo, list_models, map_model
from tether.prompty.errors import DiscoveryError
from tether.prompty.model import ConnectionConfig

KEY = "sk-test-abcdefghijklmnop"


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]


Respond = Callable[[Seen], tuple[int, dict[str, str], bytes]]


def reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return status, {"Content-Type": "application/json", **(headers or {})}, data


@dataclass
class Server:
    """A tiny HTTP/1.1 server: one response per connection, every request kept."""

    respond: Respond
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, target, _ = (await reader.readline()).decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (line := (await reader.readline()).decode().strip()) != "":
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        seen = Seen(method, target, headers)
        self.seen.append(seen)
        status, extra, body = self.respond(seen)
        head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
        head += [f"{k}: {v}" for k, v in extra.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        writer.close()


OPENAI_LIST = {
    "object": "list",
    "data": [
        {"id": "gpt-4o-mini-2024-07-18", "object": "model", "owned_by": "system"},
        {"id": "ft:custom-model:acme::xyz", "object": "model", "owned_by": "acme"},
        {"object": "model"},  # no id: left out
    ],
}


async def test_openai_models_are_listed_mapped_and_enriched() -> None:
    async with Server(lambda seen: reply(OPENAI_LIST)) as server:
        models = await list_models({"endpoint": f"{server.url}/v1/", "apiKey": KEY})
    (request,) = server.seen
    assert (request.method, request.target) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert [m.id for m in models] == ["gpt-4o-mini-2024-07-18", "ft:custom-model:acme::xyz"]
    known, unknown = models
    assert known.owned_by == "system" and known.context_window == 128_000
    assert known.input_modalities == ("text", "image")
    assert unknown.context_window is None and unknown.input_modalities is None
    assert unknown.additional_properties == OPENAI_LIST["data"][1]


async def test_enrichment_can_be_turned_off() -> None:
    async with Server(lambda seen: reply(OPENAI_LIST)) as server:
        models = await list_models({"endpoint": server.url, "apiKey": KEY}, enrich_known=False)
    assert models[0].context_window is None


async def test_anthropic_pages_are_followed_with_anthropic_s_headers() -> None:
    pages = {
        "": {
            "data": [{"id": "claude-a", "display_name": "A", "type": "model"}],
            "has_more": True,
            "last_id": "claude-a",
        },
        "claude-a": {
            "data": [{"id": "claude-b", "context_length": 200000, "type": "model"}],
            "has_more": False,
            "last_id": "claude-b",
        },
    }

    def respond(seen: Seen) -> Any:
        after = seen.target.partition("after_id=")[2]
        return reply(pages[after])

    async with Server(respond) as server:
        connection = ConnectionConfig(kind="key", endpoint=server.url, api_key=KEY)
        models = await list_models(connection, provider="anthropic")
    assert [m.to_dict()["id"] for m in models] == ["claude-a", "claude-b"]
    assert models[0].display_name == "A" and models[0].owned_by == "anthropic"
    assert models[1].context_window == 200000
    first, second = server.seen
    assert first.target == "/v1/models?limit=1000"
    assert second.target == "/v1/models?limit=1000&after_id=claude-a"
    for request in server.seen:
        assert request.headers["x-api-key"] == KEY
        assert request.headers["anthropic-version"]
        assert "authorization" not in request.headers


async def test_a_key_from_the_environment_never_goes_to_another_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-123")
    async with Server(lambda seen: reply(OPENAI_LIST)) as server:
        await list_models({"endpoint": f"{server.url}/v1"})
    (request,) = server.seen
    assert "authorization" not in request.headers


async def test_a_redirect_is_not_followed_so_the_key_stays_put() -> None:
    async with Server(lambda seen: reply(OPENAI_LIST)) as elsewhere:

        def redirect(seen: Seen) -> Any:
            return reply(b"", 307, {"Location": f"{elsewhere.url}/v1/models"})

        async with Server(redirect) as server:
            with pytest.raises(BadRequestError, match="redirect"):
                await list_models({"endpoint": f"{server.url}/v1", "apiKey": KEY})
    assert len(server.seen) == 1 and elsewhere.seen == []


async def test_a_refused_key_is_an_authentication_error_that_does_not_quote_it() -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    async with Server(lambda seen: reply(echo, 401)) as server:
        with pytest.raises(AuthenticationError) as raised:
            await list_models({"endpoint": server.url, "apiKey": KEY})
    assert KEY not in str(raised.value) and "Incorrect API key" in str(raised.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"not json", "not JSON"), (b'{"object": "list"}', "no 'data' list"), (b"[1]", "data")],
)
async def test_a_malformed_list_is_a_discovery_error(body: bytes, message: str) -> None:
    async with Server(lambda seen: reply(body)) as server:
        with pytest.raises(DiscoveryError, match=message):
            await list_models({"endpoint": server.url})


async def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    async with Server(lambda seen: reply(OPENAI_LIST)) as server:
        url = server.url
    with pytest.raises(ConnectionFailedError):
        await list_models({"endpoint": url, "apiKey": KEY})


@pytest.mark.parametrize(
    ("connection", "provider", "message"),
    [
        ({"endpoint": "ftp://host"}, "openai", "http"),
        ({"endpoint": 5}, "openai", "endpoint must be a string"),
        ({"apiKey": ["k"]}, "openai", "apiKey must be a string"),
        ({}, "foundry", "openai and anthropic"),
    ],
)
async def test_bad_connections_are_refused_before_any_request(
    connection: dict[str, Any], provider: str, message: str
) -> None:
    with pytest.raises(DiscoveryError, match=message):
        await list_models(connection, provider=provider)


@pytest.mark.parametrize(
    ("provider", "raw", "message"),
    [
        ("openai", {"owned_by": "x"}, "'id'"),
        ("openai", {"id": 3}, "id must be a string"),
        ("anthropic", {"id": "c", "context_length": "big"}, "context_length must be"),
        ("anthropic", {"id": "c", "input_modalities": "text"}, "input_modalities must be"),
        ("foundry", {"name": "d", "properties": []}, "properties must be an object"),
        ("foundry", {"name": "d", "properties": {"model": {"publisher": 1}}}, "publisher"),
        ("nobody", {"id": "x"}, "no model mapping for provider 'nobody'"),
        ("openai", ["id"], "must be an object"),
    ],
)
def test_bad_records_are_refused_naming_the_field(provider: str, raw: Any, message: str) -> None:
    with pytest.raises(DiscoveryError, match=message):
        map_model(provider, raw)


def test_model_info_round_trips_and_is_frozen() -> None:
    data = {
        "id": "m",
        "displayName": "M",
        "ownedBy": "o",
        "contextWindow": 10,
        "inputModalities": ["text"],
        "outputModalities": [],
        "additionalProperties": {"x": 1},
    }
    info = ModelInfo.from_dict(data)
    assert info.to_dict() == data
    assert hash(info) == hash(ModelInfo.from_dict(data))
    with pytest.raises(AttributeError):
        info.id = "other"  # type: ignore[misc]
    assert ModelInfo(id="bare").to_dict() == {"id": "bare"}
