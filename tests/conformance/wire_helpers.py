"""What the Prompty wire and process vector tests share: a parsed turn's end, and a vector's
stream events played through a tether decoder or a whole tether transport (over
``httpx.MockTransport``, where a ``transportError`` event breaks the connection)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from tether import IterationEnd, Message, StreamEvent, TextDelta
from tether.transports.codecs.protocol import StreamDecoder
from tether.transports.http import HttpTransport
from tether.transports.sse import SSEEvent


def iteration_end(events: Sequence[StreamEvent]) -> IterationEnd:
    """The turn's last event, which must be its ``IterationEnd``."""
    end = events[-1]
    assert isinstance(end, IterationEnd), f"the turn ends with {end!r}"
    return end


def texts(events: Sequence[StreamEvent]) -> list[str]:
    """The text deltas, in order."""
    return [e.delta for e in events if isinstance(e, TextDelta)]


def feed(decoder: StreamDecoder, items: Sequence[dict[str, Any]]) -> list[StreamEvent]:
    """Each ``provider`` item as one SSE event into ``decoder``, up to a ``transportError``."""
    events: list[StreamEvent] = []
    for item in items:
        if item["kind"] != "provider":
            break
        events.extend(decoder.feed(SSEEvent("message", json.dumps(item["value"]))))
    return events


class _Stream(httpx.AsyncByteStream):
    """The ``provider`` items as SSE bytes; a ``transportError`` item breaks the connection."""

    def __init__(self, items: Sequence[dict[str, Any]]) -> None:
        self.items = items

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for item in self.items:
            if item["kind"] == "transportError":
                raise httpx.ReadError(item["message"])
            yield b"data: " + json.dumps(item["value"]).encode() + b"\n\n"


@dataclass
class Played:
    """What a transport yielded for a vector's stream, and the error that ended it (if any)."""

    events: list[StreamEvent] = field(default_factory=list)
    error: Exception | None = None


async def play(transport_cls: type[HttpTransport], items: Sequence[dict[str, Any]]) -> Played:
    """Stream one turn from ``transport_cls`` whose server sends ``items``."""

    def reply(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=_Stream(items))

    client = httpx.AsyncClient(transport=httpx.MockTransport(reply))
    transport = transport_cls("gpt-4o", api_key="k", client=client)
    played = Played()
    try:
        async for event in transport.stream([Message("user", "Hi")], [], ""):
            played.events.append(event)
    except Exception as exc:
        played.error = exc
    finally:
        await client.aclose()
    return played
