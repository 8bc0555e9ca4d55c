"""One AG-UI run as a front end asks for it, worked out before anything runs: the client's
history reconciled with the stored one (a fork where an edit asks), the front end's results for
the calls that wait for it, its tools and readables given to the agent for this run, and its
shared state; then the run's events, with the state's changes streamed as they happen."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agent import Agent
from ..context import ContextStore
from ..events import PendingCall, SessionEndEvent, StreamEvent, ToolDispatch, ToolResult
from ..loop import AgentStream, CancellationToken, Decisions, RunState, pending, run_loop
from ..messages import Message, ToolUseBlock
from ..stores.base import SessionStore, StoredContext
from ..tools.selector import read_tools
from .agui import Event
from .client_input import ClientInput, ClientMessage, context_note
from .frontend import as_tools, clashes, is_frontend, result_answers, unanswered
from .reconcile import fork_point
from .runs import LiveRun, encode
from .shared_state import json_patch, load_state, save_state
from .wire import Refused, RunAsked

__all__ = ["FORKED", "Plan", "StateWatch", "front_events", "plan_run", "start_run"]

log = logging.getLogger("tether.serve")

FORKED = "tether.forked"  # the CUSTOM event of a run on a session forked by an edit


@dataclass(slots=True)
class Plan:
    """What a run does beyond the user's message: ``answers`` for calls that wait for the front
    end (its results, or None for those it left unanswered), the ``quiet`` calls whose events
    the client already has, where the session forks (``fork_at``) and the ``pending`` calls of
    the history the run opens on."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    quiet: frozenset[str] = frozenset()
    fork_at: int | None = None
    pending: tuple[PendingCall, ...] = ()


def plan_run(
    history: Sequence[Message], view: Sequence[Message], asked: RunAsked, given: ClientInput
) -> Plan:
    """The run ``asked`` on a session holding ``history`` (``view``: from where the model's view
    begins), or a ``Refused`` that says what does not fit."""
    waiting = pending(view)
    front = {c.id for c in waiting if is_frontend(c)}
    _check_results(history, given.messages, front)
    new = {call: text for call, text in given.results.items() if call in front}
    prefix = _prefix(given.messages, asked.message is not None, new)
    fork_at = fork_point(history, prefix, given.edit, asked.message is not None)
    if fork_at is not None:
        waiting = pending(history[:fork_at])
        front, new = {c.id for c in waiting if is_frontend(c)}, {}
    answers = result_answers(new)
    if asked.message is not None:
        answers.update(unanswered(c for c in waiting if c.id in front and c.id not in new))
    elif not new and not (asked.approve or asked.deny or asked.answers):
        raise Refused(
            400,
            "the tool results sent answer no call that waits for the front end: send a new "
            "user message, or the results of the calls the last run left to the front end",
        )
    return Plan(answers, frozenset(new), fork_at, waiting)


def _check_results(
    history: Sequence[Message], messages: Sequence[ClientMessage], front: set[str]
) -> None:
    """400 for a tool result that answers no call the session made."""
    made = {b.id for m in history for b in m.content if type(b) is ToolUseBlock}
    for at, message in enumerate(messages):
        call = message.tool_call_id
        if message.role == "tool" and call not in made and call not in front:
            raise Refused(
                400, f"messages[{at}] is a tool result for {call!r}, a call this session never made"
            )


def _prefix(
    messages: Sequence[ClientMessage], has_new: bool, new: Mapping[str, str]
) -> Sequence[ClientMessage]:
    """The client's history before what is new: its last user message (when it sends one) and
    the trailing results for calls that wait for the front end."""
    end = len(messages) - (1 if has_new else 0)
    while end > 0 and messages[end - 1].role == "tool" and messages[end - 1].tool_call_id in new:
        end -= 1
    return messages[:end]


async def fork(store: SessionStore, context: StoredContext, at: int) -> str:
    """Keep the session's whole history as a new session (the old branch, still readable), then
    make the session its first ``at`` messages; the old branch's id."""
    history = await context.get_history()
    branch = await store.copy_of(history)
    await context.clear()
    for message in history[:at]:
        await context.append(message)
    return branch.session_id


async def run_agent(agent: Agent, given: ClientInput, waiting: Sequence[PendingCall]) -> Agent:
    """``agent`` for this run: the front end's tools beside its own (a clash is a 400), tools
    for the calls that wait for the front end, and the readables in its system prompt."""
    names = [c.name for c in waiting if is_frontend(c)]
    if not given.tools and not names and not given.context:
        return agent
    clashes(given.tools, (tool.name for tool in await read_tools(agent.tools)))
    tools = as_tools(given.tools, names)
    system = agent.system
    if given.context:
        system = (
            f"{system}\n\n{context_note(given.context)}" if system else context_note(given.context)
        )
    return dataclasses.replace(agent, tools=[*agent.tools, *tools], system=system)


def start_run(
    agent: Agent,
    context: ContextStore,
    asked: RunAsked,
    plan: Plan,
    token: CancellationToken,
) -> AsyncIterator[StreamEvent]:
    """The run's engine stream: a plain run, or a resume taking the decisions and the front
    end's answers (then the user's message, if any)."""
    if not plan.answers and not (asked.approve or asked.deny or asked.answers):
        return agent.run_stream(asked.message, context, cancel=token)
    answers = {**asked.answers, **plan.answers}
    decisions = Decisions.of(asked.approve, asked.deny, answers)
    state = RunState(context)
    return AgentStream(run_loop(agent, asked.message, state, token, None, None, decisions), state)


class StateWatch:
    """The session's shared state during a run: what was last sent, and where it is kept."""

    __slots__ = ("sent", "session_id", "state", "store")

    def __init__(self, store: SessionStore, session_id: str, state: dict[str, Any]) -> None:
        self.store, self.session_id, self.state = store, session_id, state
        self.sent = copy.deepcopy(state)

    @classmethod
    async def of(
        cls, store: SessionStore, session_id: str, given: dict[str, Any] | None
    ) -> StateWatch:
        """The state the store keeps, or the client's (``given``), which replaces it."""
        if given is not None:
            await save_state(store, session_id, given)
            return cls(store, session_id, copy.deepcopy(given))
        return cls(store, session_id, await load_state(store, session_id))

    async def changed(self) -> list[Event]:
        """STATE_DELTA for what changed since the last one (none when nothing did); the state
        kept. A state a tool made into something JSON cannot hold is left unsent."""
        try:
            now = json.loads(json.dumps(self.state, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            log.warning("the shared state of session %s is not JSON: not sent", self.session_id)
            return []
        delta = json_patch(self.sent, now)
        if not delta:
            return []
        self.sent = now
        await save_state(self.store, self.session_id, now)
        return [{"type": "STATE_DELTA", "delta": delta}]


async def front_events(
    stream: AsyncIterator[StreamEvent],
    live: LiveRun,
    first: Sequence[Event],
    quiet: frozenset[str],
    state: StateWatch,
) -> AsyncIterator[StreamEvent]:
    """``stream``'s events, but those of the ``quiet`` calls (the front end gave their results:
    it has them); ``first`` published before them, and a STATE_DELTA after each call that
    changed the state."""
    for told in first:
        live.publish(encode(told))
    async for event in stream:
        if isinstance(event, ToolDispatch | ToolResult) and event.tool_use_id in quiet:
            continue
        if isinstance(event, SessionEndEvent):
            for delta in await state.changed():
                live.publish(encode(delta))
        yield event
        if isinstance(event, ToolResult):
            for delta in await state.changed():
                live.publish(encode(delta))
