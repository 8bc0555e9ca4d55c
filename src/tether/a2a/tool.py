"""A remote agent as a tool (``A2AAgent.as_tool``): one string parameter, ``input``, sent as a
user message; the agent's answer is the result, its streamed text and status notes the call's
``ToolProgress``. Calls in one run go on in one remote conversation (its context is kept in the
run's notes); a remote task that asks for input pauses the run on the question (``NeedsInput``),
and the resume's answer goes to that task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import TetherError
from ..tools.agent_input import input_schema, read_input
from ..tools.needs_input import Answered, NeedsInput, resumed
from ..tools.notes import run_notes
from ..tools.progress import ProgressSink, progress_sink
from ..tools.tool import Tool
from ..types import Elicitation
from .exchange import Answer, Thread, cancel_task, exchange
from .remote import Remote

__all__ = ["remote_tool"]

_TEXT_CHUNK = 200  # characters of streamed text per progress report
_QUESTION = "question"  # the key of the one question a paused call asks
_ANSWER = "answer"  # its one field


def remote_tool(remote: Remote, name: str, description: str) -> Tool:
    """The tool that asks ``remote`` (see the module)."""
    return Tool(
        name,
        _Ask(remote, name),
        description,
        schema=input_schema(
            f"The message for {remote.label()}: the whole request, as it sees nothing else of "
            "this chat."
        ),
        validator=_read_text,
        reports_progress=True,
    )


def _read_text(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    return read_input(arguments, blank=False)  # a remote task needs something to work on


class _Ask:
    """The handler: each call one exchange with the remote agent."""

    __slots__ = ("key", "name", "remote")

    def __init__(self, remote: Remote, name: str) -> None:
        self.remote, self.name = remote, name
        self.key = f"tether.a2a {remote.url}"  # its conversation, in a run's notes

    async def __call__(self, input: str) -> str:
        notes = run_notes()
        thread = notes.get(self.key, Thread()) if notes is not None else Thread()
        text = input
        answered = resumed()
        if answered is not None:  # the user answered the question this call paused on
            text, thread = await self._answer(answered)
        progress = _Progress(progress_sink())
        try:
            reply = await exchange(self.remote, text, thread, progress)
        finally:
            progress.flush()
        if notes is not None:
            notes[self.key] = Thread(reply.thread.context_id)
        if reply.asks:
            raise self._pause(reply, input)
        return reply.text

    async def _answer(self, answered: Answered) -> tuple[str, Thread]:
        state = answered.state
        thread = Thread(state.get("context_id"), state.get("task_id"))
        content = answered.answers.get(_QUESTION)
        if content is None:
            if thread.task_id:
                await cancel_task(self.remote, thread.task_id)
            raise TetherError(
                f"the user declined to answer {self.remote.label()}; its task was cancelled"
            )
        return str(content.get(_ANSWER, "")), thread

    def _pause(self, reply: Answer, input: str) -> NeedsInput:
        who = self.remote.label()
        question = reply.text or f"{who} needs more input"
        ask = Elicitation(
            message=question,
            schema={
                "type": "object",
                "properties": {_ANSWER: {"type": "string", "description": f"The answer for {who}"}},
                "required": [_ANSWER],
            },
            server=self.remote.url,
            tool=self.name,
            arguments={"input": input},
            key=_QUESTION,
        )
        state = {"context_id": reply.thread.context_id, "task_id": reply.thread.task_id}
        reason = (
            f"{who} asks: {question} (its task waits for the answer; call {self.name} again "
            "with the answer in the message)"
        )
        return NeedsInput([ask], state, reason)


class _Progress:
    """The exchange as the call's progress reports: status notes as they come, streamed text in
    pieces of ``_TEXT_CHUNK`` characters (never a report per token)."""

    __slots__ = ("count", "pending", "sink")

    def __init__(self, sink: ProgressSink | None) -> None:
        self.sink = sink
        self.count = 0
        self.pending: list[str] = []

    def text(self, piece: str) -> None:
        self.pending.append(piece)
        if sum(map(len, self.pending)) >= _TEXT_CHUNK:
            self.flush()

    def status(self, state: str, note: str) -> None:
        self.flush()
        self._report(f"{state.replace('_', ' ')}: {note}")

    def flush(self) -> None:
        if self.pending:
            text = "".join(self.pending)
            self.pending.clear()
            self._report(text)

    def _report(self, message: str) -> None:
        if self.sink is not None:
            self.count += 1
            self.sink(self.count, None, message)
