"""A local OAuth-protected MCP server, built on the official SDK's server auth: an MCP resource
server (``MCPServer`` with a token verifier, RFC 9728 metadata) on one port and an authorization
server (the SDK's auth routes: metadata, dynamic registration, authorize, token, revoke) on
another, so the two are different origins as they usually are. The authorization server
approves every request at once (no person) and keeps everything in memory.

Run: python oauth.py RS_PORT AS_PORT [--lifetime S] [--advertise URL]
[--client ID:PORT[:SECRET[:METHOD]]] [--auth-methods M,...] [--cimd URL] [--jwt-key PEMFILE]

``--lifetime``: seconds an access token lives (default 3600). ``--advertise``: the authorization
server the resource's metadata names, instead of the real one (another origin). ``--client``:
a client registered beforehand, whose redirect URI is on 127.0.0.1:PORT (public; with SECRET a
confidential one, authenticating at the token endpoint by METHOD, default
``client_secret_basic``); there is then no dynamic registration, and that client may also use
the client credentials grant. ``--auth-methods``: the token endpoint authentication methods
the metadata lists (default: the SDK's). ``--cimd``: the metadata says client ID metadata
documents are supported, and URL is taken as a client id (its document known, not fetched)
whose redirect URI may be any loopback port. ``--jwt-key``: the public key (PEM) the
``--client`` signs its ``private_key_jwt`` assertions with, for the client credentials grant.

Test-only routes on the authorization server: ``GET /test/log`` (every request either server
saw: which, method, path, query, its Authorization header, the token request's form),
``GET /test/tokens`` (the live tokens), ``POST /test/revoke`` (forget every token),
``POST /test/token-mode`` with ``ok``, ``hang`` or ``junk`` (how the token endpoint answers
from then on), ``POST /test/redirect`` with a URL (every authenticated MCP request is then
answered with a 307 there), ``POST /test/step-up`` with a scope (listing or calling tools then
needs it as well: a token without it is answered 403 ``insufficient_scope``, as the MCP
specification's scope challenge has it), ``POST /test/grant`` with scopes (the most a token
is then given, whatever was asked).
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import anyio
import jwt
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

LOG: list[dict[str, Any]] = []
MODE = {"token": "ok", "redirect": "", "step_up": "", "grant": ""}
SCOPES = ["mcp", "mcp:write"]  # what a client may ask for; the resource needs "mcp"


class LoopbackClient(OAuthClientInformationFull):
    """A client known by its metadata document's URL, whose redirect URI may be on any
    loopback port (RFC 8252, section 7.3)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host != "127.0.0.1":
            raise InvalidRedirectUriError(f"not a loopback redirect URI: {redirect_uri}")
        return redirect_uri


class Provider:
    """An authorization server that approves at once and keeps everything in memory."""

    def __init__(self, lifetime: int, cimd: str | None = None) -> None:
        self.lifetime = lifetime
        self.cimd = cimd
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.secrets: dict[str, str] = {}  # a pre-registered client's secret
        self.jwt_key: str | None = None  # the public key of its private_key_jwt assertions
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if self.cimd is not None and client_id == self.cimd:
            return LoopbackClient(
                client_id=client_id,
                redirect_uris=["http://127.0.0.1/callback"],  # type: ignore[list-item]
                token_endpoint_auth_method="none",
                grant_types=["authorization_code", "refresh_token"],
                scope=" ".join(SCOPES),
            )
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info.model_copy(
            update={"scope": " ".join(SCOPES)}
        )

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

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, *, refresh: bool = True
    ) -> OAuthToken:
        access, renewal = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        if MODE["grant"]:
            scopes = [s for s in scopes if s in MODE["grant"].split()]
        expires = int(time.time()) + self.lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        if refresh:
            self.refresh[renewal] = RefreshToken(
                token=renewal, client_id=client_id, scopes=scopes, resource=resource
            )
        return OAuthToken(
            access_token=access,
            expires_in=self.lifetime,
            refresh_token=renewal if refresh else None,
            scope=" ".join(scopes),
        )

    def client_credentials(self, form: dict[str, str], basic: str | None, issuer: str) -> Any:
        """The client credentials grant (RFC 6749, section 4.4) for the pre-registered client:
        authenticated by its secret (Basic or in the form) or by a ``private_key_jwt``
        assertion (RFC 7523) for this issuer. A token and no refresh token, or an error."""
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if basic:
            client_id, _, secret = base64.b64decode(basic).decode().partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        if "client_assertion" in form and self.jwt_key is not None:
            try:
                claims = jwt.decode(
                    form["client_assertion"],
                    self.jwt_key,
                    algorithms=["ES256", "RS256"],
                    audience=[issuer, issuer + "/"],
                )
            except jwt.PyJWTError as exc:
                return {"error": "invalid_client", "error_description": str(exc)}
            client_id = claims.get("sub") if claims.get("iss") == claims.get("sub") else None
        elif client_id is None or secret != self.secrets.get(client_id):
            said = f"wrong client credentials: {client_id}:{secret}"  # echoed, as some servers do
            return {"error": "invalid_client", "error_description": said}
        if client_id not in self.clients:
            return {"error": "invalid_client", "error_description": "unknown client"}
        scopes = form["scope"].split() if form.get("scope") else ["mcp"]
        token = self._issue(client_id, scopes, form.get("resource"), refresh=False)
        return token.model_dump(mode="json", exclude_none=True)


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


