"""The ``tether`` command: ``tether run PROMPT`` (or ``FILE.prompty``), ``chat``, ``serve``,
``mcp-serve``, ``mcp login``/``logout``, ``sessions``, ``trace`` and ``eval``.

This package (and only it) imports ``rich``; ``import tether`` never loads it. ``main`` parses the
command line, builds the agent (model from ``--model``, the demo tools plus ``--tools``) and runs
the command; it returns the exit code (0 ok, 1 the run failed, 2 usage error, 130 interrupted).
A ``.prompty`` file runs through ``prompty_run`` (loaded only then) with the same exit codes.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from rich.console import Console
from rich.text import Text

from .app import (
    build_agent,
    command_run,
    configure_logging,
    load_tools,
    make_renderer,
    make_transport,
    read_prompt,
    report_error,
)
from .args import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
    build_parser,
    resolve_defaults,
)
from .chat import command_chat
from .durable import command_durable_run, command_worker
from .evaluating import command_eval
from .loading import ToolSpecError
from .mcp_login import command_mcp
from .mcp_serving import command_mcp_serve
from .own_agent import (
    MAKES_THE_AGENT,
    SHAPES_A_RUN,
    agent_spec,
    own_agent,
    refuse,
    refuse_durable_options,
)
from .serving import command_serve
from .sessions import command_sessions
from .terminal import error_line
from .traces import command_trace

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["console", "main"]


def _durable_run(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """``tether run --durable``: needs --agent and --task-queue; the model options are the
    agent's own, and the options that shape a run are the worker's to apply."""
    if not opts.agent or not opts.task_queue:
        err.print(error_line("tether run --durable needs --agent MODULE:ATTR and --task-queue Q"))
        return EXIT_USAGE
    try:
        refuse(
            opts,
            MAKES_THE_AGENT,
            f"does not apply with --agent {opts.agent[0]}: that agent brings its own model, "
            "system prompt and tools",
        )
        refuse(
            opts,
            SHAPES_A_RUN,
            "does not apply to a durable run: its agent runs in the worker (set it where the "
            "agent is made)",
        )
        prompt = read_prompt(opts)
    except UsageError as exc:
        err.print(error_line(str(exc)), soft_wrap=True)
        return EXIT_USAGE
    return command_durable_run(opts, out, err, prompt, make_renderer(opts, out))


def main(argv: Sequence[str] | None = None) -> int:
    """The ``tether`` command; returns the exit code."""
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    parser = build_parser()
    try:
        opts = parser.parse_args(argv)
    except UsageError as exc:
        err.print(error_line(str(exc)), soft_wrap=True)
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    resolve_defaults(opts)
    if opts.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[opts.command](opts, out, err)
    except Exception as exc:  # CommandError, and what no command foresaw: one line all the same
        report_error(err, exc, getattr(opts, "verbose", False))
        return EXIT_FAILED


def _usage_error(err: Console, exc: Exception, verbose: bool) -> int:
    if verbose and exc.__cause__ is not None:
        traceback.print_exception(exc.__cause__)
    err.print(error_line(str(exc)), soft_wrap=True, highlight=False)
    return EXIT_USAGE


def _file_run(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """``tether run FILE.prompty``; the model from ``make_transport`` when not the file's."""
    from .prompty_run import command_run_file, prepare_run  # noqa: PLC0415 - only for files

    try:
        run = prepare_run(opts)
        transport = run.transport(opts, make_transport)
    except (UsageError, ToolSpecError) as exc:
        return _usage_error(err, exc, opts.verbose)
    return command_run_file(opts, run, transport, out, err)


def _sessions(opts: argparse.Namespace, out: Console, err: Console) -> int:
    return command_sessions(opts, out)


def _trace(opts: argparse.Namespace, out: Console, err: Console) -> int:
    return command_trace(opts, out, err)


def _worker(opts: argparse.Namespace, out: Console, err: Console) -> int:
    configure_logging(opts.verbose)
    return command_worker(opts, err)


