"""Where a credential a ``.prompty`` file read from the environment may go: only to an endpoint of
equal trust. That is the provider's own host, an endpoint that came from the environment too, or
one the application's code set (a connection it built or changed, a registered client); never an
endpoint the file wrote itself (``Written``), which a file from elsewhere could point anywhere.

A file's own literal key goes where the file says: it is the file's to give away.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from ..env import EnvValue, Written
from ..errors import CredentialEndpointError

__all__ = ["check_credential", "origin"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def check_credential(
    credential: object,
    *,
    field: str,
    endpoint: object,
    url: str,
    own: Callable[[str], bool] = lambda _url: False,
    own_name: str = "",
    path: str | None = None,
) -> None:
    """Refuse sending ``credential`` (at ``field``) to ``url``, the address ``endpoint`` (as the
    connection gives it; ``None`` when none is given) leads to, if the credential came from the
    environment and the endpoint is one the file wrote (or none) and ``own`` (the provider's own
    hosts, ``own_name`` in words) does not hold for ``url``: ``CredentialEndpointError``, naming
    the field and the host, never the value."""
    if not isinstance(credential, EnvValue):
        return
    if endpoint is not None and not isinstance(endpoint, Written):
        return  # from the environment, or set by the application's code
    if own(url):
        return
    scheme, host, _ = origin(url)
    name = credential.reference[len("${env:") : -1]
    mine = f"its provider's own host ({own_name}), " if own_name else ""
    raise CredentialEndpointError(
        f"{credential.reference} ({field}) is a credential from the environment and is not sent "
        f"to {scheme}://{host}, an endpoint written in the file: it goes only to {mine}an "
        "endpoint read from the environment (${env:NAME}) or one the application's code sets",
        variable=name,
        host=host,
        field=field,
        path=path,
    )


def origin(url: str) -> tuple[str, str, int | None]:
    """``url``'s scheme, host (lower case) and port (the scheme's own when not written)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)
