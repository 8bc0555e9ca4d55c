"""The activities of a durable agent: one model call, one tool call, and (with a store) one
append and one page of a stored session. They run on workers, with the agent's real transport,
tools, guards and middleware; a model call's text and a tool call's progress show in their
heartbeats while they run (``live``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import aclosing
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..agent import Agent
from ..context import context_start
from ..errors import ConflictError, PayloadTooLargeError
from ..events import StreamEvent, ToolProgress
from ..loop import (
    ModelRequest,
    as_generator,
    call_transport,
    dispatcher_for,
    model_chain,
    run_in_tasks,
    tools_by_name,
)
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..stores.base import SessionRows
from ..stores.jsonforms import (
    block_from_dict,
    block_to_dict,
    exception_to_dict,
    message_from_dict,
    message_to_dict,
)
from ..tools.remote import recording
from ..tools.results import interrupted_result
from ..tools.selector import read_tools
from ..tracing.ambient import with_ambient
from .call import CURRENT, DurableCall
from .held import HeldWork, held_in
from .listing import listing_of
from .live import LiveProgress, LiveReply
from .options import DurableOptions
from .payloads import (
    Appended,
    LoadPage,
    ModelCall,
    ModelTurn,
    StoredPage,
    ToolCallInput,
    coalesce,
    spec_from_dict,
)
from .pulse import Pulse

__all__ = ["AgentActivities", "activity_names"]

HEARTBEAT_EVERY = 1.0  # seconds between heartbeats of a running call, at most
T = TypeVar("T")


def activity_names(name: str) -> dict[str, str]:
    """The activity names of the durable agent ``name``."""
    return {kind: f"{name}.{kind}" for kind in ("model", "tool", "tools", "append", "load")}


class AgentActivities:
    """The activities of one durable agent; ``definitions()`` gives them to a worker."""

    def __init__(
        self,
        agent: Agent,
        name: str,
        store: SessionRows | None = None,
        *,
        options: DurableOptions | None = None,
        offloads: bool | None = None,
    ) -> None:
        self.agent = agent
        self.names = activity_names(name)
        self.store = store
        self.options = options if options is not None else DurableOptions()
        # whether the worker's codec takes large payloads (a store's rows, or blobs)
        self.offloads = store is not None if offloads is None else offloads

    def definitions(self) -> list[Callable[..., Any]]:
        """The activity functions, named for this agent (the store's only when it has one)."""
        kinds = ("model", "tool", "tools", "append", "load")[: 5 if self.store is not None else 3]
        return [_defined(self.names[kind], getattr(self, kind)) for kind in kinds]

    async def model(self, call: ModelCall) -> ModelTurn:
        """One model call through the agent's model middleware, its text and reasoning so far
        in each heartbeat (sent as events come); a failure the agent's retry policy would not
        retry is final (Temporal does not retry it either)."""
        agent = self.agent
        attempt = activity.info().attempt
        request = ModelRequest(
            [*await self._stored(call), *(message_from_dict(m) for m in call.messages)],
            [spec_from_dict(s) for s in call.tools],
            call.system,
            call.iteration,
            agent.transport,
            attempt,
        )
        chain = model_chain(with_ambient(agent.middleware), call_transport) or call_transport
        events: list[StreamEvent] = []
        live = LiveReply(call.turn, attempt)
        try:
            async with (
                Pulse(live.details) as pulse,
                aclosing(as_generator(chain(request))) as stream,
            ):
                async for event in stream:
                    events.append(event)
                    live.add(event)
                    pulse.news()
        except Exception as exc:
            raise _failure(exc, retryable=agent.retry.retry_on(exc)) from None
        return self._fits(ModelTurn(coalesce(events)), "the model's reply")

    async def _stored(self, call: ModelCall) -> list[Message]:
        """The first ``call.stored`` messages of the workflow's stored session."""
        if not call.stored:
            return []
        if self.store is None:
            raise ApplicationError(
                "a model call refers to stored messages but this worker's agent has no store",
                non_retryable=True,
            )
        history: list[Message] = await (await self.store.open(call.workflow_id)).get_history()
        if len(history) < call.first + call.stored:
            raise ApplicationError(
                f"session {call.workflow_id!r} holds {len(history)} messages; the model call "
                f"needs {call.stored} from {call.first}",
                non_retryable=True,
            )
        return history[call.first : call.first + call.stored]

    async def tool(self, call: ToolCallInput) -> dict[str, Any]:
        """One tool call as the loop makes it (guards, validation, the agent's tool middleware),
        heartbeating while it runs, with the progress it reported so far and the handle of any
        work it started elsewhere (given back to the next attempt: ``held.py``); its idempotency
        key is in ``current_call()``."""
        block = block_from_dict(call.block)
        if not isinstance(block, ToolUseBlock):
            raise ApplicationError("a tool activity needs a tool_use block", non_retryable=True)
        info = activity.info()
        live = LiveProgress(call.key, block.id, info.attempt)
        token = CURRENT.set(DurableCall(call.workflow_id, block.id, call.key, info.attempt))
        held = call.held if call.held is not None else held_in(info.heartbeat_details)
        try:
            async with Pulse(live.details, _heartbeat_every(info.heartbeat_timeout)) as pulse:
                with recording(HeldWork(held, live, pulse)):
                    result = await self._dispatch(block, call.iteration, live, pulse)
        finally:
            CURRENT.reset(token)
        return self._fits(block_to_dict(result), f"the result of tool '{block.name}'")

    def _fits(self, value: T, what: str) -> T:
        """``value`` if Temporal can take it: offloaded by the worker's codec, or under its
        payload limit; else a final ``PayloadTooLargeError`` (a retry would make it again)."""
        if self.offloads:
            return value
        size = activity.payload_converter().to_payload(value).ByteSize()
        if size < self.options.payload_limit:
            return value
        error = PayloadTooLargeError(
            f"{what} is {size} bytes, over Temporal's payload limit of "
            f"{self.options.payload_limit}, and the durable agent has no store or blobs to "
            "offload it to: give TemporalAgent a store or blobs="
        )
        raise _failure(error, retryable=False)

    async def _dispatch(
        self, block: ToolUseBlock, iteration: int, live: LiveProgress, pulse: Pulse
    ) -> ToolResultBlock:
        """``block`` run as ``Agent.dispatch_tools`` runs it, in a task of its own so that its
        progress reports come out while it runs."""
        agent = self.agent
        dispatcher = dispatcher_for(agent, tools_by_name(await read_tools(agent.tools)), iteration)
        results: list[ToolResultBlock | None] = [None]
        async with aclosing(run_in_tasks(dispatcher, [block], results)) as events:
            async for event in events:
                if isinstance(event, ToolProgress):
                    live.add(event)
                    pulse.news()
        return results[0] if results[0] is not None else interrupted_result(block)

    async def tools(self, _: int) -> list[dict[str, Any]]:
        """The agent's tools now (its sources asked again), as the workflow needs them."""
        return [listing_of(t) for t in await read_tools(self.agent.tools)]

    async def append(self, item: Appended) -> int:
        """Store one message at its position. One found stored already at its index succeeds:
        an earlier attempt (or the workflow task a dead worker ran, replayed now, which repeats
        all of its appends) stored it; the last of them hands on the store's position."""
        message, store = message_from_dict(item.message), self._rows()
        await store.open(item.session)  # made if new
        try:
            return int(await store.append_at(item.session, item.position, message))
        except ConflictError:
            now = await store.open(item.session)
            history = await now.get_history()
            at = item.index if item.index >= 0 else len(history) - 1
            if 0 <= at < len(history) and history[at] == message:
                # a later one was stored too: it is replayed next and finds itself in turn
                return int(now.position) if at == len(history) - 1 else item.position
            raise ApplicationError(
                f"session {item.session!r} holds another message at {item.position}: "
                "something else writes to it",
                type="ConflictError",
                non_retryable=True,
            ) from None

    def _rows(self) -> SessionRows:
        """The store: the activities that use it are defined only when there is one."""
        assert self.store is not None
        return self.store

    async def load(self, page: LoadPage) -> StoredPage:
        """A page of a stored session (created when new): from ``page.start``, or from where
        the model's view begins (the last compaction record's kept messages) when it is None,
        up to ``page.limit`` messages and ``page.bytes`` of JSON (one message at least)."""
        context = await self._rows().open(page.session)
        history = await context.get_history()
        start = page.start if page.start is not None else context_start(history) or 0
        chosen: list[dict[str, Any]] = []
        size = 0
        for message in history[start : start + page.limit]:
            data = message_to_dict(message)
            size += len(json.dumps(data))
            if chosen and size > page.bytes:
                break
            chosen.append(data)
        more = start + len(chosen) < len(history)
        return StoredPage(chosen, int(context.position), start, more)


def _defined(name: str, method: Any) -> Callable[..., Any]:
    """``method`` as the activity ``name`` (Temporal marks functions, not bound methods)."""

    async def call(argument: Any) -> Any:
        return await method(argument)

    hints = dict(method.__func__.__annotations__)
    call.__annotations__ = {"argument": hints[next(iter(hints))], "return": hints["return"]}
    call.__name__ = call.__qualname__ = method.__name__
    return activity.defn(name=name)(call)


def _heartbeat_every(timeout: timedelta | None) -> float:
    """Seconds between heartbeats: often enough that a busy worker's late one still comes in
    time (a quarter of the timeout), and at most ``HEARTBEAT_EVERY``."""
    if timeout is None:
        return HEARTBEAT_EVERY
    return min(HEARTBEAT_EVERY, timeout.total_seconds() / 4)


def _failure(exc: Exception, *, retryable: bool) -> ApplicationError:
    """``exc`` as an activity failure Temporal carries to the workflow (type and message)."""
    data = exception_to_dict(exc)
    return ApplicationError(
        data["message"], data, type=str(data["type"]), non_retryable=not retryable
    )
