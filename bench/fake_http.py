"""The HTTP side of the benchmarks' fake model servers: HTTP/1.1 with keep-alive on 127.0.0.1,
each POST body read as JSON and answered with the JSON ``answer`` makes of it (and its size)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

Answer = Callable[[Any, int], dict[str, Any]]


async def _serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: Answer
) -> None:
    """One connection, one request at a time."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            raw = await reader.readexactly(length)
            reply = json.dumps(answer(json.loads(raw), len(raw))).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(reply)}\r\n\r\n".encode()
                + reply
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def serve_json(answer: Answer, port: int) -> None:
    """Serve until killed; prints ``PORT <n>`` once listening (``port`` 0: any free one)."""
    server = await asyncio.start_server(
        lambda r, w: _serve(r, w, answer), "127.0.0.1", port, limit=1 << 26
    )
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()
