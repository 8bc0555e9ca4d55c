"""Who tether is to an authorization server (``Client``): the metadata it registers with, the
client given beforehand (by id, with its secret or its private key, or by a client ID metadata
document's URL), how it authenticates at the token endpoint (as the server's metadata allows),
and the client credentials grant, for a client acting for itself with no person at hand.

Imports the SDK: load this module only when a connection or a login needs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.client.auth import OAuthFlowError
from mcp.client.auth.extensions.client_credentials import SignedJWTParameters
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata

__all__ = ["Client", "client_credentials_request", "fit_secret_method", "signing_algorithm"]

_UNUSED_REDIRECT = "http://127.0.0.1/callback"  # a registration must name one
_JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")

Signer = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Client:
    """What ``OAuth`` says of the client (see there)."""

    name: str
    client_id: str | None
    client_secret: str | None = field(repr=False)
    metadata_url: str | None
    grant: str
    private_key: str | None = field(repr=False)

    @property
    def acts_for_itself(self) -> bool:
        """The client credentials grant: no person, no browser, no redirect."""
        return self.grant == "client_credentials"

    def metadata(self, redirect_uri: str | None) -> OAuthClientMetadata:
        """What tether registers with (dynamic registration) or asks for."""
        if self.acts_for_itself:
            return OAuthClientMetadata(
                redirect_uris=None,
                client_name=self.name,
                grant_types=["client_credentials"],
                token_endpoint_auth_method=self._own_method(),
            )
        return OAuthClientMetadata(
            redirect_uris=[redirect_uri or _UNUSED_REDIRECT],  # type: ignore[list-item]
            client_name=self.name,
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        )

    def configured(self, redirect_uri: str | None) -> OAuthClientInformationFull | None:
        """The client registered beforehand (by id), when there is one."""
        if self.client_id is None:
            return None
        if self.acts_for_itself:
            return OAuthClientInformationFull(
                client_id=self.client_id,
                client_secret=self.client_secret,
                redirect_uris=None,
                token_endpoint_auth_method=self._own_method(),
                grant_types=["client_credentials"],
            )
        return OAuthClientInformationFull(
            client_id=self.client_id,
            client_secret=self.client_secret,
            redirect_uris=[redirect_uri or _UNUSED_REDIRECT],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic" if self.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
        )

    def _own_method(self) -> Any:
        return "private_key_jwt" if self.private_key is not None else "client_secret_basic"

    def signer(self) -> Signer | None:
        """What signs the ``private_key_jwt`` assertion for an audience (None without a key)."""
        if self.private_key is None or self.client_id is None:
            return None
        return SignedJWTParameters(
            issuer=self.client_id,
            subject=self.client_id,
            signing_key=self.private_key,
            signing_algorithm=signing_algorithm(self.private_key),
        ).create_assertion_provider()


def signing_algorithm(pem: str) -> str:
    """The JWS algorithm for the private key ``pem``: ES256/384/512 for an EC key of that
    size, RS256 for RSA, EdDSA for Ed25519; ``ValueError`` (without the key) otherwise."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa  # noqa: PLC0415
    from cryptography.hazmat.primitives.serialization import load_pem_private_key  # noqa: PLC0415

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.key_size in (256, 384, 521):
        return {256: "ES256", 384: "ES384", 521: "ES512"}[key.curve.key_size]
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise ValueError(
        "OAuth(private_key=...) needs an unencrypted PEM private key (EC P-256/384/521, RSA or "
        "Ed25519), such as `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`"
    )


def fit_secret_method(
    client: OAuthClientInformationFull, metadata: OAuthMetadata | None
) -> OAuthClientInformationFull:
    """A client given with a secret authenticates as the authorization server allows:
    ``client_secret_basic`` unless its metadata lists only ``client_secret_post`` (RFC 8414:
    a server that lists nothing takes Basic)."""
    if client.client_secret is None or client.token_endpoint_auth_method not in _SECRET_METHODS:
        return client
    methods = None if metadata is None else metadata.token_endpoint_auth_methods_supported
    method = "client_secret_basic"
    if methods is not None and "client_secret_basic" not in methods:
        method = "client_secret_post" if "client_secret_post" in methods else method
    if method == client.token_endpoint_auth_method:
        return client
    return client.model_copy(update={"token_endpoint_auth_method": method})


TokenRequest = tuple[str, dict[str, str], dict[str, str]]  # url, form, headers


async def client_credentials_request(context: OAuthContext, signer: Signer | None) -> TokenRequest:
    """The token request of the client credentials grant (RFC 6749, section 4.4), for this
    server (``resource``, RFC 8707) and the scope chosen, the client authenticated by its
    secret or by an assertion ``signer`` makes for the authorization server (RFC 7523):
    where it goes, its form and its headers."""
    data: dict[str, str] = {"grant_type": "client_credentials"}
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if signer is not None:
        if context.oauth_metadata is None:  # the assertion is for the issuer, and none is known
            raise OAuthFlowError("no authorization server metadata to address the assertion to")
        audience = str(context.oauth_metadata.issuer)
        data.update(client_assertion=await signer(audience), client_assertion_type=_JWT_BEARER)
    else:
        data, headers = context.prepare_token_auth(data, headers)
    if context.should_include_resource_param(context.protocol_version):
        data["resource"] = context.get_resource_url()
    if context.client_metadata.scope:
        data["scope"] = context.client_metadata.scope
    if context.oauth_metadata is not None and context.oauth_metadata.token_endpoint:
        url = str(context.oauth_metadata.token_endpoint)
    else:
        url = context.get_authorization_base_url(context.server_url) + "/token"
    return url, data, headers
