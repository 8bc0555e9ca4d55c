"""``Cassette``: record a run's HTTP exchanges once, replay them with no network."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from ...errors import CassetteError
from . import wire
from .matching import closest, describe, difference, normalised
from .redaction import Redactor, environment_secrets
from .tape import load, save

__all__ = ["Cassette", "Mode", "Timing"]

Mode = Literal["once", "new", "all", "none"]
Timing = Literal["collapsed", "kept"]
_RECORD = "pytest --record=all (or Cassette(path, mode='all'))"
_active: list[Cassette] = []  # at most one: the pool transports are patched process-wide


class Cassette:
    """Every HTTP exchange of the code inside ``async with Cassette(path):`` (or ``with``),
    recorded to ``path`` or replayed from it.

    ``mode``: ``"once"`` records when ``path`` is missing and else replays only; ``"new"``
    replays what is recorded and records the requests that are not; ``"all"`` records everything
    again; ``"none"`` replays only and never records (CI). A request that matches no recorded
    one, a recorded one never asked for, or a damaged file is a ``CassetteError``.
    ``secrets`` are blanked before anything is written, as are credential headers, query keys,
    token fields and the values of the environment's ``*KEY*``/``*TOKEN*``/``*SECRET*``
    variables. ``timing="kept"`` replays each chunk after its recorded pause; ``"collapsed"``
    (the default) at once.
    """

    def __init__(
        self,
        path: str | Path,
        mode: Mode = "once",
        *,
        secrets: list[str] | tuple[str, ...] = (),
        timing: Timing = "collapsed",
    ) -> None:
        if mode not in get_args(Mode):
            raise ValueError(f"Cassette mode must be one of {get_args(Mode)}, got {mode!r}")
        if timing not in get_args(Timing):
            raise ValueError(f"Cassette timing must be one of {get_args(Timing)}, got {timing!r}")
        self.path = Path(path)
        self.mode: Mode = mode
        self.timing: Timing = timing
        self.secrets = list(secrets)
        self.played = 0  # exchanges replayed
        self.recorded = 0  # exchanges recorded
        self._old: list[dict[str, Any]] = []
        self._keys: list[dict[str, Any]] = []
        self._used: list[bool] = []
        self._new: list[dict[str, Any]] = []
        self._records = False
        self._failure: CassetteError | None = None
        self._lock = threading.Lock()

    @property
    def recording(self) -> bool:
        """Whether requests that match nothing recorded go to the network (and are recorded)."""
        return self._records

    def __enter__(self) -> Cassette:
        if _active:
            raise RuntimeError(
                f"cassette {_active[0].path} is active: one cassette at a time (it records "
                "every HTTP client of the process)"
            )
        self._start()
        wire.install(self._exchange)
        _active.append(self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        wire.uninstall()
        _active.clear()
        if self._failure is not None and error is not self._failure:
            raise self._failure
        if error is None:
            self._finish()

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.__exit__(kind, error, traceback)

    def _start(self) -> None:
        exists = self.path.exists()
        replaying = self.mode == "none" or (self.mode in ("once", "new") and exists)
        self._records = self.mode != "none" and not (self.mode == "once" and exists)
        self._old = load(self.path) if replaying else []
        self._keys = [normalised(e["request"]) for e in self._old]
        self._used = [False] * len(self._old)
        self._new = []

    def _redactor(self) -> Redactor:
        redactor = Redactor()
        redactor.learn([*self.secrets, *environment_secrets()])
        return redactor

    async def _exchange(
        self, library: wire.Library, send: wire.Send, pool: Any, request: Any
    ) -> Any:
        """One request: replayed when it matches a recorded one, else recorded or refused."""
        raw = await library.request_record(request)
        shown = _redacted_request(self._redactor(), raw)
        with self._lock:
            found = self._match(shown)
        if found is not None:
            return await self._replay(library, found)
        if not self._records:
            raise self._refuse(shown)
        return await self._record(library, send, pool, request, raw)

    def _match(self, request: dict[str, Any]) -> dict[str, Any] | None:
        key = normalised(request)
        for index, used in enumerate(self._used):
            if not used and self._keys[index] == key:
                self._used[index] = True
                return self._old[index]
        return None

    async def _replay(self, library: wire.Library, exchange: dict[str, Any]) -> Any:
        self.played += 1
        kept = self.timing == "kept"
        response = exchange.get("response")
        if kept:
            await asyncio.sleep(float((response or exchange["failure"]).get("after", 0)))
        if response is None:
            raise library.failure(exchange["failure"])
        return library.replayed(response, kept)

    async def _record(
        self, library: wire.Library, send: wire.Send, pool: Any, request: Any, raw: dict[str, Any]
    ) -> Any:
        entry: dict[str, Any] = {"request": raw}
        self._new.append(entry)
        request.headers["accept-encoding"] = "identity"  # bodies kept as the text they are
        started = time.monotonic()
        try:
            response = await send(pool, request)
        except Exception as exc:
            after = round(time.monotonic() - started, 4)
            entry["failure"] = {"type": type(exc).__name__, "message": str(exc), "after": after}
            self.recorded += 1
            raise
        entry["response"] = record = {
            "status": response.status_code,
            "headers": wire.response_headers(response),
            "after": round(time.monotonic() - started, 4),
            "chunks": [],
            "end": "open",
        }
        response.stream = library.recording(response.stream, record)
        self.recorded += 1
        return response

    def _refuse(self, request: dict[str, Any]) -> CassetteError:
        """The error for a request nothing recorded matches (kept, to raise again on exit)."""
        left = [e["request"] for e, used in zip(self._old, self._used, strict=True) if not used]
        near = closest(request, left)
        if near is None:
            detail = (
                f"all {len(self._old)} recorded exchanges were already replayed: the run sent "
                "one request more than was recorded"
            )
        else:
            detail = "the closest recorded request differs:\n" + difference(near, request)
        error = CassetteError(
            f"no recorded exchange matches {describe(request)} (mode {self.mode!r} replays "
            f"only); {detail}\nIf the change is meant, record again: {_RECORD}",
            path=str(self.path),
        )
        if self._failure is None:
            self._failure = error
        return error

    def _finish(self) -> None:
        """On a clean exit: write what was recorded; refuse recorded exchanges never asked for."""
        if self._records:
            finished = [e for e in self._new if "response" in e or "failure" in e]
            redacted = _redacted_exchanges(self._redactor(), finished)
            kept = self._old if self.mode == "new" else []
            if redacted or self.mode == "all" or not self.path.exists():
                save(self.path, [*kept, *redacted])
            return
        unasked = [
            describe(e["request"])
            for e, used in zip(self._old, self._used, strict=True)
            if not used and not _listening(e)
        ]
        if unasked:
            raise CassetteError(
                f"{len(unasked)} recorded exchange(s) were never requested, first "
                f"{unasked[0]}: the run sent fewer requests than were recorded; if that is "
                f"meant, record again: {_RECORD}",
                path=str(self.path),
            )


def _listening(exchange: dict[str, Any]) -> bool:
    """Whether ``exchange`` is a GET event stream the client left open (MCP's listening stream):
    a replay that ends before asking for it again has lost nothing."""
    response = exchange.get("response") or {}
    return exchange["request"]["method"] == "GET" and response.get("end") == "open"


def _redacted_request(redactor: Redactor, raw: dict[str, Any]) -> dict[str, Any]:
    """A request record with every credential blanked (headers first: their values are then
    blanked wherever else they appear)."""
    shown = dict(raw)
    shown["headers"] = redactor.headers(raw["headers"])
    shown["url"] = redactor.url(raw["url"])
    if "json" in raw:
        shown["json"] = redactor.json(raw["json"])
    if "text" in raw:
        form = "x-www-form-urlencoded" in raw["headers"].get("content-type", "")
        shown["text"] = redactor.form(raw["text"]) if form else redactor.text(raw["text"])
    return shown


def _redacted_response(redactor: Redactor, response: dict[str, Any]) -> dict[str, Any]:
    shown = dict(response)
    shown["headers"] = redactor.headers(response["headers"])
    shown["chunks"] = _redacted_chunks(redactor, response["chunks"])
    if "error" in response:
        shown["error"] = {
            **response["error"],
            "message": redactor.text(response["error"]["message"]),
        }
    return shown


def _redacted_chunks(redactor: Redactor, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run of text chunks redacted as one text (a secret may be split between chunks);
    binary chunks as they are."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for chunk in [*chunks, None]:
        if chunk is not None and "text" in chunk:
            run.append(chunk)
            continue
        texts = redactor.pieces([c["text"] for c in run])
        out += [{**c, "text": text} for c, text in zip(run, texts, strict=True)]
        run = []
        if chunk is not None:
            out.append(chunk)
    return out


def _redacted_exchanges(
    redactor: Redactor, exchanges: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The exchanges as written: redacted twice over, so a credential learnt from a later
    exchange (a token answer, a header) is blanked in the earlier ones too."""
    shown: list[dict[str, Any]] = []
    for _ in range(2):
        shown = []
        for exchange in copy.deepcopy(exchanges):
            out: dict[str, Any] = {"request": _redacted_request(redactor, exchange["request"])}
            if "response" in exchange:
                out["response"] = _redacted_response(redactor, exchange["response"])
            if "failure" in exchange:
                failure = exchange["failure"]
                out["failure"] = {**failure, "message": redactor.text(failure["message"])}
            shown.append(out)
    return shown