def logged(app: Any, which: str, provider: Provider, issuer: str) -> Any:
    """``app`` with every request written to ``LOG``; on the authorization server, the token
    endpoint hangs or answers junk when told to, and answers the client credentials grant
    itself; on the resource server, every authenticated request is answered with a 307 when
    told to, and a tool call without the step-up scope with a 403."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        auth = headers.get("authorization")
        query = scope.get("query_string", b"").decode()
        body, receive = await _body(receive)
        entry = {"server": which, "method": scope["method"], "path": scope["path"]}
        entry.update(query=query, auth=auth)
        if which == "as" and scope["path"] == "/token":
            entry["form"] = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        LOG.append(entry)
        if which == "as" and scope["path"] == "/token" and MODE["token"] != "ok":
            if MODE["token"] == "hang":
                await anyio.sleep_forever()
            await Response("<html>surprise</html>", 200, media_type="application/json")(
                scope, receive, send
            )
            return
        if which == "as" and entry.get("form", {}).get("grant_type") == "client_credentials":
            basic = auth[6:] if auth and auth.startswith("Basic ") else None
            answer = provider.client_credentials(entry["form"], basic, issuer)
            await JSONResponse(answer, 400 if "error" in answer else 200)(scope, receive, send)
            return
        if which == "rs" and MODE["redirect"] and auth and scope["path"] == "/mcp":
            moved = Response(status_code=307, headers={"location": MODE["redirect"]})
            await moved(scope, receive, send)
            return
        if which == "rs" and auth and _needs_step_up(body, auth, provider):
            challenge = (
                f'Bearer error="insufficient_scope", scope="mcp {MODE["step_up"]}", '
                f'resource_metadata="http://{headers["host"]}/.well-known/oauth-protected-resource/mcp"'
            )
            refused = JSONResponse(
                {"error": "insufficient_scope"}, 403, headers={"www-authenticate": challenge}
            )
            await refused(scope, receive, send)
            return
        await app(scope, receive, send)

    return wrapped


async def _body(receive: Any) -> tuple[bytes, Any]:
    """The request's whole body, and a ``receive`` that gives it again."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), receive
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body, given = b"".join(chunks), False

    async def again() -> Any:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, again


def _needs_step_up(body: bytes, auth: str, provider: Provider) -> bool:
    """A tool listing or call whose token lacks the step-up scope (when one is set)."""
    if not MODE["step_up"] or not (b'"tools/call"' in body or b'"tools/list"' in body):
        return False
    try:
        json.loads(body)
    except ValueError:
        return False
    token = provider.access.get(auth.removeprefix("Bearer "))
    return token is not None and MODE["step_up"] not in token.scopes


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

    async def step_up(request: Request) -> Response:
        MODE["step_up"] = (await request.body()).decode()
        return PlainTextResponse(MODE["step_up"])

    async def grant(request: Request) -> Response:
        MODE["grant"] = (await request.body()).decode()
        return PlainTextResponse(MODE["grant"])

    return [
        Route("/test/log", log),
        Route("/test/tokens", tokens),
        Route("/test/revoke", revoke, methods=["POST"]),
        Route("/test/token-mode", token_mode, methods=["POST"]),
        Route("/test/redirect", redirect, methods=["POST"]),
        Route("/test/step-up", step_up, methods=["POST"]),
        Route("/test/grant", grant, methods=["POST"]),
    ]


def preregister(provider: Provider, spec: str) -> None:
    """The client of ``--client ID:PORT[:SECRET[:METHOD]]``."""
    client_id, port, secret, method = [*spec.split(":"), "", ""][:4]
    if secret:
        provider.secrets[client_id] = secret
    provider.clients[client_id] = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret or None,
        redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # type: ignore[list-item]
        token_endpoint_auth_method=(method or "client_secret_basic") if secret else "none",
        grant_types=["authorization_code", "refresh_token", "client_credentials"],
        scope=" ".join(SCOPES),
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rs_port", type=int)
    parser.add_argument("as_port", type=int)
    parser.add_argument("--lifetime", type=int, default=3600)
    parser.add_argument("--advertise")
    parser.add_argument("--client")
    parser.add_argument("--auth-methods")
    parser.add_argument("--cimd")
    parser.add_argument("--jwt-key")
    args = parser.parse_args()
    rs_url, as_url = f"http://127.0.0.1:{args.rs_port}", f"http://127.0.0.1:{args.as_port}"
    provider = Provider(args.lifetime, args.cimd)
    if args.client:
        preregister(provider, args.client)
    if args.jwt_key:
        provider.jwt_key = Path(args.jwt_key).read_text()  # noqa: ASYNC240 - at start-up
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

    issuer = AuthSettings(issuer_url=as_url, resource_server_url=None).issuer_url
    registration = ClientRegistrationOptions(
        enabled=not args.client, valid_scopes=["mcp"], default_scopes=["mcp"]
    )
    revocation = RevocationOptions(enabled=True)
    metadata = build_metadata(issuer, None, registration, revocation)
    if args.client:
        metadata.grant_types_supported = [*metadata.grant_types_supported, "client_credentials"]
    if args.auth_methods:
        metadata.token_endpoint_auth_methods_supported = args.auth_methods.split(",")
    if args.cimd:
        metadata.client_id_metadata_document_supported = True

    async def described(request: Request) -> Response:
        return JSONResponse(metadata.model_dump(mode="json", exclude_none=True))

    auth_routes = create_auth_routes(provider, issuer, None, registration, revocation)
    as_app = Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", described),
            *auth_routes,
            *control_routes(provider),
        ]
    )
    rs_app = server.streamable_http_app()
    servers = [
        uvicorn.Server(
            uvicorn.Config(
                logged(rs_app, "rs", provider, as_url), port=args.rs_port, log_level="warning"
            )
        ),
        uvicorn.Server(
            uvicorn.Config(
                logged(as_app, "as", provider, as_url), port=args.as_port, log_level="warning"
            )
        ),
    ]
    async with anyio.create_task_group() as group:
        for each in servers:
            group.start_soon(each.serve)


if __name__ == "__main__":
    anyio.run(main)
