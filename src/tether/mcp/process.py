"""A server process's stdin and stdout as the SDK's message streams: newline-delimited JSON-RPC,
every message bounded (``Lines``: a server's huge line costs linear time and no memory), the end
of the process noticed even while something it started holds its stdout open, and the process
stopped as the MCP spec asks (stdin closed, then SIGTERM, then SIGKILL to its process group)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from .limits import MAX_MESSAGE
from .lines import Lines, Oversize

__all__ = ["process_streams"]

_GRACE = 2.0  # seconds to exit after stdin closes, and again after SIGTERM
_POLL = 0.1  # seconds between looks at whether the process has exited
_AFTER_EXIT = 0.2  # seconds its last output may take to arrive once it exited
_INTERNAL_ERROR = -32603


@asynccontextmanager
async def process_streams(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | Path | None,
    stderr: int,
    limit: int = MAX_MESSAGE,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``argv`` in a session of its own (stderr to the descriptor ``stderr``); yield the
    streams the SDK's client reads messages from and writes them to."""
    import anyio  # noqa: PLC0415 - with the SDK, on first use
    from mcp.client.stdio import get_default_environment  # noqa: PLC0415
    from mcp.shared.message import SessionMessage  # noqa: PLC0415

    process = await anyio.open_process(
        list(argv),
        env=get_default_environment() | dict(env),
        cwd=cwd,
        stderr=stderr,
        start_new_session=True,
    )
    incoming, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, process, incoming, limit)
            tasks.start_soon(_write, process, outgoing, incoming)
            tasks.start_soon(_watch, process)
            try:
                yield read, write
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tasks.cancel_scope.cancel()
    finally:
        for stream in (incoming, read, write, outgoing):
            stream.close()


async def _read(process: Any, incoming: Any, limit: int) -> None:
    """Deliver each message the server writes; once nobody takes them, read on and drop them
    (a server blocked on a full pipe could not exit)."""
    import anyio  # noqa: PLC0415

    lines, delivering = Lines(limit), True
    try:
        async for chunk in process.stdout:
            for line in lines.feed(chunk) if delivering else ():
                item = _message(line, limit)
                if item is None:
                    continue
                try:
                    await incoming.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    delivering = False
                    break
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        incoming.close()  # the session learns that the server is gone


async def _write(process: Any, outgoing: Any, incoming: Any) -> None:
    import anyio  # noqa: PLC0415

    try:
        async for message in outgoing:
            text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            await process.stdin.send(text.encode() + b"\n")
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        incoming.close()  # the server reads no more: to the session it is gone


async def _watch(process: Any) -> None:
    """Once the process exited, end its stdout even if a process it started holds it open."""
    import anyio  # noqa: PLC0415

    while process.returncode is None:  # noqa: ASYNC110 - no event: see _exited
        await anyio.sleep(_POLL)
    await anyio.sleep(_AFTER_EXIT)
    with contextlib.suppress(Exception):
        await process.stdout.aclose()


def _message(line: bytes | Oversize, limit: int) -> Any:
    """One line as a message for the session: a ``SessionMessage``, an ``Exception`` for a
    line that is no JSON-RPC (the session logs it), None for a blank line."""
    from mcp.shared.message import SessionMessage  # noqa: PLC0415
    from mcp_types import ErrorData, JSONRPCError, jsonrpc_message_adapter  # noqa: PLC0415

    if isinstance(line, Oversize):
        said = (
            f"its message of {line.size} bytes was longer than the {limit} bytes a message "
            "may have, and was dropped"
        )
        if line.id is None:
            return ValueError(said)
        error = ErrorData(code=_INTERNAL_ERROR, message=said)
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=line.id, error=error))
    if not line.strip():
        return None
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stop(process: Any) -> None:
    """Close stdin and wait; then SIGTERM, then SIGKILL the process group; then release the
    pipes. Every wait is bounded."""
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for sent in (signal.SIGTERM, signal.SIGKILL):
        if await _exited(process, _GRACE):
            break
        _signal_group(process.pid, sent)
    _signal_group(process.pid, signal.SIGKILL)  # what it started and left in its group
    await _exited(process, _GRACE)
    with contextlib.suppress(Exception):
        await process.stdout.aclose()
    import anyio  # noqa: PLC0415

    with anyio.move_on_after(_GRACE), contextlib.suppress(Exception):
        await process.aclose()


async def _exited(process: Any, limit: float) -> bool:
    """Whether the process has exited within ``limit`` seconds (its returncode, not ``wait()``,
    which also waits for every holder of its pipes)."""
    import anyio  # noqa: PLC0415

    with anyio.move_on_after(limit):
        while process.returncode is None:  # noqa: ASYNC110 - wait() also waits for the pipes
            await anyio.sleep(0.01)
    return process.returncode is not None


def _signal_group(pgid: int, sent: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sent)
