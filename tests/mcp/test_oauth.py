"""OAuth 2.1 for MCP servers over HTTP (``McpStreamable(url, auth=OAuth(...))``, ``tether mcp
login``), against a local OAuth-protected server built on the SDK's server auth
(``servers/oauth.py``: a resource server and an authorization server that approves at once, on
two ports of 127.0.0.1). The browser step is driven by the test, which follows the
authorization address with httpx back to the loopback listener."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from mcp_helpers import free_port, wait_for_port

from tether.mcp import McpError, McpStreamable, OAuth

SERVER = Path(__file__).parent / "servers" / "oauth.py"
SRC = Path(__file__).resolve().parents[2] / "src"


class OAuthServer:
    """The local server's process and its test-only controls."""

    def __init__(self, rs_port: int, as_port: int, proc: subprocess.Popen[bytes]) -> None:
        self.url = f"http://127.0.0.1:{rs_port}/mcp"
        self.issuer = f"http://127.0.0.1:{as_port}"
        self.proc = proc

    def log(self) -> list[dict[str, Any]]:
        return [e for e in httpx.get(f"{self.issuer}/test/log").json() if not _control(e)]

    def paths(self, server: str) -> list[str]:
        return [f"{e['method']} {e['path']}" for e in self.log() if e["server"] == server]

    def tokens(self) -> dict[str, list[str]]:
        return dict(httpx.get(f"{self.issuer}/test/tokens").json())

    def control(self, what: str, value: str = "") -> None:
        httpx.post(f"{self.issuer}/test/{what}", content=value).raise_for_status()


def _control(entry: dict[str, Any]) -> bool:
    return str(entry["path"]).startswith("/test/")


