"""``OAuth``: how tether logs in to an MCP server over HTTP that asks for OAuth 2.1, as the MCP
specification has it (its authorization section): the server's protected-resource metadata
names its authorization server, whose metadata gives the endpoints; the client registers itself
there when it offers registration (else a ``client_id`` is given), the person approves in the
browser once (``login``, or ``tether mcp login URL``: PKCE, the redirect back to a loopback
port), and from then on connections use the kept tokens, refreshing them when they expire.

A connection never starts the browser step: a server that wants a new login, or more access
than the login gave (a scope step-up), is an ``McpError`` saying to log in again. A client of
its own (``grant="client_credentials"``: a service, no person) gets its tokens by itself. The
tokens go to the server they were issued for only, in the ``Authorization`` header, never into
a log, an error message or a trace.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .tokenfile import TokenFile, TokenStore, default_token_file

if TYPE_CHECKING:
    from .oauthflow import LoginSteps

__all__ = ["OAuth"]

Browser = Callable[[str], Any]
GRANTS = ("authorization_code", "client_credentials")


@dataclass(frozen=True, slots=True)
class OAuth:
    """OAuth 2.1 for ``McpStreamable(url, auth=OAuth(...))``.

    ``client_id`` (and ``client_secret``, for a confidential client): a client registered with
    the authorization server beforehand; without one, tether registers itself (dynamic client
    registration) as ``client_name``. Tokens are kept in ``token_file`` (0600; default: one
    file per server under ``$TETHER_HOME/mcp-oauth``, else the user's config directory), or by
    ``store``, any object with ``async load() -> dict | None`` and ``async save(dict)``.
    ``authorization_server``: the only authorization server the server may send tether to
    (its URL); without it, the one the server's metadata names, as the specification says.
    ``client_metadata_url``: tether's client ID metadata document (an https URL), its client
    id where the authorization server takes such documents (else it registers as before).
    ``grant="client_credentials"``: a client acting for itself, no person and no login: its
    ``client_id`` with ``client_secret``, or with ``private_key`` (PEM; it signs a
    ``private_key_jwt`` assertion, RFC 7523).
    """

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    token_file: str | os.PathLike[str] | None = None
    store: TokenStore | None = field(default=None, repr=False)
    authorization_server: str | None = None
    client_name: str = "tether"
    client_metadata_url: str | None = None
    grant: str = "authorization_code"
    private_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.token_file is not None and self.store is not None:
            raise ValueError("OAuth takes token_file= or store=, not both")
        if self.store is not None and not isinstance(self.store, TokenStore):
            raise ValueError("OAuth(store=...) needs async load() and async save(record) methods")
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("OAuth(client_secret=...) needs the client_id it belongs to")
        if self.authorization_server is not None:
            parts = urlsplit(self.authorization_server)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    "OAuth(authorization_server=...) needs the server's http(s) URL, got "
                    f"{self.authorization_server!r}"
                )
        if self.client_metadata_url is not None:
            parts = urlsplit(self.client_metadata_url)
            if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
                raise ValueError(
                    "OAuth(client_metadata_url=...) needs the document's https URL with a path, "
                    f"got {self.client_metadata_url!r}"
                )
        self._check_grant()

    def _check_grant(self) -> None:
        if self.grant not in GRANTS:
            raise ValueError(f"OAuth(grant=...) is one of {', '.join(GRANTS)}, got {self.grant!r}")
        if self.grant != "client_credentials":
            if self.private_key is not None:
                raise ValueError(
                    "OAuth(private_key=...) signs a client's own assertion: it goes with "
                    "grant='client_credentials'"
                )
            return
        if self.client_id is None:
            raise ValueError("OAuth(grant='client_credentials') needs client_id= (and its secret)")
        if (self.client_secret is None) == (self.private_key is None):
            raise ValueError(
                "OAuth(grant='client_credentials') takes client_secret= or private_key= (PEM), "
                "one of them, not both"
            )
        if self.private_key is not None:
            from .oauthclient import signing_algorithm  # noqa: PLC0415

            signing_algorithm(self.private_key)  # a key that cannot sign is said now

    def keeper(self, url: str) -> TokenStore:
        """Where the tokens for the server at ``url`` are kept."""
        if self.store is not None:
            return self.store
        return TokenFile(self.token_file or default_token_file(url))

    def token_path(self, url: str) -> Path | None:
        """The token file for the server at ``url``; None when ``store`` keeps them."""
        keeper = self.keeper(url)
        return keeper.path if isinstance(keeper, TokenFile) else None

    def provider(self, url: str, label: str, steps: LoginSteps | None = None) -> Any:
        """The SDK's httpx2 ``Auth`` for a connection to ``url`` (``steps``: the browser step,
        for a login; without it a login needed is an ``McpError``)."""
        from .oauthclient import Client  # noqa: PLC0415
        from .oauthflow import OAuthProvider, Storage  # noqa: PLC0415

        client = Client(
            self.client_name,
            self.client_id,
            self.client_secret,
            self.client_metadata_url,
            self.grant,
            self.private_key,
        )
        redirect_uri = None if steps is None else steps.redirect_uri
        storage = Storage(
            self.keeper(url),
            label,
            fresh=steps is not None,
            redirect_uri=redirect_uri,
            configured=client.configured(redirect_uri),
        )
        return OAuthProvider(url, label, storage, client, self.authorization_server, steps)

    async def login(
        self,
        url: str,
        *,
        browser: Browser | None = None,
        port: int = 0,
        within: float = 300.0,
    ) -> int:
        """Log in to the MCP server at ``url`` now: the authorization URL goes to ``browser``
        (default: printed on stderr and opened in the web browser), the person approves, the
        authorization server redirects back to 127.0.0.1 (``port``; 0 takes the port of the
        kept registration, else a free one), and the new tokens are kept. Gives the number of
        tools the server offers then; ``McpError`` when the login fails or takes longer than
        ``within`` seconds."""
        from .login import log_in  # noqa: PLC0415

        return await log_in(self, url, browser or _show, port, within)


def _show(authorization_url: str) -> None:
    print(f"Open this address to log in:\n{authorization_url}", file=sys.stderr, flush=True)
    import webbrowser  # noqa: PLC0415 - only when a person logs in

    try:
        webbrowser.open(authorization_url)
    except Exception:  # no browser here: the printed address is enough
        return
