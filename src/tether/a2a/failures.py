"""What went wrong talking to a remote agent, as tether's typed errors (``TransportError`` and
its kinds): the SDK's and httpx's exceptions turned into a sentence the model and the caller
read, naming the agent and never a credential."""

from __future__ import annotations

import httpx

from ..errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    ServerError,
    StreamInterruptedError,
    TransportError,
)

__all__ = ["failure"]

_CUT = 300  # characters of a server's own words kept in a message


def failure(exc: BaseException, what: str) -> TransportError:
    """``exc`` (raised while reaching ``what``, e.g. "the remote agent 'echo'") as a typed error."""
    status = _status_of(exc)
    if status is not None:
        return _by_status(status, what)
    if isinstance(exc, TransportError):
        return exc
    cause = _root(exc)
    if isinstance(cause, httpx.TimeoutException) or _named(exc, "A2AClientTimeoutError"):
        return ConnectionFailedError(f"{what} did not answer in time")
    if isinstance(cause, httpx.StreamError):
        return StreamInterruptedError(f"{what}: {cause}")
    if isinstance(cause, httpx.TransportError):
        return ConnectionFailedError(f"{what} could not be reached: {_said(cause)}")
    if type(exc).__module__.startswith("a2a.") and not _named(exc, "A2AClientError"):
        return BadRequestError(f"{what} answered with an error: {_said(exc)}")  # its own words
    return TransportError(f"{what} sent an answer that is not A2A 1.0: {_said(exc)}")


def _status_of(exc: BaseException) -> int | None:
    cause = _root(exc)
    if isinstance(cause, httpx.HTTPStatusError):
        return cause.response.status_code
    return None


def _root(exc: BaseException) -> BaseException:
    """The first httpx exception among ``exc`` and its causes, else ``exc``."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.HTTPError | httpx.StreamError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc


def _named(exc: BaseException, name: str) -> bool:
    return any(type(e).__name__ == name for e in (exc, exc.__cause__) if e is not None)


def _by_status(status: int, what: str) -> TransportError:
    said = f"{what} answered HTTP {status}"
    if status in (401, 403):
        return AuthenticationError(f"{said}: it refused the credentials", status_code=status)
    if status >= 500:
        return ServerError(said, status_code=status)
    return BadRequestError(said, status_code=status)


def _said(exc: BaseException) -> str:
    text = str(exc).split("\n", 1)[0].strip() or type(exc).__name__
    return text if len(text) <= _CUT else text[:_CUT] + "..."
