"""What the commands do: build the agent, run turns, report errors, map outcomes to exit codes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
import traceback
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.text import Text

from ..agent import Agent
from ..context import Compaction, ContextStore
from ..errors import AuthenticationError, LimitExceeded, ModelStopError, TetherError
from ..events import IterationEnd, IterationStart, SessionEndEvent, StreamEvent, TextDelta
from ..loop import AgentStream, Limits, Middleware
from ..messages import Message
from ..tools.tool import Tool
from ..tracing import Recorder
from ..transports.base import ClosableTransport, CompletionTransport
from ..types import ZERO_USAGE, Usage
from .args import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, CommandError, UsageError
from .demo import demo_tools
from .loading import load_tool_spec, merge_tools
from .render import JsonRenderer, Renderer, RichRenderer, TurnOutcome, format_call
from .terminal import error_line, safe
from .trace_notice import TraceNotice, show_trace_failures
from .waiting import showing_waits

__all__ = [
    "Cancelled",
    "TurnWatch",
    "build_agent",
    "close_transport",
    "command_run",
    "configure_logging",
    "describe_error",
    "exit_code",
    "interruptible",
    "load_tools",
    "make_renderer",
    "make_transport",
    "read_prompt",
    "report_error",
    "run_resume",
    "run_turn",
    "trace_middleware",
    "watched",
]

T = TypeVar("T")

LAST_ITERATION_MESSAGE = Message(
    "user", "This is the last step you have: answer now from what you know, without tools."
)


class Cancelled(Exception):
    """The turn was cancelled (Ctrl-C)."""


class TurnWatch:
    """One turn's events on their way to a renderer: keeps the answer (the text of the last
    model call), the usage and the end, so ``finish`` gives the ``TurnOutcome`` whatever made
    the events (an agent's run stream, or a Prompty turn seen through ``EventTap``)."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.started = time.monotonic()
        self._answer: list[str] = []
        self._usage = ZERO_USAGE
        self._iterations = 0
        self._end: SessionEndEvent | None = None
        renderer.begin()

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, IterationStart):
            self._answer.clear()
            self._iterations = event.iteration
        elif isinstance(event, TextDelta):
            self._answer.append(event.delta)
        elif isinstance(event, IterationEnd):
            self._usage = self._usage + event.usage
        elif isinstance(event, SessionEndEvent):
            self._end = event
        self.renderer.event(event)

    def finish(
        self,
        *,
        error: BaseException | None = None,
        cancelled: bool = False,
        usage: Usage | None = None,
        iterations: int | None = None,
    ) -> TurnOutcome:
        """The outcome, handed to the renderer's ``end``; ``usage`` and ``iterations`` (when
        the caller knows them) stand in for the events' own until the run's end was seen."""
        end = None if cancelled else self._end
        pending = () if end is None else end.pending
        if end is not None:
            usage, iterations = end.total_usage, end.iterations
        outcome = TurnOutcome(
            "".join(self._answer),
            self._usage if usage is None else usage,
            self._iterations if iterations is None else iterations,
            time.monotonic() - self.started,
            error=None if pending else error,  # a pause is not a failure: the person decides
            cancelled=cancelled,
            pending=pending,
        )
        self.renderer.end(outcome)
        return outcome


async def run_turn(
    agent: Agent,
    prompt: str,
    renderer: Renderer,
    context: ContextStore | None = None,
) -> TurnOutcome:
    """One agent turn on ``prompt``, every event handed to ``renderer``.

    A run that fails is not raised: its error is in the outcome. When the task running this is
    cancelled, the renderer still gets ``end()`` (with ``cancelled=True``) and the cancellation
    goes on; the engine leaves ``context`` valid.
    """
    return await watched(agent.run_stream(prompt, context), renderer)


async def run_resume(
    agent: Agent,
    context: ContextStore,
    approve: Sequence[str],
    deny: Mapping[str, str],
    renderer: Renderer,
    answers: Mapping[str, Mapping[str, Any]] | None = None,
) -> TurnOutcome:
    """The paused turn on ``context`` gone on with the person's decisions (and ``answers`` to
    the questions of calls that wait for input), as ``run_turn``."""
    stream = agent.resume_stream(context, approve=approve, deny=deny, answers=answers or None)
    return await watched(stream, renderer)


