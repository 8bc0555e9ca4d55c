"""MCP Tasks, client side: a tool call the server answers with a task is followed to its end.

Both forms: the 2025-11-25 specification's (a tool listed with ``execution.taskSupport:
"required"`` is called with ``task`` in its params; ``tasks/get`` until the task ends, then
``tasks/result``) and the 2026-07-28 extension ``io.modelcontextprotocol/tasks`` (declared on
every request; the server may answer any call with ``resultType: "task"``; ``tasks/get`` until
the result comes inline, ``tasks/update`` with what the task asks for). Each new status is a
progress report of the call (a ``ToolProgress`` event); polls honour the server's interval
within bounds, so a server cannot make the client spin; the call's timeout bounds the whole
wait, and a wait that ends early (timed out, cancelled, failed) cancels the task on the server.

The handle of the task (``TaskHandle``) goes to the call's record as soon as it is known
(``tether.tools.remote``): a durable run keeps it, and a later attempt of the call waits for the
same task instead of calling the tool again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..tools.progress import ProgressSink
from ..tools.remote import CallRecord, call_record
from .taskwire import CARRIED, ask, extension

__all__ = ["TaskHandle", "call_tool", "tasks_extension"]

log = logging.getLogger("tether.mcp")

POLL_MIN = 0.05  # seconds between polls at least, whatever the server suggests
POLL_MAX = 5.0  # and at most
_POLL_DEFAULT = 0.5  # when the server suggests nothing
_CANCEL_WAIT = 5.0  # seconds a tasks/cancel may take before it is given up
_TTL_MS = 3_600_000  # how long a 2025-11-25 task is asked to be kept
_MESSAGE = 500  # characters of a status message reported
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_KIND = "mcp-task"


@dataclass(frozen=True, slots=True)
class TaskHandle:
    """A task on its server: its id, the tool whose call made it, and its form (``core``: the
    2025-11-25 specification's, ``extension``: ``io.modelcontextprotocol/tasks``)."""

    task_id: str
    tool: str
    form: str

    def as_dict(self) -> dict[str, str]:
        """The handle as JSON, as a call's record keeps it."""
        return {"kind": _KIND, "task": self.task_id, "tool": self.tool, "form": self.form}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> TaskHandle | None:
        """The handle ``as_dict`` made, or None if ``value`` is none."""
        task, tool, form = value.get("task"), value.get("tool"), value.get("form")
        if value.get("kind") != _KIND or not isinstance(task, str) or not isinstance(tool, str):
            return None
        return cls(task, tool, form) if form in ("core", "extension") else None


@dataclass(slots=True)
class _Watch:
    """One call following its task: where its reports go, what keeps its handle, what it saw."""

    tool: str
    progress: ProgressSink | None
    record: CallRecord | None
    last: tuple[object, object] | None = None
    reports: int = 0
    answered: set[str] = field(default_factory=set)

    def report(self, state: Mapping[str, Any]) -> None:
        """A progress report for a status (or status message) not reported yet."""
        status, message = state.get("status"), state.get("statusMessage")
        if (status, message) == self.last or self.progress is None:
            return
        self.last = (status, message)
        self.reports += 1
        text = str(status)[:40]
        if isinstance(message, str) and message:
            text = f"{text}: {message[:_MESSAGE]}"
        self.progress(float(self.reports), None, text)


_WATCH: ContextVar[_Watch | None] = ContextVar("tether_mcp_task_watch", default=None)


def tasks_extension() -> Any:
    """The SDK client extension ``io.modelcontextprotocol/tasks``, following each task a
    ``tools/call`` is answered with (give it to ``mcp.Client(extensions=[...])``)."""
    return extension(_resolve)


async def call_tool(
    client: Any,
    name: str,
    arguments: dict[str, Any],
    progress: ProgressSink | None,
    forward: Any,
    *,
    required: bool = False,
    send: Callable[[], Awaitable[Any]] | None = None,
) -> Any:
    """``tools/call`` of ``name`` through ``client`` (the SDK's ``Client``) to its
    ``CallToolResult``, following the task it is answered with; ``forward`` is the SDK's
    progress callback, ``required``: the tool is listed as callable only as a task, ``send``:
    how the call is sent when not as the client's plain ``call_tool``. A call whose record
    holds a task of this tool follows that task and calls nothing."""
    watch = _Watch(name, progress, call_record())
    recalled = _recalled(watch)
    if recalled is not None:
        return await _follow(client.session, recalled, None, watch)
    if required and not _modern(client):
        return await _call_as_task(client, name, arguments, forward, watch)
    token = _WATCH.set(watch)
    try:
        if send is not None:
            return await send()
        return await client.call_tool(name, arguments, progress_callback=forward)
    finally:
        _WATCH.reset(token)


async def follow_claimed(client: Any, name: str, created: Any) -> Any:
    """A task answer the SDK's session gave back unresolved (a call sent on the session
    itself, as a pausable one is), followed to its ``CallToolResult`` as the extension's claim
    would have been."""
    return await _resolve(created, _Claimed(client.session, name))


@dataclass(frozen=True, slots=True)
class _Claimed:
    """What ``_resolve`` reads of the SDK's claim context."""

    session: Any
    tool_name: str


def _modern(client: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415

    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def _recalled(watch: _Watch) -> TaskHandle | None:
    """The task an earlier attempt of this call started, if its record holds one."""
    if watch.record is None:
        return None
    recorded = watch.record.recorded()
    handle = None if recorded is None else TaskHandle.from_dict(recorded)
    if handle is not None and handle.tool != watch.tool:
        log.warning("a call of %r holds a task of %r: not followed", watch.tool, handle.tool)
        return None
    return handle


async def _call_as_task(
    client: Any, name: str, arguments: dict[str, Any], forward: Any, watch: _Watch
) -> Any:
    """The 2025-11-25 form: ``tools/call`` with ``task``, then the task followed."""
    from mcp_types import (  # noqa: PLC0415
        CallToolRequest,
        CallToolRequestParams,
        CallToolResult,
        TaskMetadata,
    )

    params = CallToolRequestParams(name=name, arguments=arguments, task=TaskMetadata(ttl=_TTL_MS))
    request = CallToolRequest(params=params)
    result = await client.session.send_request(request, CallToolResult, progress_callback=forward)
    task = (result.meta or {}).get(CARRIED)
    if not isinstance(task, Mapping):
        return result  # answered at once, without a task
    return await _begin(client.session, _handle(task, name, "core"), task, watch)


async def _resolve(created: Any, context: Any) -> Any:
    """The 2026-07-28 form: a task answered a ``tools/call``; followed to its result."""
    watch = _WATCH.get()
    if watch is None or watch.tool != context.tool_name:
        watch = _Watch(context.tool_name, None, None)
    state = created.model_dump(by_alias=True, mode="json")
    handle = _handle(state, context.tool_name, "extension")
    return await _begin(context.session, handle, state, watch)


def _handle(task: Mapping[str, Any], tool: str, form: str) -> TaskHandle:
    task_id = task.get("taskId")
    if not isinstance(task_id, str) or not task_id or len(task_id) > 1_000:
        raise ValueError(f"the server answered {tool!r} with a task without a usable taskId")
    return TaskHandle(task_id, tool, form)


async def _begin(session: Any, handle: TaskHandle, state: Mapping[str, Any], watch: _Watch) -> Any:
    """Write the task's handle down, then follow it."""
    if watch.record is not None:
        watch.record.record(handle.as_dict())
    return await _follow(session, handle, state, watch)


async def _follow(
    session: Any, handle: TaskHandle, state: Mapping[str, Any] | None, watch: _Watch
) -> Any:
    """Poll the task until it ends; its ``CallToolResult``. Cancelled on the server if the wait
    ends any other way."""
    ended = False
    try:
        while True:
            if state is not None:
                watch.report(state)
                status = state.get("status")
                ended = status in _TERMINAL
                if ended or status == "input_required":
                    outcome = await _settle(session, handle, state, watch)
                    if outcome is not None:
                        return outcome
            await asyncio.sleep(_interval(state))
            state = await _poll(session, handle)
    except BaseException:
        if not ended:
            await _cancel(session, handle)
        raise


async def _poll(session: Any, handle: TaskHandle) -> Mapping[str, Any]:
    """``tasks/get``: the task's state now (an error names the task)."""
    from mcp import MCPError  # noqa: PLC0415

    try:
        state = await ask(session, "tasks/get", handle.task_id)
    except MCPError as exc:
        said = f"tasks/get of task {handle.task_id}: {exc.message}"
        raise MCPError(exc.code, said, exc.error.data) from None
    if not isinstance(state, Mapping) or not isinstance(state.get("status"), str):
        raise ValueError(f"tasks/get of task {handle.task_id!r} answered without a status")
    return state


def _interval(state: Mapping[str, Any] | None) -> float:
    """Seconds until the next poll: the server's suggestion, within ``POLL_MIN``..``POLL_MAX``."""
    suggested = None if state is None else state.get("pollIntervalMs", state.get("pollInterval"))
    if not isinstance(suggested, int | float) or isinstance(suggested, bool):
        return _POLL_DEFAULT
    return min(POLL_MAX, max(POLL_MIN, suggested / 1000))


async def _settle(
    session: Any, handle: TaskHandle, state: Mapping[str, Any], watch: _Watch
) -> Any | None:
    """The call's result for a task that ended or asks for input (None: keep polling)."""
    status = state["status"]
    if status == "cancelled":
        return _error(f"the server cancelled task {handle.task_id} of {handle.tool!r}", state)
    if handle.form == "core":
        return await _core_result(session, handle, state)
    if status == "completed":
        return _result(state.get("result"), handle)
    if status == "failed":
        error = state.get("error")
        said = error.get("message") if isinstance(error, Mapping) else None
        return _error(f"task {handle.task_id} of {handle.tool!r} failed: {said}", state)
    return await _give_input(session, handle, state, watch)


async def _core_result(session: Any, handle: TaskHandle, state: Mapping[str, Any]) -> Any:
    """``tasks/result`` (it waits for the task's end; meanwhile the server's requests, e.g.
    an elicitation, reach the client's callbacks as any others do)."""
    from mcp import MCPError  # noqa: PLC0415

    try:
        payload = await ask(session, "tasks/result", handle.task_id)
    except MCPError as exc:
        if state["status"] == "input_required":
            raise
        return _error(f"task {handle.task_id} of {handle.tool!r} failed: {exc.message}", state)
    return _result(payload, handle)


def _result(payload: Any, handle: TaskHandle) -> Any:
    from mcp_types import CallToolResult  # noqa: PLC0415

    if not isinstance(payload, Mapping):
        raise ValueError(f"task {handle.task_id} of {handle.tool!r} completed without a result")
    return CallToolResult.model_validate(
        {k: v for k, v in payload.items() if k != "resultType"}, by_name=False
    )


def _error(text: str, state: Mapping[str, Any]) -> Any:
    from mcp_types import CallToolResult, TextContent  # noqa: PLC0415

    message = state.get("statusMessage")
    if isinstance(message, str) and message:
        text = f"{text} ({message[:_MESSAGE]})"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def _give_input(
    session: Any, handle: TaskHandle, state: Mapping[str, Any], watch: _Watch
) -> Any | None:
    """Answer the requests of an ``input_required`` task not answered yet (the client's
    callbacks answer them, as they would a server's request), with ``tasks/update``."""
    from mcp.client.session import ClientRequestContext  # noqa: PLC0415
    from mcp_types import ErrorData, InputRequest  # noqa: PLC0415
    from pydantic import TypeAdapter  # noqa: PLC0415

    requests = state.get("inputRequests")
    if not isinstance(requests, Mapping):
        return None
    answers: dict[str, Any] = {}
    for key, raw in list(requests.items())[:16]:
        if key in watch.answered:
            continue
        request = TypeAdapter(InputRequest).validate_python(raw, by_name=False)
        context = ClientRequestContext(session=session, request_id=str(key))
        answer = await session.dispatch_input_request(context, request)
        if isinstance(answer, ErrorData):
            await _cancel(session, handle)
            return _error(
                f"task {handle.task_id} of {handle.tool!r} asked for input this client cannot "
                f"give: {answer.message}",
                state,
            )
        answers[str(key)] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    if answers:
        await ask(session, "tasks/update", handle.task_id, input_responses=answers)
        watch.answered.update(answers)
    return None


async def _cancel(session: Any, handle: TaskHandle) -> None:
    """Ask the server to cancel the task, waiting at most ``_CANCEL_WAIT`` (best effort: the
    server may be gone, or may have forgotten the task)."""
    request = asyncio.ensure_future(ask(session, "tasks/cancel", handle.task_id))
    await asyncio.wait({request}, timeout=_CANCEL_WAIT)
    if not request.done():
        request.cancel()
    request.add_done_callback(_quiet)


def _quiet(request: asyncio.Future[Any]) -> None:
    if not request.cancelled() and request.exception() is not None:
        log.debug("tasks/cancel failed: %s", request.exception())
