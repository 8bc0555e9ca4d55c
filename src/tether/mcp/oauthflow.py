"""The SDK's OAuth client (``OAuthClientProvider``: protected-resource and authorization-server
discovery, dynamic registration, PKCE, refresh) fitted to tether: its tokens and registration
kept by a ``TokenStore``, a token's expiry kept across processes (so a stored token past it is
refreshed, not sent), the authorization server checked against the one configured, and its
failures turned into ``McpError`` with every secret left out. Without a person at hand (a
connection) the browser step is never started: a server that wants a new login says so.

Imports the SDK: load this module only when a connection or a login needs it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import extract_field_from_www_auth, issuers_match, union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import ValidationError

from .oauthclient import Client, client_credentials_request, fit_secret_method
from .redact import scrub
from .server import McpError
from .tokenfile import TokenStore

__all__ = ["LoginSteps", "OAuthProvider", "Storage", "login_needed", "more_access_needed"]


class _Ours(logging.Filter):
    """Leaves out the SDK's "OAuth flow error" record (with its traceback) for a flow tether
    itself ends with an ``McpError`` (a login needed, an authorization server refused): the
    caller gets that error, said once and with the secrets blanked (an authorization server's
    answer, which the SDK's record quotes, may repeat one), and a reconnection would log it at
    every attempt."""

    def filter(self, record: logging.LogRecord) -> bool:
        failure = record.exc_info[1] if record.exc_info else None
        return not isinstance(failure, McpError | OAuthFlowError | ValidationError)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_Ours())

_EARLY = 10.0  # seconds before its expiry a stored token counts as expired (clocks, transit)
_LOGINS = 3  # browser steps one login may take: the first, then step-ups (a server asking more)

OnRedirect = Callable[[str], Awaitable[None]]
OnCallback = Callable[[], Awaitable[AuthorizationCodeResult]]


class LoginSteps:
    """The browser step of a login: ``redirect(url)`` shows the authorization URL to the person,
    ``callback()`` waits for the redirect back to ``redirect_uri``."""

    __slots__ = ("callback", "redirect", "redirect_uri")

    def __init__(self, redirect_uri: str, redirect: OnRedirect, callback: OnCallback) -> None:
        self.redirect_uri = redirect_uri
        self.redirect = redirect
        self.callback = callback


def login_needed(label: str) -> str:
    """What a connection says when the server wants a new login."""
    return (
        "a new login is needed: no token is kept for this server, or the one kept was refused "
        f"or could not be refreshed (expired or revoked). Log in again: tether mcp login "
        f"{label} (or await OAuth(...).login(url) in Python)"
    )


def more_access_needed(label: str, scope: str | None) -> str:
    """What a connection says when the server wants a scope the login did not give."""
    return (
        f"the server asks for more access (scope {scope!r}) than the login gave. Log in again: "
        f"tether mcp login {label} (or await OAuth(...).login(url)); that login asks for it"
    )


class Storage:
    """The SDK's ``TokenStorage`` over a ``TokenStore``: tokens with their absolute expiry
    (``expires_at``), the registration, the server they are for, and what discovery found
    (``discovered``: the metadata, so that a refresh goes to the authorization server's token
    endpoint and never elsewhere). ``fresh`` ignores the
    tokens kept (a login makes new ones); ``redirect_uri``, when given, must be among a kept
    registration's, else it is registered anew; ``configured`` is the client given by id."""

    def __init__(
        self,
        store: TokenStore,
        resource: str,
        *,
        fresh: bool = False,
        redirect_uri: str | None = None,
        configured: OAuthClientInformationFull | None = None,
    ) -> None:
        self._store = store
        self._resource = resource
        self._fresh = fresh
        self._redirect_uri = redirect_uri
        self._configured = configured
        self._record: dict[str, Any] | None = None
        self._saved = False
        self.discovered: Callable[[], dict[str, Any]] = dict

    async def _read(self) -> dict[str, Any]:
        if self._record is None:
            self._record = dict(await self._store.load() or {})
        return self._record

    async def get_tokens(self) -> OAuthToken | None:
        raw = (await self._read()).get("tokens")
        if self._fresh or not isinstance(raw, dict):
            return None
        fields = {k: v for k, v in raw.items() if k != "expires_at"}
        expires_at = raw.get("expires_at")
        if isinstance(expires_at, int | float):
            fields["expires_in"] = max(0, int(expires_at - time.time()))
        try:
            return OAuthToken.model_validate(fields)
        except ValidationError:
            return None  # a damaged record: as if there were none, so a login mends it

    @property
    def logged_in(self) -> bool:
        """New tokens were kept since this storage was made."""
        return self._saved

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._fresh = False
        self._saved = True
        raw = tokens.model_dump(mode="json", exclude_none=True)
        expires_in = raw.pop("expires_in", None)
        if isinstance(expires_in, int):
            raw["expires_at"] = time.time() + expires_in
        record = await self._read()
        record.update(server=self._resource, tokens=raw, **self.discovered())
        await self._store.save(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await self._read()).get("client")
        kept = None
        if isinstance(raw, dict):
            try:
                kept = OAuthClientInformationFull.model_validate(raw)
            except ValidationError:
                kept = None
        if kept is not None and self._usable(kept):
            return kept
        return self._configured

    def _usable(self, kept: OAuthClientInformationFull) -> bool:
        if self._configured is not None and kept.client_id != self._configured.client_id:
            return False
        uris = [str(u) for u in kept.redirect_uris or ()]
        return self._redirect_uri is None or self._redirect_uri in uris

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self._read()
        record.update(
            server=self._resource, client=client_info.model_dump(mode="json"), **self.discovered()
        )
        await self._store.save(record)

    async def metadata(self) -> tuple[ProtectedResourceMetadata | None, OAuthMetadata | None]:
        """What discovery found when the tokens kept were made (None for what is missing)."""
        record = await self._read()
        return (
            _model(ProtectedResourceMetadata, record.get("resource_metadata")),
            _model(OAuthMetadata, record.get("authorization_server_metadata")),
        )

    async def wanted_scope(self) -> str | None:
        """The scope a server asked for beyond the login's (a step-up), for the next login."""
        wanted = (await self._read()).get("wanted_scope")
        return wanted if isinstance(wanted, str) else None

    async def want_scope(self, scope: str | None) -> None:
        record = await self._read()
        record.update(server=self._resource, wanted_scope=scope)
        await self._store.save(record)

    def secrets(self) -> list[str]:
        """The kept secrets (tokens, client secret), for blanking from error messages."""
        record = self._record or {}
        tokens, client = record.get("tokens"), record.get("client")
        found = [
            *(tokens.get(k) for k in ("access_token", "refresh_token") if isinstance(tokens, dict)),
            client.get("client_secret") if isinstance(client, dict) else None,
            None if self._configured is None else self._configured.client_secret,
        ]
        return [s for s in found if isinstance(s, str)]


class OAuthProvider(OAuthClientProvider):
    """The SDK's provider with tether's rules: ``expected`` (an authorization server's URL)
    is the only one it may use, and every failure is an ``McpError`` naming ``label``."""

    def __init__(
        self,
        url: str,
        label: str,
        storage: Storage,
        client: Client,
        expected: str | None,
        steps: LoginSteps | None,
    ) -> None:
        super().__init__(
            url,
            client.metadata(None if steps is None else steps.redirect_uri),
            storage,
            redirect_handler=None if steps is None else steps.redirect,
            callback_handler=None if steps is None else steps.callback,
            client_metadata_url=client.metadata_url,
        )
        self.label = label
        self.storage = storage
        self._client = client
        self._expected = expected
        self._person = steps is not None
        self._stepping_up = False  # the server's last answer asked for more scope
        self._logins = 0  # browser steps taken
        self.failure: McpError | None = None  # why the last flow failed, while it stands
        storage.discovered = self._discovered

    async def _perform_authorization(self) -> httpx2.Request:
        """The token request: the client's own grant, else the browser step where a person is
        at hand (asking for the scope a step-up wanted too); else an ``McpError`` saying to
        log in again, and for which scope."""
        self._fit_secret_method()
        if self._client.acts_for_itself:
            url, form, headers = await client_credentials_request(
                self.context, self._client.signer()
            )
            return httpx2.Request("POST", url, data=form, headers=headers)
        wanted = await self.storage.wanted_scope()
        if not self._person:
            scope = self.context.client_metadata.scope
            if self._stepping_up:
                await self.storage.want_scope(union_scopes(wanted, scope))
                raise McpError(more_access_needed(self.label, scope))
            raise McpError(login_needed(self.label))
        scope = union_scopes(self.context.client_metadata.scope, wanted)
        if self._logins >= _LOGINS:
            raise McpError(self._insatiable())
        self._logins += 1
        self.context.client_metadata.scope = scope
        return await super()._perform_authorization()

    async def _refresh_token(self) -> httpx2.Request:
        self._fit_secret_method()
        return await super()._refresh_token()

    def _fit_secret_method(self) -> None:
        if self.context.client_info is not None:
            self.context.client_info = fit_secret_method(
                self.context.client_info, self.context.oauth_metadata
            )

    def _discovered(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.context.protected_resource_metadata is not None:
            prm = self.context.protected_resource_metadata
            found["resource_metadata"] = prm.model_dump(mode="json", exclude_none=True)
        if self.context.oauth_metadata is not None:
            asm = self.context.oauth_metadata
            found["authorization_server_metadata"] = asm.model_dump(mode="json", exclude_none=True)
        return found

    async def _initialize(self) -> None:
        """The SDK's, with what it does not keep: the kept token's expiry (a token loaded past
        it is refreshed first) and the metadata it was made with (so the refresh goes to the
        authorization server's token endpoint; without it, no refresh is tried before the
        server's own answer leads to discovery)."""
        await super()._initialize()
        prm, asm = await self.storage.metadata()
        if asm is not None and (self._expected is None or _same(str(asm.issuer), self._expected)):
            self.context.protected_resource_metadata = prm
            self.context.oauth_metadata = asm
            self.context.auth_server_url = str(asm.issuer)
        tokens = self.context.current_tokens
        if tokens is None:
            return
        if self.context.oauth_metadata is None and tokens.refresh_token is not None:
            self.context.current_tokens = tokens.model_copy(update={"refresh_token": None})
        if tokens.expires_in is not None:
            self.context.token_expiry_time = time.time() + tokens.expires_in - _EARLY

    def _select_authorization_server(self, advertised: list[str]) -> str:
        if self._expected is None:
            return super()._select_authorization_server(advertised)
        for each in advertised:
            if _same(each, self._expected):
                return each
        raise McpError(
            f"its metadata names the authorization server {', '.join(advertised)}, not "
            f"{self._expected} as configured (OAuth(authorization_server=...)); nothing was "
            "sent there"
        )

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, its failures as ``McpError`` without secrets. Where a person is at
        hand (a login), a server still asking for more scope after the new token gets the next
        browser step, up to ``_LOGINS`` in all; then the login fails, saying so."""
        while True:
            flow = super().async_auth_flow(request)
            self._stepping_up = False
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if outgoing is request:  # the server's answer, not discovery's
                        self._stepping_up = response.status_code == 403 and (
                            extract_field_from_www_auth(response, "error") == "insufficient_scope"
                        )
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                self.failure = None
            except McpError as exc:
                self.failure = exc
                raise
            except (OAuthFlowError, ValidationError) as exc:
                said = scrub(str(exc), self.storage.secrets())
                self.failure = McpError(f"OAuth failed: {said}")
                raise self.failure from None
            finally:
                await flow.aclose()
            if not (self._person and self._stepping_up):
                return
            if self._logins >= _LOGINS:
                self.failure = McpError(self._insatiable())
                return

    def _insatiable(self) -> str:
        return (
            f"the server still asks for more access (scope {self.context.client_metadata.scope!r})"
            f" after {_LOGINS} logins in a row; stopped. The authorization server does not "
            "grant it: ask its administrator for that scope"
        )


def _same(issuer: str, expected: str) -> bool:
    """Whether ``issuer`` names the authorization server ``expected`` (a trailing slash aside)."""
    return issuers_match(issuer.rstrip("/"), expected.rstrip("/"))


def _model(kind: Any, raw: Any) -> Any:
    """``raw`` read as ``kind`` (a pydantic model); None when it is missing or damaged."""
    if not isinstance(raw, dict):
        return None
    try:
        return kind.model_validate(raw)
    except ValidationError:
        return None