def _run(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """``tether run``: a ``.prompty`` file, a durable run, or one turn of the CLI's agent."""
    configure_logging(opts.verbose)
    from .prompty_run import is_prompty_file  # noqa: PLC0415

    if not opts.durable:
        try:
            refuse_durable_options(opts)
        except UsageError as exc:
            return _usage_error(err, exc, False)
    if is_prompty_file(opts.prompt):
        return _file_run(opts, out, err)
    for given, option in ((opts.input, "--input"), (opts.inputs, "--inputs")):
        if given:
            return _usage_error(err, UsageError(f"{option} needs a FILE.prompty"), False)
    if opts.allow_env:
        return _usage_error(err, UsageError("--allow-env needs a FILE.prompty"), False)
    if opts.durable:
        return _durable_run(opts, out, err)
    ready = _prepare(opts, err, with_prompt=True)
    if isinstance(ready, int):
        return ready
    agent, prompt = ready
    return _interruptible(opts, err, lambda: command_run(opts, agent, out, err, prompt))


def _chat(opts: argparse.Namespace, out: Console, err: Console) -> int:
    configure_logging(opts.verbose)
    ready = _prepare(opts, err, with_prompt=False)
    if isinstance(ready, int):
        return ready
    agent, _ = ready
    return _interruptible(opts, err, lambda: command_chat(opts, agent, out, err))


def _serve(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """``tether serve``: the ``--agent`` given, else the one the model and tools options make."""
    configure_logging(opts.verbose)
    ready = _prepare(opts, err, with_prompt=False)
    if isinstance(ready, int):
        return ready
    agent = ready[0]
    return _interruptible(opts, err, lambda: command_serve(opts, agent, out, err))


def _prepare(
    opts: argparse.Namespace, err: Console, *, with_prompt: bool
) -> tuple[Agent, str] | int:
    """The agent (``--agent``'s, else the one the options make) and the prompt, for ``run``;
    or the exit code of why not."""
    try:
        spec = agent_spec(opts)
        prompt = read_prompt(opts) if with_prompt else ""
        if spec is not None:
            return own_agent(opts, spec), prompt
        tools = load_tools(opts)
        transport = make_transport(opts)
    except (UsageError, ToolSpecError) as exc:
        return _usage_error(err, exc, opts.verbose)
    except Exception as exc:
        report_error(err, exc, opts.verbose)
        return EXIT_FAILED
    agent = build_agent(
        transport,
        tools,
        system=opts.system,
        max_iterations=opts.max_iterations,
        trace=opts.trace,
        approve=getattr(opts, "approve", ()),
        compact_at=opts.compact_at,
        repeated_calls=opts.max_repeated_calls,
    )
    return agent, prompt


def _interruptible(opts: argparse.Namespace, err: Console, command: Callable[[], int]) -> int:
    """``command``'s exit code; Ctrl-C and errors it lets out end it with theirs."""
    try:
        return command()
    except KeyboardInterrupt:
        err.print(Text("interrupted", style="yellow"))
        return EXIT_INTERRUPTED
    except Exception as exc:
        report_error(err, exc, opts.verbose)
        return EXIT_FAILED


Command: TypeAlias = Callable[[argparse.Namespace, Console, Console], int]

# Each subcommand's handler, by the name ``build_parser`` gives it.
COMMANDS: dict[str, Command] = {
    "run": _run,
    "chat": _chat,
    "worker": _worker,
    "sessions": _sessions,
    "trace": _trace,
    "serve": _serve,
    "mcp-serve": command_mcp_serve,
    "mcp": command_mcp,
    "eval": command_eval,
}


def console() -> NoReturn:
    """The ``tether`` console script: ``main``, then exit with its code.

    After a durable command the process leaves without interpreter teardown: the Temporal
    SDK's native threads can abort a finalizing interpreter (a known SDK fault), which would
    turn a finished command into a crash. Output is flushed first; nothing else is pending.
    """
    code = main()
    if "temporalio" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
