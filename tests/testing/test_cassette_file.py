"""A cassette's file and modes over real HTTP: a changed request is a ``CassetteError`` with a
diff, what legitimately varies is not; a tampered, cut or missing file is an error, never a
silent pass; credentials and configured secrets never reach the file; and each mode records
what it says."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from misbehaving_server import MisbehavingServer, json_reply

from tether.errors import CassetteError, TetherError
from tether.testing import Cassette

SECRET = "hunter2-the-configured-secret"
KEY = "sk-live-0123456789abcdef"
CREDENTIALS = {"authorization": f"Bearer {KEY}", "x-api-key": KEY, "cookie": "sid=abcdef123456"}


@pytest.fixture
async def server() -> AsyncIterator[MisbehavingServer]:
    """Answers every request with its count so far, so a replay tells which answer it got."""
    async with MisbehavingServer() as running:
        counted = _counting(running)
        running.script(counted)
        yield running


def _counting(server: MisbehavingServer) -> Any:
    async def reply(conn: Any, request: Any) -> bool:
        return await json_reply({"answer": len(server.requests)})(conn, request)

    return reply


async def ask(url: str, body: dict[str, Any], **headers: str) -> Any:
    async with httpx.AsyncClient() as client:
        response = await client.post(url + "/v1/chat", json=body, headers=headers)
        return response.json()


async def test_a_changed_request_is_an_error_with_the_difference(
    server: MisbehavingServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path):
        await ask(server.url, {"model": "m", "messages": ["Weather in Oslo?"]})
    with pytest.raises(CassetteError) as caught:
        async with Cassette(path):
            await ask(server.url, {"model": "m", "messages": ["Weather in Bergen?"]})
    message = str(caught.value)
    assert str(path) in message and caught.value.path == str(path)
    assert '-      "Weather in Oslo?"' in message and '+      "Weather in Bergen?"' in message
    assert "--record=all" in message
    assert isinstance(caught.value, TetherError)
    assert len(server.requests) == 1  # the changed request never went out


async def test_a_mismatch_swallowed_by_the_caller_is_raised_when_the_cassette_closes(
    server: MisbehavingServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path):
        await ask(server.url, {"q": 1})
    with pytest.raises(CassetteError, match="no recorded exchange matches"):
        async with Cassette(path):
            with contextlib.suppress(CassetteError):  # as an SDK's background task might
                await ask(server.url, {"q": 2})


async def test_ids_times_and_key_order_do_not_count(
    server: MisbehavingServer, tmp_path: Path
) -> None:
    def body(call: str) -> dict[str, Any]:
        return {
            "messages": [{"tool_call_id": call, "content": "r"}, {"refers_to": call}],
            "sent_at": "2026-01-02T03:04:05.678Z"
            if call.startswith("call")
            else "2027-11-12T13:14:15Z",
            "model": "m",
        }

    path = tmp_path / "c.json"
    async with Cassette(path):
        first = await ask(server.url, body(f"call_{uuid.uuid4().hex[:24]}"))
    async with Cassette(path, mode="none") as cassette:
        again = dict(reversed(body(str(uuid.uuid4())).items()))
        assert await ask(server.url, again) == first
    assert cassette.played == 1
    mixed = body(f"call_{uuid.uuid4().hex[:24]}")
    mixed["messages"][1]["refers_to"] = f"call_{uuid.uuid4().hex[:24]}"  # another id: a change
    with pytest.raises(CassetteError, match="<id-2>"):
        async with Cassette(path, mode="none"):
            await ask(server.url, mixed)


@pytest.mark.parametrize("damage", ["tampered", "truncated", "not ours", "malformed"])
async def test_a_damaged_cassette_is_an_error(
    damage: str, server: MisbehavingServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path):
        await ask(server.url, {"q": 1})
    text = path.read_text()
    if damage == "tampered":
        assert '\\"answer\\": 1' in text
        path.write_text(text.replace('\\"answer\\": 1', '\\"answer\\": 7'))
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "not ours":
        path.write_text(json.dumps({"interactions": []}))
    else:
        document = json.loads(text)
        del document["exchanges"][0]["response"]["status"]
        path.write_text(json.dumps(document))
    expected = {
        "tampered": "edited or cut since it was recorded",
        "truncated": "damaged or cut short",
        "not ours": "not a tether cassette",
        "malformed": "an exchange is malformed",
    }[damage]
    for mode in ("once", "none", "new"):
        with pytest.raises(CassetteError, match=expected):
            async with Cassette(path, mode=mode):  # type: ignore[arg-type]
                await ask(server.url, {"q": 1})
    assert len(server.requests) == 1


async def test_credentials_and_secrets_never_reach_the_file(
    server: MisbehavingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "env-key-987654321")
    path = tmp_path / "c.json"
    async with httpx.AsyncClient() as client, Cassette(path, secrets=[SECRET]):
        await client.post(
            server.url + f"/v1/chat?key={KEY}&alt=sse",
            json={"note": f"my secret is {SECRET}", "env": "env-key-987654321"},
            headers={
                "authorization": f"Bearer {KEY}",
                "x-api-key": KEY,
                "cookie": "sid=abcdef123456",
            },
        )
        await client.post(
            server.url + "/oauth/token",
            data={"grant_type": "client_credentials", "client_secret": "cs-0123456789"},
        )
    text = path.read_text()
    for secret in (KEY, SECRET, "env-key-987654321", "abcdef123456", "cs-0123456789"):
        assert secret not in text
    assert text.count("<redacted>") >= 7
    first = json.loads(text)["exchanges"][0]["request"]
    assert first["url"].endswith("/v1/chat?key=<redacted>&alt=sse")
    # and the redacted recording still replays the same (credential-carrying) request
    async with httpx.AsyncClient() as client, Cassette(path, mode="none", secrets=[SECRET]) as c:
        await client.post(
            server.url + f"/v1/chat?key={KEY}&alt=sse",
            json={"note": f"my secret is {SECRET}", "env": "env-key-987654321"},
            headers={
                "authorization": f"Bearer {KEY}",
                "x-api-key": KEY,
                "cookie": "sid=abcdef123456",
            },
        )
        await client.post(
            server.url + "/oauth/token",
            data={"grant_type": "client_credentials", "client_secret": "cs-0123456789"},
        )
    assert c.played == 2


async def test_once_records_a_missing_cassette_then_only_replays(
    server: MisbehavingServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path) as cassette:
        assert cassette.recording
        assert await ask(server.url, {"q": 1}) == {"answer": 1}
    async with Cassette(path) as cassette:
        assert not cassette.recording
        assert await ask(server.url, {"q": 1}) == {"answer": 1}
    assert len(server.requests) == 1
    with pytest.raises(CassetteError, match="no recorded exchange matches"):
        async with Cassette(path):
            await ask(server.url, {"q": 1})
            await ask(server.url, {"q": 2})  # a new request is not recorded under "once"


async def test_new_replays_what_is_there_and_records_what_is_not(
    server: MisbehavingServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path, mode="new"):
        await ask(server.url, {"q": 1})
    async with Cassette(path, mode="new") as cassette:
        assert await ask(server.url, {"q": 1}) == {"answer": 1}  # replayed
        assert await ask(server.url, {"q": 2}) == {"answer": 2}  # recorded
    assert (cassette.played, cassette.recorded) == (1, 1)
    async with Cassette(path, mode="none") as cassette:
        assert await ask(server.url, {"q": 2}) == {"answer": 2}
        assert await ask(server.url, {"q": 1}) == {"answer": 1}  # any order
    assert len(server.requests) == 2


async def test_all_records_everything_again(server: MisbehavingServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path):
        await ask(server.url, {"q": 1})
    async with Cassette(path, mode="all") as cassette:
        assert await ask(server.url, {"q": 1}) == {"answer": 2}  # the server asked again
    assert cassette.recorded == 1
    async with Cassette(path, mode="none"):
        assert await ask(server.url, {"q": 1}) == {"answer": 2}
    assert len(json.loads(path.read_text())["exchanges"]) == 1


async def test_none_never_records(server: MisbehavingServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with pytest.raises(CassetteError, match="there is no such file"):
        async with Cassette(path, mode="none"):
            pass
    assert not path.exists() and not server.requests


async def test_recorded_exchanges_never_asked_for_are_an_error(
    server: MisbehavingServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    async with Cassette(path):
        await ask(server.url, {"q": 1})
        await ask(server.url, {"q": 2})
    with pytest.raises(CassetteError, match=r"1 recorded exchange\(s\) were never requested"):
        async with Cassette(path, mode="none"):
            await ask(server.url, {"q": 1})


def test_bad_arguments_say_what_is_allowed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        Cassette(tmp_path / "c.json", mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timing must be one of"):
        Cassette(tmp_path / "c.json", timing="slow")  # type: ignore[arg-type]


async def test_one_cassette_at_a_time(tmp_path: Path) -> None:
    async with Cassette(tmp_path / "a.json"):
        with pytest.raises(RuntimeError, match="one cassette at a time"):
            async with Cassette(tmp_path / "b.json"):
                pass
