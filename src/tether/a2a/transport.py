"""``A2ATransport``: a remote agent in a model's place, so an ``A2AAgent`` runs wherever an agent
runs (a handoff target, ``run``). Each reply sends the user's new text as an A2A message and
streams the agent's text back as ``TextDelta``; where the conversation with the agent stands
(its context, and a task waiting for input) is kept in the history itself, as a reasoning block
of provider ``"a2a"`` that no model's wire format sends, so a stored session goes on in the same
remote conversation in any process."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence

from ..errors import BadRequestError
from ..events import IterationEnd, ReasoningDelta, StreamEvent, TextDelta
from ..messages import Message, ReasoningBlock, TextBlock
from ..types import StopReason, ToolSpec
from .exchange import Answer, Thread, exchange
from .remote import Remote

__all__ = ["PROVIDER", "A2ATransport"]

PROVIDER = "a2a"  # the provider of the reasoning block that records the remote conversation
_RECORD_ID = "a2a.thread"


class A2ATransport:
    """The remote agent behind ``remote`` as a ``CompletionTransport`` (tools and the system
    prompt are the remote agent's own: those sent here are not used)."""

    provider = PROVIDER

    def __init__(self, remote: Remote) -> None:
        self.remote = remote

    @property
    def model(self) -> str:
        """What traces name the model: the agent's address."""
        return self.remote.url

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        """One reply of the remote agent (see the module)."""
        text = _new_text(messages, self.remote.url)
        thread = _thread_of(messages, self.remote.url)
        pieces: asyncio.Queue[str | None] = asyncio.Queue()
        work = asyncio.ensure_future(exchange(self.remote, text, thread, _Into(pieces)))
        work.add_done_callback(lambda _: pieces.put_nowait(None))
        streamed = False
        try:
            while (piece := await pieces.get()) is not None:
                streamed = True
                yield TextDelta(0, piece)
            reply = work.result()  # the exchange's error, if it failed
        finally:
            if not work.done():  # the run was cancelled or closed the stream: so is the task
                work.cancel()
                with contextlib.suppress(BaseException):
                    await work
        if not streamed and reply.text:
            yield TextDelta(0, reply.text)
        yield _record(reply, self.remote.url)
        yield IterationEnd(0, StopReason.END_TURN)


class _Into:
    """An exchange's streamed text into a queue (its status notes are not an answer's text)."""

    __slots__ = ("queue",)

    def __init__(self, queue: asyncio.Queue[str | None]) -> None:
        self.queue = queue

    def text(self, piece: str) -> None:
        self.queue.put_nowait(piece)

    def status(self, state: str, note: str) -> None:
        pass


def _record(reply: Answer, url: str) -> ReasoningDelta:
    data = {"agent": url, "context_id": reply.thread.context_id, "task_id": reply.thread.task_id}
    return ReasoningDelta(1, "", json.dumps(data), id=_RECORD_ID, provider=PROVIDER)


def _ours(message: Message, url: str) -> Thread | None:
    """The conversation ``message`` records, when it is a reply of the agent at ``url``."""
    if message.role != "assistant":
        return None
    for block in message.content:
        if type(block) is ReasoningBlock and block.provider == PROVIDER and block.signature:
            try:
                data = json.loads(block.signature)
            except ValueError:
                return None
            if isinstance(data, dict) and data.get("agent") == url:
                return Thread(
                    _text_or_none(data.get("context_id")), _text_or_none(data.get("task_id"))
                )
    return None


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _thread_of(messages: Sequence[Message], url: str) -> Thread:
    """Where the conversation with the agent at ``url`` stands: as its last reply left it."""
    for message in reversed(messages):
        found = _ours(message, url)
        if found is not None:
            return found
    return Thread()


def _new_text(messages: Sequence[Message], url: str) -> str:
    """What to send: the user's text since the agent's last reply, or, when it has not
    answered yet, the user's last message."""
    said: list[str] = []
    for message in reversed(messages):
        if _ours(message, url) is not None:
            break
        if message.role == "user":
            text = "\n".join(b.text for b in message.content if type(b) is TextBlock and b.text)
            if text:
                said.append(text)
    else:
        said = said[:1]
    if not said:
        raise BadRequestError("the conversation holds no user text to send to the remote agent")
    return "\n\n".join(reversed(said))
