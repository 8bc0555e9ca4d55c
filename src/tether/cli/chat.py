"""``tether chat``: an interactive session over one ``MemoryContextStore``.

Lines are read with ``input()`` (line editing where ``readline`` exists). Ctrl-C during a turn
cancels that turn only: the task running it is cancelled and the engine leaves the history valid,
so the next prompt goes on from it. Ctrl-C at the prompt clears the line; Ctrl-D quits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from rich.console import Console

from ..agent import Agent
from ..context import ContextStore, MemoryContextStore
from ..events import PendingCall, StreamEvent
from ..loop import pending
from ..stores import SQLiteStore
from ..types import ZERO_USAGE, Usage
from .app import (
    Cancelled,
    close_transport,
    interruptible,
    make_renderer,
    report_error,
    run_resume,
    run_turn,
)
from .args import EXIT_OK, CommandError, store_path
from .render import Renderer, TurnOutcome, format_call, summary_line, tokens_text
from .terminal import safe_text
from .trace_notice import show_trace_failures
from .waiting import showing_waits

__all__ = ["HELP", "ChatSession", "command_chat"]

HELP = """\
/reset   forget the conversation (start over)
/tools   list the tools the model may call
/usage   tokens used in this session and by the last turn
/help    this list
/quit    leave (or Ctrl-D); Ctrl-C cancels a running turn"""

PROMPT = "> "

Decide: TypeAlias = Callable[[PendingCall], str | None]
Answer: TypeAlias = Callable[[PendingCall], dict[str, Any]]
"""Asks the person a waiting call's questions: the answers by question key (None: declined)."""
"""The person's word on a call waiting for approval: None to run it, else why not."""


class _Recorder:
    """Passes everything on to a renderer and keeps the last outcome (also of cancelled turns).

    A turn that paused for approval and went on reaches the renderer as one: the outcome that
    ends it carries the usage, iterations and time of its paused parts, so the one summary comes
    after the answer, not before the question."""

    def __init__(self, inner: Renderer) -> None:
        self.inner = inner
        self.last: TurnOutcome | None = None
        self._paused: TurnOutcome | None = None

    def new_turn(self) -> None:
        """A new turn starts: nothing paused before it is carried into its summary."""
        self._paused = None

    def begin(self) -> None:
        self.last = None
        self.inner.begin()

    def event(self, event: StreamEvent) -> None:
        self.inner.event(event)

    def end(self, outcome: TurnOutcome) -> None:
        self.last = outcome
        before, self._paused = self._paused, None
        if before is not None:
            outcome = replace(
                outcome,
                usage=before.usage + outcome.usage,
                iterations=before.iterations + outcome.iterations,
                seconds=before.seconds + outcome.seconds,
            )
        if outcome.pending:
            self._paused = outcome
        self.inner.end(outcome)


