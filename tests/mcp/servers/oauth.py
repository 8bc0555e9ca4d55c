"""A local OAuth-protected MCP server, built on the official SDK's server auth: an MCP resource
server (``MCPServer`` with a token verifier, RFC 9728 metadata) on one port and an authorization
server (the SDK's auth routes: metadata, dynamic registration, authorize, token, revoke) on
another, so the two are different origins as they usually are. The authorization server
approves every request at once (no person) and keeps everything in memory.

Run: python oauth.py RS_PORT AS_PORT [--lifetime S] [--advertise URL] [--client ID:PORT]

``--lifetime``: seconds an access token lives (default 3600). ``--advertise``: the authorization
server the resource's metadata names, instead of the real one (another origin). ``--client``:
a public client registered beforehand, whose redirect URI is on 127.0.0.1:PORT; there is then
no dynamic registration.

Test-only routes on the authorization server: ``GET /test/log`` (every request either server
saw: which, method, path, query, its Authorization header), ``GET /test/tokens`` (the live
tokens), ``POST /test/revoke`` (forget every token), ``POST /test/token-mode`` with ``ok``,
``hang`` or ``junk`` (how the token endpoint answers from then on), ``POST /test/redirect``
with a URL (every authenticated MCP request is then answered with a 307 there).
"""

from __future__ import annotations

import argparse
import secrets
import time
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

LOG: list[dict[str, Any]] = []
MODE = {"token": "ok", "redirect": ""}


class Provider:
    """An authorization server that approves at once and keeps everything in memory."""

    def __init__(self, lifetime: int) -> None:
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        expires = int(time.time()) + self.lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


class Verifier:
    """The resource server's check of a bearer token: the authorization server's own table
    (they share this process), expiry included."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        found = self.provider.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found


def logged(app: Any, which: str) -> Any:
    """``app`` with every request written to ``LOG``; on the authorization server, the token
    endpoint hangs or answers junk when told to; on the resource server, every authenticated
    request is answered with a 307 when told to."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        auth = headers.get("authorization")
        query = scope.get("query_string", b"").decode()
        LOG.append(
            {
                "server": which,
                "method": scope["method"],
                "path": scope["path"],
                "query": query,
                "auth": auth,
            }
        )
        if which == "as" and scope["path"] == "/token" and MODE["token"] != "ok":
            if MODE["token"] == "hang":
                await anyio.sleep_forever()
            await Response("<html>surprise</html>", 200, media_type="application/json")(
                scope, receive, send
            )
            return
        if which == "rs" and MODE["redirect"] and auth and scope["path"] == "/mcp":
            moved = Response(status_code=307, headers={"location": MODE["redirect"]})
            await moved(scope, receive, send)
            return
        await app(scope, receive, send)

    return wrapped


def control_routes(provider: Provider) -> list[Route]:
    async def log(request: Request) -> Response:
        return JSONResponse(LOG)

    async def tokens(request: Request) -> Response:
        return JSONResponse({"access": list(provider.access), "refresh": list(provider.refresh)})

    async def revoke(request: Request) -> Response:
        provider.access.clear()
        provider.refresh.clear()
        return PlainTextResponse("revoked")

    async def token_mode(request: Request) -> Response:
        MODE["token"] = (await request.body()).decode()
        return PlainTextResponse(MODE["token"])

    async def redirect(request: Request) -> Response:
        MODE["redirect"] = (await request.body()).decode()
        return PlainTextResponse(MODE["redirect"])

    return [
        Route("/test/log", log),
        Route("/test/tokens", tokens),
        Route("/test/revoke", revoke, methods=["POST"]),
        Route("/test/token-mode", token_mode, methods=["POST"]),
        Route("/test/redirect", redirect, methods=["POST"]),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rs_port", type=int)
    parser.add_argument("as_port", type=int)
    parser.add_argument("--lifetime", type=int, default=3600)
    parser.add_argument("--advertise")
    parser.add_argument("--client")
    args = parser.parse_args()
    rs_url, as_url = f"http://127.0.0.1:{args.rs_port}", f"http://127.0.0.1:{args.as_port}"
    provider = Provider(args.lifetime)
    if args.client:
        client_id, _, port = args.client.partition(":")
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            scope="mcp",
        )
    server = MCPServer(
        "oauth-demo",
        token_verifier=Verifier(provider),
        auth=AuthSettings(
            issuer_url=args.advertise or as_url,
            resource_server_url=f"{rs_url}/mcp",
            validate_token_resource=True,
            required_scopes=["mcp"],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Say that the caller got in."""
        return "you are logged in"

    auth_routes = create_auth_routes(
        provider,
        issuer_url=AuthSettings(issuer_url=as_url, resource_server_url=None).issuer_url,
        client_registration_options=ClientRegistrationOptions(
            enabled=not args.client, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    as_app = Starlette(routes=[*auth_routes, *control_routes(provider)])
    rs_app = server.streamable_http_app()
    servers = [
        uvicorn.Server(
            uvicorn.Config(logged(rs_app, "rs"), port=args.rs_port, log_level="warning")
        ),
        uvicorn.Server(
            uvicorn.Config(logged(as_app, "as"), port=args.as_port, log_level="warning")
        ),
    ]
    async with anyio.create_task_group() as group:
        for each in servers:
            group.start_soon(each.serve)


if __name__ == "__main__":
    anyio.run(main)