def _start(*flags: str) -> Iterator[OAuthServer]:
    rs_port, as_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(rs_port), str(as_port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(rs_port, proc)
        wait_for_port(as_port, proc)
        yield OAuthServer(rs_port, as_port, proc)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    yield from _start()


@pytest.fixture
def short_lived() -> Iterator[OAuthServer]:
    """Access tokens that expire after 2 seconds."""
    yield from _start("--lifetime", "2")


class Catcher:
    """An HTTP server on another origin that writes down every request it gets (its first
    line and headers) and answers 404."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._server: asyncio.Server | None = None
        self.url = ""

    async def __aenter__(self) -> Catcher:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head.decode("latin-1"))
        writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()


async def approve(authorization_url: str) -> None:
    """The person's part: open the address; the authorization server approves at once and
    redirects the browser back to tether's loopback listener."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as browser:
        answer = await browser.get(authorization_url)
    assert answer.status_code == 200, answer.text
    assert "logged in" in answer.text


def kept(path: Path) -> dict[str, Any]:
    record = json.loads(path.read_text())
    assert isinstance(record, dict)
    return record


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def whoami(url: str, auth: OAuth, **options: Any) -> str:
    async with McpStreamable(url, auth=auth, **options) as mcp:
        result = await mcp.call("whoami", {})
    assert not result.is_error
    return str(result.content)


# -- the first login and the kept tokens -----------------------------------------------------


async def test_first_login_discovers_registers_and_exchanges_a_code_with_pkce(
    server: OAuthServer, tmp_path: Path
) -> None:
    auth = OAuth(token_file=tmp_path / "tokens.json")
    assert await auth.login(server.url, browser=approve, within=30) == 1
    steps = [f"{e['server']} {e['method']} {e['path']}" for e in server.log()]
    discovery = [
        "rs GET /.well-known/oauth-protected-resource/mcp",
        "as GET /.well-known/oauth-authorization-server",
        "as POST /register",
        "as GET /authorize",
        "as POST /token",
    ]
    at = [steps.index(step) for step in discovery]
    assert at == sorted(at), steps  # in this order: metadata, registration, code, token
    authorize = next(e for e in server.log() if e["path"] == "/authorize")
    assert "code_challenge_method=S256" in authorize["query"]
    assert "resource=" in authorize["query"]  # RFC 8707: the token is for this server only
    record = kept(tmp_path / "tokens.json")
    assert record["tokens"]["access_token"] in server.tokens()["access"]
    assert record["client"]["client_id"]
    assert mode(tmp_path / "tokens.json") == 0o600
    assert await whoami(server.url, auth) == "you are logged in"
    assert all(not e["auth"] for e in server.log() if e["server"] == "as")  # no bearer there


async def test_a_second_process_uses_the_kept_tokens_without_a_new_login(
    server: OAuthServer, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    await OAuth(token_file=path).login(server.url, browser=approve, within=30)
    before = server.paths("as")
    script = (
        "import asyncio, sys\n"
        "from tether.mcp import McpStreamable, OAuth\n"
        "async def main():\n"
        "    async with McpStreamable(sys.argv[1], auth=OAuth(token_file=sys.argv[2])) as mcp:\n"
        "        print((await mcp.call('whoami', {})).content)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        server.url,
        str(path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip() == "you are logged in"
    assert server.paths("as") == before  # no registration, no authorization, no token request
    assert mode(path) == 0o600


async def test_an_expired_access_token_is_refreshed_at_the_authorization_server(
    short_lived: OAuthServer, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    auth = OAuth(token_file=path)
    await auth.login(short_lived.url, browser=approve, within=30)
    first = kept(path)["tokens"]
    await asyncio.sleep(2.5)  # the access token has expired; a new connection (as a new process)
    assert await whoami(short_lived.url, auth) == "you are logged in"
    now = kept(path)["tokens"]
    assert now["access_token"] != first["access_token"]
    assert now["access_token"] in short_lived.tokens()["access"]
    assert short_lived.paths("as").count("POST /token") == 2  # the code, then one refresh
    assert short_lived.paths("as").count("GET /authorize") == 1  # no second login
    assert "POST /token" not in short_lived.paths("rs")  # the refresh token went nowhere else
    sent = [e["auth"] for e in short_lived.log() if e["auth"]]
    since = sent.index(f"Bearer {now['access_token']}")
    assert f"Bearer {first['access_token']}" not in sent[since:]
    assert mode(path) == 0o600


async def test_a_token_expiring_while_connected_is_refreshed_before_the_next_call(
    short_lived: OAuthServer, tmp_path: Path
) -> None:
    auth = OAuth(token_file=tmp_path / "tokens.json")
    await auth.login(short_lived.url, browser=approve, within=30)
    async with McpStreamable(short_lived.url, auth=auth) as mcp:
        await asyncio.sleep(2.5)
        result = await mcp.call("whoami", {})
    assert not result.is_error
    assert short_lived.paths("as").count("GET /authorize") == 1  # refreshed, no second login
    used = [e["auth"] for e in short_lived.log() if e["server"] == "rs" and e["auth"]]
    assert used[-1] != used[0]  # the call went with a new token


async def test_a_store_keeps_the_tokens_instead_of_a_file(
    server: OAuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))

    class Memory:
        def __init__(self) -> None:
            self.record: dict[str, Any] | None = None

        async def load(self) -> dict[str, Any] | None:
            return self.record

        async def save(self, record: dict[str, Any]) -> None:
            self.record = record

    memory = Memory()
    auth = OAuth(store=memory)
    await auth.login(server.url, browser=approve, within=30)
    assert memory.record is not None
    assert memory.record["tokens"]["access_token"] in server.tokens()["access"]
    assert await whoami(server.url, auth) == "you are logged in"
    assert not list(tmp_path.rglob("*.json"))  # noqa: ASYNC240 - nothing written to a file


async def test_the_default_token_file_is_per_server_under_tether_home(
    server: OAuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    await OAuth().login(server.url, browser=approve, within=30)
    (path,) = (tmp_path / "mcp-oauth").iterdir()
    assert mode(path) == 0o600 and mode(tmp_path / "mcp-oauth") == 0o700
    assert kept(path)["server"] == server.url
    assert await whoami(server.url, OAuth()) == "you are logged in"


async def test_a_client_registered_beforehand_logs_in_by_its_id(tmp_path: Path) -> None:
    port = free_port()
    for known in _start("--client", f"tether-cli:{port}"):
        auth = OAuth(client_id="tether-cli", token_file=tmp_path / "tokens.json")
        await auth.login(known.url, browser=approve, port=port, within=30)
        assert "POST /register" not in known.paths("as")
        assert await whoami(known.url, auth) == "you are logged in"


async def test_the_loopback_listener_takes_only_the_redirect_of_its_own_login(
    server: OAuthServer, tmp_path: Path
) -> None:
    turned_away: list[int] = []

    async def meddled(authorization_url: str) -> None:
        query = parse_qs(urlsplit(authorization_url).query)
        back = query["redirect_uri"][0]
        async with httpx.AsyncClient() as other_program:  # first, with a code of its own
            forged = await other_program.get(back, params={"code": "forged", "state": "guess"})
        turned_away.append(forged.status_code)
        await approve(authorization_url)

    auth = OAuth(token_file=tmp_path / "tokens.json")
    assert await auth.login(server.url, browser=meddled, within=30) == 1
    assert turned_away == [400]
    assert await whoami(server.url, auth) == "you are logged in"


async def test_a_login_to_a_server_that_asks_for_none_says_so(
    changing_http: str, tmp_path: Path
) -> None:
    shown: list[str] = []
    with pytest.raises(McpError, match=r"did not ask for a login .*without auth="):
        await OAuth(token_file=tmp_path / "t.json").login(
            changing_http, browser=shown.append, within=30
        )
    assert shown == [] and not (tmp_path / "t.json").exists()


# -- what ends a login ------------------------------------------------------------------------


async def test_without_a_login_a_connection_says_to_log_in(
    server: OAuthServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    auth = OAuth(token_file=tmp_path / "tokens.json")
    with pytest.raises(McpError, match="a new login is needed") as caught:
        await whoami(server.url, auth, connect_timeout=10)
    assert "OAuth flow error" not in caplog.text  # said once, by the error, not logged again
    assert f"tether mcp login {server.url}" in str(caught.value)
    assert "McpError" not in str(caught.value)  # said in words, not as a wrapped exception
    assert "GET /authorize" not in server.paths("as")  # no browser step without a person


async def test_a_revoked_token_is_an_error_saying_to_log_in_again(
    server: OAuthServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "tokens.json"
    auth = OAuth(token_file=path)
    await auth.login(server.url, browser=approve, within=30)
    tokens = kept(path)["tokens"]
    async with McpStreamable(server.url, auth=auth, connect_timeout=10) as mcp:
        server.control("revoke")
        with pytest.raises(McpError, match="Log in again") as during:
            await mcp.call("whoami", {})
    with pytest.raises(McpError, match="Log in again") as connecting:
        await whoami(server.url, auth, connect_timeout=10)
    secrets = [tokens["access_token"], tokens["refresh_token"]]
    for said in (str(during.value), str(connecting.value), caplog.text):
        assert "tether mcp login" in said or said is caplog.text
        assert not [s for s in secrets if s in said]


async def test_tokens_never_reach_a_log_or_an_error(
    short_lived: OAuthServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: tether's, the SDK's, httpx's
    path = tmp_path / "tokens.json"
    auth = OAuth(token_file=path)
    await auth.login(short_lived.url, browser=approve, within=30)
    secrets = set(kept(path)["tokens"].values()) - {"Bearer", "mcp"}
    await asyncio.sleep(2.5)
    assert await whoami(short_lived.url, auth) == "you are logged in"  # a refresh
    secrets |= {v for v in kept(path)["tokens"].values() if isinstance(v, str)} - {"Bearer", "mcp"}
    short_lived.control("redirect", f"{short_lived.issuer}/elsewhere")
    with pytest.raises(McpError) as redirected:
        await whoami(short_lived.url, auth, connect_timeout=10)
    short_lived.control("redirect", "")
    short_lived.control("revoke")
    with pytest.raises(McpError) as revoked:
        await whoami(short_lived.url, auth, connect_timeout=10)
    secrets = {s for s in secrets if isinstance(s, str) and len(s) > 10}
    assert len(secrets) == 4  # two access tokens, two refresh tokens
    texts = [caplog.text, str(redirected.value), str(revoked.value), repr(auth)]
    assert not [s for s in secrets for text in texts if s in text]


# -- tokens go to their own server only -------------------------------------------------------


async def test_a_redirect_to_another_origin_does_not_carry_the_token(
    server: OAuthServer, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    auth = OAuth(token_file=path)
    await auth.login(server.url, browser=approve, within=30)
    async with Catcher() as elsewhere:
        server.control("redirect", f"{elsewhere.url}/mcp")
        with pytest.raises(McpError) as caught:
            await whoami(server.url, auth, connect_timeout=10)
    token = kept(path)["tokens"]["access_token"]
    assert token not in str(caught.value)
    assert not [r for r in elsewhere.requests if token in r or "authorization" in r.lower()]


async def test_an_authorization_server_other_than_the_configured_one_is_refused(
    tmp_path: Path,
) -> None:
    async with Catcher() as other:
        for evil in _start("--advertise", other.url):
            real = evil.issuer
            auth = OAuth(token_file=tmp_path / "tokens.json", authorization_server=real)
            with pytest.raises(McpError, match=r"not .* as configured") as caught:
                await auth.login(evil.url, browser=approve, within=30)
            assert other.url in str(caught.value)
            assert other.requests == []  # nothing at all was sent there
            assert not (tmp_path / "tokens.json").exists()


async def test_without_a_configured_one_the_advertised_authorization_server_is_used(
    tmp_path: Path,
) -> None:
    async with Catcher() as other:
        for server in _start("--advertise", other.url):
            auth = OAuth(token_file=tmp_path / "tokens.json")
            with pytest.raises(McpError):
                await auth.login(server.url, browser=approve, within=30)
            assert other.requests  # the spec's discovery went there (and found nothing)
            assert not [r for r in other.requests if "authorization:" in r.lower()]


# -- a misbehaving token endpoint -------------------------------------------------------------


async def test_a_hanging_token_endpoint_is_an_error_within_the_connect_timeout(
    short_lived: OAuthServer, tmp_path: Path
) -> None:
    auth = OAuth(token_file=tmp_path / "tokens.json")
    await auth.login(short_lived.url, browser=approve, within=30)
    await asyncio.sleep(2.5)  # expired: connecting refreshes first
    short_lived.control("token-mode", "hang")
    started = time.monotonic()
    with pytest.raises(McpError, match="did not answer within 2 s"):
        await whoami(short_lived.url, auth, connect_timeout=2)
    assert time.monotonic() - started < 6


async def test_a_token_endpoint_answering_junk_is_an_error(
    short_lived: OAuthServer, tmp_path: Path
) -> None:
    auth = OAuth(token_file=tmp_path / "tokens.json")
    await auth.login(short_lived.url, browser=approve, within=30)
    await asyncio.sleep(2.5)
    short_lived.control("token-mode", "junk")
    with pytest.raises(McpError, match="Log in again"):  # the refresh failed: as if revoked
        await whoami(short_lived.url, auth, connect_timeout=10)
    other = OAuth(token_file=tmp_path / "other.json")
    with pytest.raises(McpError, match="OAuth failed: Invalid token response"):
        await other.login(short_lived.url, browser=approve, within=10)


async def test_a_login_nobody_completes_ends_at_its_timeout(
    server: OAuthServer, tmp_path: Path
) -> None:
    shown: list[str] = []
    started = time.monotonic()
    with pytest.raises(McpError, match="did not answer within 2 s"):
        await OAuth(token_file=tmp_path / "t.json").login(
            server.url, browser=shown.append, within=2
        )
    assert time.monotonic() - started < 6
    assert shown and shown[0].startswith(f"{server.issuer}/authorize?")


# -- the token file ---------------------------------------------------------------------------


async def test_a_token_file_others_may_read_is_refused(server: OAuthServer, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    auth = OAuth(token_file=path)
    await auth.login(server.url, browser=approve, within=30)
    path.chmod(0o644)
    with pytest.raises(McpError, match=r"may be read by others .*chmod 600"):
        await whoami(server.url, auth, connect_timeout=10)


def test_bad_settings_are_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="token_file= or store=, not both"):
        OAuth(token_file=tmp_path / "t.json", store=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="async load"):
        OAuth(store=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the client_id"):
        OAuth(client_secret="s3cret-value")
    with pytest.raises(ValueError, match="http"):
        OAuth(authorization_server="auth.example.com")
    with pytest.raises(ValueError, match="token= or auth=, not both"):
        McpStreamable("http://127.0.0.1:1/mcp", token="abc", auth=OAuth())
    assert "s3cret" not in repr(OAuth(client_id="c", client_secret="s3cret-value"))


# -- what the conformance suite asks of a client ------------------------------------------------


def token_requests(server: OAuthServer) -> list[dict[str, Any]]:
    return [e for e in server.log() if e["server"] == "as" and e["path"] == "/token"]


async def test_a_client_with_a_secret_authenticates_as_the_authorization_server_allows(
    tmp_path: Path,
) -> None:
    """RFC 8414: without a list, ``client_secret_basic`` is what the server takes; a server that
    lists only ``client_secret_post`` gets the secret in the form."""
    for method in ("client_secret_basic", "client_secret_post"):
        port = free_port()
        flags = ["--client", f"svc:{port}:s3cret-value:{method}"]
        if method == "client_secret_post":
            flags += ["--auth-methods", "client_secret_post"]
        for known in _start(*flags):
            auth = OAuth("svc", "s3cret-value", token_file=tmp_path / f"{method}.json")
            await auth.login(known.url, browser=approve, port=port, within=30)
            sent = token_requests(known)[-1]
            if method == "client_secret_basic":
                assert str(sent["auth"]).startswith("Basic ")
                assert "client_secret" not in sent["form"]
            else:
                assert sent["auth"] is None and sent["form"]["client_secret"] == "s3cret-value"
            assert await whoami(known.url, auth) == "you are logged in"


async def test_a_client_id_metadata_document_is_the_client_id_where_the_server_takes_one(
    tmp_path: Path,
) -> None:
    document = "https://tether.example/oauth/client.json"
    for cimd in _start("--cimd", document):
        auth = OAuth(client_metadata_url=document, token_file=tmp_path / "tokens.json")
        await auth.login(cimd.url, browser=approve, within=30)
        authorize = next(e for e in cimd.log() if e["path"] == "/authorize")
        assert parse_qs(authorize["query"])["client_id"] == [document]
        assert "POST /register" not in cimd.paths("as")
        assert await whoami(cimd.url, auth) == "you are logged in"


async def test_without_a_document_support_the_client_registers_as_before(
    server: OAuthServer, tmp_path: Path
) -> None:
    auth = OAuth(client_metadata_url="https://tether.example/c.json", token_file=tmp_path / "t")
    await auth.login(server.url, browser=approve, within=30)
    assert "POST /register" in server.paths("as")


async def test_a_call_needing_more_scope_says_so_and_the_next_login_asks_for_it(
    server: OAuthServer, tmp_path: Path
) -> None:
    auth = OAuth(token_file=tmp_path / "tokens.json")
    await auth.login(server.url, browser=approve, within=30)
    server.control("step-up", "mcp:write")
    with pytest.raises(McpError, match=r"more access \(scope 'mcp mcp:write'\)") as caught:
        await whoami(server.url, auth, connect_timeout=10)
    assert f"tether mcp login {server.url}" in str(caught.value)
    assert len([e for e in server.log() if e["path"] == "/authorize"]) == 1  # no browser
    await auth.login(server.url, browser=approve, within=30)
    authorize = [e for e in server.log() if e["path"] == "/authorize"][-1]
    assert set(parse_qs(authorize["query"])["scope"][0].split()) == {"mcp", "mcp:write"}
    assert await whoami(server.url, auth) == "you are logged in"


async def test_a_login_the_server_asks_more_scope_of_at_once_takes_a_second_browser_step(
    server: OAuthServer, tmp_path: Path
) -> None:
    server.control("step-up", "mcp:write")  # the listing wants it; the first login asks "mcp"
    shown: list[str] = []

    async def person(authorization_url: str) -> None:
        shown.append(authorization_url)
        await approve(authorization_url)

    auth = OAuth(token_file=tmp_path / "tokens.json")
    assert await auth.login(server.url, browser=person, within=30) == 1
    scopes = [parse_qs(urlsplit(u).query)["scope"][0] for u in shown]
    assert scopes == ["mcp", "mcp mcp:write"]
    assert await whoami(server.url, auth) == "you are logged in"


async def test_a_server_that_keeps_asking_for_more_scope_ends_the_login(
    server: OAuthServer, tmp_path: Path
) -> None:
    server.control("step-up", "mcp:write")
    server.control("grant", "mcp")  # the authorization server never gives it
    auth = OAuth(token_file=tmp_path / "tokens.json")
    with pytest.raises(McpError, match=r"still asks for more access .* after 3 logins"):
        await auth.login(server.url, browser=approve, within=30)
    assert len([e for e in server.log() if e["path"] == "/authorize"]) == 3


async def test_client_credentials_with_a_secret_need_no_login(tmp_path: Path) -> None:
    port = free_port()
    for known in _start("--client", f"svc:{port}:s3cret-value"):
        auth = OAuth(
            "svc", "s3cret-value", grant="client_credentials", token_file=tmp_path / "t.json"
        )
        assert await whoami(known.url, auth) == "you are logged in"
        sent = token_requests(known)[-1]
        assert sent["form"]["grant_type"] == "client_credentials"
        assert str(sent["auth"]).startswith("Basic ") and "resource" in sent["form"]
        assert "GET /authorize" not in known.paths("as")
        assert mode(tmp_path / "t.json") == 0o600
        assert await whoami(known.url, auth) == "you are logged in"  # the kept token
        assert len(token_requests(known)) == 1


async def test_a_refused_client_secret_is_not_repeated_in_the_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for known in _start("--client", f"svc:{free_port()}:s3cret-value"):
        auth = OAuth(
            "svc", "not-the-s3cret", grant="client_credentials", token_file=tmp_path / "t.json"
        )
        with pytest.raises(McpError, match="invalid_client") as refused:
            await whoami(known.url, auth, connect_timeout=10)
        assert "not-the-s3cret" not in str(refused.value)
        assert "not-the-s3cret" not in caplog.text


async def test_client_credentials_with_a_private_key_send_a_signed_assertion(
    tmp_path: Path,
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = tmp_path / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    for known in _start("--client", f"svc:{free_port()}", "--jwt-key", str(public)):
        auth = OAuth(
            "svc", private_key=pem, grant="client_credentials", token_file=tmp_path / "t.json"
        )
        assert await whoami(known.url, auth) == "you are logged in"
        form = token_requests(known)[-1]["form"]
        assert form["client_assertion_type"].endswith("jwt-bearer")
        assert "PRIVATE KEY" not in json.dumps(kept(tmp_path / "t.json"))
        assert "private_key='" not in repr(auth)
        other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        wrong = OAuth(
            "svc", private_key=other.decode(), grant="client_credentials", token_file=tmp_path / "w"
        )
        with pytest.raises(McpError, match="invalid_client") as refused:
            await whoami(known.url, wrong, connect_timeout=10)
        assert "PRIVATE KEY" not in str(refused.value)


def test_bad_client_credentials_settings_are_refused_with_what_to_do() -> None:
    with pytest.raises(ValueError, match="grant="):
        OAuth(client_id="svc", client_secret="s3cret-value", grant="password")
    with pytest.raises(ValueError, match=r"client_credentials'\) needs client_id"):
        OAuth(grant="client_credentials")
    with pytest.raises(ValueError, match="client_secret= or private_key="):
        OAuth(client_id="svc", grant="client_credentials")
    with pytest.raises(ValueError, match="not both"):
        OAuth("svc", "s3cret-value", private_key="pem", grant="client_credentials")
    with pytest.raises(ValueError, match=r"private_key=.* grant='client_credentials'"):
        OAuth(client_id="svc", private_key="pem")
    with pytest.raises(ValueError, match="PEM private key") as junk:
        OAuth(
            "svc", private_key="-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n", grant="client_credentials"
        )
    assert "c2VjcmV0" not in str(junk.value)
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuth(client_metadata_url="http://tether.example/c.json")
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuth(client_metadata_url="https://tether.example/")


# -- the CLI ----------------------------------------------------------------------------------


def tether(*args: str, **options: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "80"}
    return subprocess.Popen(
        [sys.executable, "-m", "tether.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **options,
    )


def test_tether_mcp_login_as_a_user_runs_it(server: OAuthServer, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    proc = tether("mcp", "login", server.url, "--token-file", str(path), "--no-browser")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and not line.startswith("http"):
            line = proc.stdout.readline()
        assert line.startswith(f"{server.issuer}/authorize?"), line
        page = httpx.get(line.strip(), follow_redirects=True, timeout=10)  # the person's browser
        assert page.status_code == 200 and "logged in" in page.text
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert f"logged in to {server.url} (1 tools); tokens kept in {path}" in out
    assert mode(path) == 0o600
    assert asyncio.run(whoami(server.url, OAuth(token_file=path))) == "you are logged in"
    logout = tether("mcp", "logout", server.url, "--token-file", str(path))
    out, _ = logout.communicate(timeout=30)
    assert logout.returncode == 0 and "logged out" in out and not path.exists()


def test_tether_mcp_login_with_a_client_metadata_document(tmp_path: Path) -> None:
    document = "https://tether.example/oauth/client.json"
    path = tmp_path / "tokens.json"
    for cimd in _start("--cimd", document):
        proc = tether(
            "mcp", "login", cimd.url, "--token-file", str(path), "--no-browser",
            "--client-metadata-url", document,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            while line and not line.startswith("http"):
                line = proc.stdout.readline()
            assert parse_qs(urlsplit(line.strip()).query)["client_id"] == [document], line
            httpx.get(line.strip(), follow_redirects=True, timeout=10)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        assert f"tokens kept in {path}" in out
        assert "POST /register" not in cimd.paths("as")
    bad = tether("mcp", "login", "http://127.0.0.1:9/mcp", "--client-metadata-url", "http://x/")
    _, err = bad.communicate(timeout=30)
    assert bad.returncode == 2 and "https URL with a path" in err


def test_tether_mcp_login_reports_a_bad_url_as_a_usage_error() -> None:
    proc = tether("mcp", "login", "ftp://example.com/mcp")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "needs an http(s) URL" in err
    bare = tether("mcp")
    _, err = bare.communicate(timeout=30)
    assert bare.returncode == 2 and "needs an action: login or logout" in err