@dataclass(slots=True)
class ChatSession:
    """The history, the running totals and the slash commands of one chat."""

    agent: Agent
    renderer: Renderer
    context: ContextStore = field(default_factory=MemoryContextStore)
    turns: int = 0
    usage: Usage = ZERO_USAGE
    last: TurnOutcome | None = None
    decide: Decide | None = None
    answer: Answer | None = None
    _recorder: _Recorder = field(init=False)

    def __post_init__(self) -> None:
        self._recorder = _Recorder(self.renderer)

    async def turn(self, prompt: str) -> TurnOutcome:
        """Run one turn; a cancelled one (Ctrl-C) returns with ``cancelled=True``."""
        self._recorder.new_turn()
        try:
            outcome = await interruptible(
                run_turn(self.agent, prompt, self._recorder, self.context)
            )
        except Cancelled:
            outcome = self._recorder.last or TurnOutcome("", ZERO_USAGE, 0, 0.0, cancelled=True)
        self.turns += 1
        return await self._settle(self._count(outcome))

    async def settle(self) -> TurnOutcome | None:
        """Ask about the calls a stored session left waiting for approval (a chat resumed with
        ``--session``), and go on with the turn they belong to; None when none wait."""
        waiting = pending(await self.context.get_history())
        if not waiting:
            return None
        self._recorder.new_turn()
        paused = TurnOutcome("", ZERO_USAGE, 0, 0.0, pending=waiting)
        return await self._settle(paused)

    async def _settle(self, outcome: TurnOutcome) -> TurnOutcome:
        """While calls wait for approval or for the person's input, ask the person (``decide``,
        ``answer``) and go on."""
        while outcome.pending and self._can_ask(outcome.pending):
            approve: list[str] = []
            deny: dict[str, str] = {}
            answers: dict[str, dict[str, Any]] = {}
            for call in outcome.pending:
                if call.asks:
                    answers[call.id] = self.answer(call)  # type: ignore[misc]
                    continue
                refusal = self.decide(call)  # type: ignore[misc]
                if refusal is None:
                    approve.append(call.id)
                else:
                    deny[call.id] = refusal
            resume = run_resume(self.agent, self.context, approve, deny, self._recorder, answers)
            try:
                outcome = self._count(await interruptible(resume))
            except Cancelled:
                return self._recorder.last or TurnOutcome("", ZERO_USAGE, 0, 0.0, cancelled=True)
        return outcome

    def _can_ask(self, calls: tuple[PendingCall, ...]) -> bool:
        """Whether the person can be asked about every waiting call."""
        asking = any(call.asks for call in calls)
        approving = not all(call.asks for call in calls)
        return not (asking and self.answer is None) and not (approving and self.decide is None)

    def _count(self, outcome: TurnOutcome) -> TurnOutcome:
        self.usage = self.usage + outcome.usage
        self.last = outcome
        return outcome

    async def reset(self) -> None:
        """Forget the conversation (in its store too) and the totals."""
        await self.context.clear()
        self.turns, self.usage, self.last = 0, ZERO_USAGE, None

    def usage_text(self) -> str:
        """What ``/usage`` shows."""
        plural = "" if self.turns == 1 else "s"
        text = f"session: {self.turns} turn{plural} · {tokens_text(self.usage)}"
        if self.last is not None:
            text += f"\nlast turn: {summary_line(self.last)}"
        return text

    def tools_text(self) -> str:
        """What ``/tools`` shows."""
        tools = self.agent.current_tools()
        if not tools:
            return "no tools"
        width = max(len(t.name) for t in tools)
        lines = []
        for t in tools:
            summary = t.description.strip().splitlines()[0] if t.description.strip() else ""
            lines.append(f"{t.name.ljust(width)}  {summary}")
        return "\n".join(lines)

    async def command(self, line: str) -> tuple[bool, str]:
        """Run a slash command: (go on?, text to show)."""
        name = line.split(maxsplit=1)[0].lower()
        if name in ("/quit", "/exit"):
            return False, ""
        if name == "/reset":
            await self.reset()
            return True, "the conversation was cleared"
        if name == "/tools":
            return True, self.tools_text()
        if name == "/usage":
            return True, self.usage_text()
        if name in ("/help", "/?"):
            return True, HELP
        return True, f"unknown command {name}; /help lists the commands"


def ask(info: Console) -> Decide:
    """Ask the person, on the terminal, whether a call that waits for approval may run."""

    def decide(call: PendingCall) -> str | None:
        shown = format_call(call.name, call.input, limit=None)
        info.print(safe_text(f"{shown} waits for your approval"), soft_wrap=True, highlight=False)
        answer = input("run it? [y/N, or say why not] ").strip()
        if answer.lower() in ("y", "yes"):
            return None
        return answer if answer.lower() not in ("", "n", "no") else "the person said no"

    return decide


def answer_on(info: Console) -> Answer:
    """Ask the person, on the terminal, a waiting call's questions (each field in turn; an
    empty line leaves it to its default)."""

    def answer(call: PendingCall) -> dict[str, Any]:
        shown = format_call(call.name, call.input, limit=None)
        info.print(safe_text(f"{shown} asks for your input"), soft_wrap=True, highlight=False)
        given: dict[str, Any] = {}
        for ask in call.asks:
            where = f" (open {ask.url})" if ask.mode == "url" and ask.url else ""
            info.print(safe_text(ask.message + where), soft_wrap=True, highlight=False)
            if input("answer it? [Y/n] ").strip().lower() in ("n", "no"):
                given[ask.key or ""] = None
                continue
            given[ask.key or ""] = _fields(ask.fields)
        return given

    return answer