async def watched(stream: AgentStream, renderer: Renderer) -> TurnOutcome:
    """A run's events handed to ``renderer``; its outcome (see ``run_turn``)."""
    watch = TurnWatch(renderer)
    try:
        async for event in stream:
            watch(event)
    except asyncio.CancelledError:
        watch.finish(cancelled=True, usage=stream.usage, iterations=stream.iterations)
        raise
    finally:
        await stream.aclose()
    return watch.finish(error=stream.error, usage=stream.usage, iterations=stream.iterations)


async def interruptible(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` as a task that Ctrl-C (SIGINT) cancels; raise ``Cancelled`` if it was.

    Where the event loop cannot take signal handlers (Windows), asyncio's own handling cancels
    the caller instead; the task is cancelled with it and the cancellation goes on.
    """
    loop = asyncio.get_running_loop()
    task = loop.create_task(coro)
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):
        installed = False
    try:
        await asyncio.wait([task])
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait([task])
        raise
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
    if task.cancelled():
        raise Cancelled
    return task.result()


# -- building the agent ---------------------------------------------------------------------


def make_transport(
    opts: argparse.Namespace, *, defaults: Mapping[str, Any] | None = None
) -> CompletionTransport:
    """The transport for ``--model`` and the sampling options (over ``defaults``, e.g. a
    ``.prompty`` file's model options); ``UsageError`` for a bad string."""
    import tether  # noqa: PLC0415 - tether.transport is loaded on demand

    options: dict[str, Any] = dict(defaults or {})
    if opts.temperature is not None:
        options["temperature"] = opts.temperature
    if opts.max_tokens is not None:
        options["max_tokens"] = opts.max_tokens
    if opts.no_stream:
        options["stream"] = False
    try:
        return tether.transport(opts.model, **options)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--model {opts.model}: {exc}") from exc


def load_tools(opts: argparse.Namespace) -> list[Tool]:
    """The demo tools (unless ``--no-demo-tools``) and every ``--tools`` spec."""
    demo = [] if opts.no_demo_tools else demo_tools(opts.root or Path.cwd())
    user: list[Tool] = []
    for spec in opts.tools:
        user.extend(load_tool_spec(spec))
    return merge_tools(demo, user)


def trace_middleware(trace: Path | None) -> list[Middleware]:
    """``--trace FILE``: the recorder of the run (a file that cannot be written is a warning
    after the turn, see ``trace_notice``); none without it."""
    return [] if trace is None else [Recorder(trace, on_failure=TraceNotice(trace))]


def build_agent(
    transport: CompletionTransport,
    tools: Sequence[Tool],
    *,
    system: str,
    max_iterations: int = 10,
    trace: Path | None = None,
    approve: Sequence[str] = (),
    compact_at: int | None = None,
    repeated_calls: int | None = None,
) -> Agent:
    """The agent the CLI runs (recording its runs to ``trace``, if given: a file that cannot be
    written is a warning after the turn, see ``trace_notice``); calls of the tools named in
    ``approve`` wait for the person; past ``compact_at`` tokens the conversation compacts; the
    ``repeated_calls``-th repeated call ends a turn."""
    return Agent(
        limits=None if repeated_calls is None else Limits(repeated_calls=repeated_calls),
        context_policy=None if compact_at is None else Compaction(max_tokens=compact_at),
        approval=frozenset(approve) or None,
        system=system,
        transport=transport,
        tools=list(tools),
        max_iterations=max_iterations,
        last_iteration_message=LAST_ITERATION_MESSAGE if max_iterations > 1 else None,
        middleware=trace_middleware(trace),
    )


async def close_transport(transport: CompletionTransport) -> None:
    """Close the transport's connections, if it has any."""
    if not isinstance(transport, ClosableTransport):
        return
    try:
        await transport.aclose()
    except Exception:
        logging.getLogger("tether.cli").debug("closing the transport failed", exc_info=True)


# -- errors -----------------------------------------------------------------------------------


def describe_error(exc: BaseException) -> str:
    """An error in plain words, one line where possible."""
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, AuthenticationError):
        return f"{text}; check the API key in the provider's environment variable"
    if isinstance(exc, ModelStopError) and exc.stop_reason == "max_tokens":
        return f"{text}; raise --max-tokens for longer answers"
    if isinstance(exc, LimitExceeded) and exc.limit == "repeated_calls":
        return f"{text}: the model kept calling a tool again with the same arguments and result"
    if isinstance(exc, TetherError | CommandError):
        return text
    return f"{type(exc).__name__}: {text}"


def report_error(err: Console, exc: BaseException, verbose: bool) -> None:
    """``tether: error: ...`` on stderr; the traceback too under ``--verbose``."""
    if verbose and exc.__traceback__ is not None:
        err.file.write(safe("".join(traceback.format_exception(exc))))
        err.file.flush()
    err.print(error_line(describe_error(exc)), soft_wrap=True, highlight=False)


class _SafeFormatter(logging.Formatter):
    """Log lines carry what servers sent: shown inert, as all outside text is."""

    def format(self, record: logging.LogRecord) -> str:
        return safe(super().format(record))


def configure_logging(verbose: bool) -> None:
    """``--verbose``: HTTP traffic of logger ``tether.http`` (secrets redacted) to stderr."""
    if not verbose:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("tether")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("tether.http").setLevel(logging.DEBUG)


# -- the commands -----------------------------------------------------------------------------


def make_renderer(opts: argparse.Namespace, out: Console) -> Renderer:
    """JSON lines under ``--json``, else rich text."""
    if opts.json:
        return JsonRenderer(out.file)
    return RichRenderer(out)


def read_prompt(opts: argparse.Namespace) -> str:
    """``run``'s prompt: the argument, or stdin when it is ``-`` or missing and stdin is piped."""
    prompt = opts.prompt
    if prompt is None or prompt == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("tether run needs a PROMPT (or text on stdin)")
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    return str(prompt)


async def _run_once(agent: Agent, prompt: str, renderer: Renderer) -> TurnOutcome:
    try:
        return await interruptible(run_turn(agent, prompt, renderer))
    finally:
        await close_transport(agent.transport)


def exit_code(
    opts: argparse.Namespace,
    err: Console,
    turn: Coroutine[Any, Any, TurnOutcome],
    middleware: Sequence[object] = (),
) -> int:
    """Run one turn to its exit code: 130 when interrupted, 1 (and the error line) when it
    failed, else 0; a ``--trace`` file that failed among ``middleware`` is warned of once."""
    try:
        outcome = asyncio.run(turn)
    except (Cancelled, KeyboardInterrupt):
        err.print(Text("interrupted", style="yellow"))
        return EXIT_INTERRUPTED
    finally:
        show_trace_failures(middleware, err)
    if outcome.pending:
        err.print(error_line(_cannot_ask(opts, outcome)), soft_wrap=True, highlight=False)
        return EXIT_FAILED
    if outcome.error is not None:
        report_error(err, outcome.error, opts.verbose)
        return EXIT_FAILED
    return EXIT_OK


def _cannot_ask(opts: argparse.Namespace, outcome: TurnOutcome) -> str:
    """Why a run that paused for approval ends there, and where a person can approve it."""
    calls = ", ".join(format_call(c.name, c.input, limit=None) for c in outcome.pending)
    specs = getattr(opts, "agent", None)
    chat = f"tether chat --agent {specs[0]}" if specs else "tether chat"
    verb = "waits" if len(outcome.pending) == 1 else "wait"
    return (
        f"{calls} {verb} for approval, which tether run cannot give: chat with the agent "
        f"instead ({chat})"
    )


def command_run(
    opts: argparse.Namespace, agent: Agent, out: Console, err: Console, prompt: str
) -> int:
    """``tether run``: one turn; the exit code says how it went."""
    renderer = showing_waits(make_renderer(opts, out), err, agent.transport)
    turn = _run_once(agent, prompt, renderer)
    return exit_code(opts, err, turn, agent.middleware)