def _fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Each field asked for, read from the terminal (checked against the schema on resume)."""
    content: dict[str, Any] = {}
    for name, given in fields.items():
        spec = given if isinstance(given, Mapping) else {}
        kind = spec.get("type", "string")
        hint = "/".join(map(str, spec["enum"])) if isinstance(spec.get("enum"), list) else kind
        default = f" [{json.dumps(spec['default'])}]" if "default" in spec else ""
        raw = input(f"  {name} ({hint}){default}: ").strip()
        if raw:
            content[name] = _value(raw, kind)
    return content


def _value(raw: str, kind: Any) -> Any:
    """``raw`` as a value of the JSON Schema type ``kind`` (as typed, if it is not one)."""
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
    except ValueError:
        return raw
    if kind == "boolean":
        return raw.lower() in ("y", "yes", "true", "1")
    return raw


def _enable_line_editing() -> None:
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401, PLC0415 - input() uses it once imported


def command_chat(opts: argparse.Namespace, agent: Agent, out: Console, err: Console) -> int:
    """``tether chat``: read prompts until Ctrl-D (or /quit); always exits 0 then. The chat is
    kept in the session store as it goes (``--session NAME`` resumes one); ``CommandError`` for a
    store that cannot be opened."""
    info = err if opts.json else out  # under --json only events go to stdout
    with asyncio.Runner() as runner:
        path = store_path(opts.store)
        store = SQLiteStore(path)
        try:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                context = runner.run(store.open(opts.session))
            except (OSError, sqlite3.Error) as exc:
                raise CommandError.about(f"cannot open the session store {path}", exc) from exc
            renderer = showing_waits(make_renderer(opts, out), err, agent.transport)
            session = ChatSession(
                agent, renderer, context, decide=ask(info), answer=answer_on(info)
            )
            return _chat(opts, session, runner, info, err)
        finally:
            runner.run(store.aclose())


def _chat(
    opts: argparse.Namespace,
    session: ChatSession,
    runner: asyncio.Runner,
    info: Console,
    err: Console,
) -> int:
    if sys.stdin is not None and sys.stdin.isatty():
        _enable_line_editing()
    _greet(opts, session, runner, info)
    with contextlib.suppress(KeyboardInterrupt, EOFError):
        runner.run(session.settle())  # a resumed session's calls that wait for the person
    prompt = "" if opts.json else PROMPT
    try:
        while True:
            try:
                line = input(prompt).strip()
            except KeyboardInterrupt:
                info.print()
                continue
            except EOFError:
                info.print()
                break
            if not line:
                continue
            if line.startswith("/"):
                go_on, text = runner.run(session.command(line))
                if text:
                    info.print(safe_text(text), soft_wrap=True, highlight=False)
                if not go_on:
                    break
                continue
            try:
                outcome = runner.run(session.turn(line))
            except KeyboardInterrupt:  # where signals cannot cancel the task itself
                continue
            show_trace_failures(session.agent.middleware, err)
            if outcome.error is not None:
                report_error(err, outcome.error, opts.verbose)
    finally:
        runner.run(close_transport(session.agent.transport))
    return EXIT_OK


def _greet(
    opts: argparse.Namespace, session: ChatSession, runner: asyncio.Runner, info: Console
) -> None:
    """The model, the tools, and the session (with how to resume it)."""
    count = len(session.agent.current_tools())
    held = len(runner.run(session.context.get_history()))
    name = session.context.session_id
    specs = getattr(opts, "agent", None)
    what = f"agent {specs[0]}" if specs else f"model {opts.model}"
    lines = [
        f"tether chat · {what} · {count} tool{'' if count == 1 else 's'} · "
        "/help for commands · Ctrl-C cancels a turn · Ctrl-D quits",
        f"session {name}"
        + (f" · resumed with {held} messages" if held else "")
        + f" · resume with --session {name}",
    ]
    for line in lines:
        info.print(safe_text(line, "dim"), soft_wrap=True, highlight=False)
