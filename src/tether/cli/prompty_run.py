"""``tether run FILE.prompty``: Prompty's ``turn`` on the file, shown and ended as ``tether run
PROMPT`` is: the engine's events reach the same renderer through ``EventTap`` and
``TurnWatch``, and ``exit_code`` gives the same exit codes.

Choices a user may need to know (the ``--help`` text says them too):

- The model is the file's own connection; an explicit ``--model`` overrides it (keeping the
  file's model options), and a file that names no model runs on ``--model``'s default.
- A ``.env`` file beside the file is read first (never replacing a variable already set), as
  the spec asks of command-line runners; the file may read the environment variables its
  ``model`` section names (its endpoint and key) and those given with ``--allow-env``.
- ``--tools`` gives handlers for the tools the file declares, matched by name.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from ..events import StreamEvent
from ..loop import Limits, Middleware, RunHandler, RunRequest, as_generator
from ..transports.base import CompletionTransport
from .app import (
    TurnWatch,
    close_transport,
    exit_code,
    interruptible,
    make_renderer,
    trace_middleware,
)
from .args import UsageError
from .loading import ToolSpecError, load_handlers
from .prompty_inputs import read_inputs
from .render import Renderer, TurnOutcome
from .terminal import safe

if TYPE_CHECKING:
    from ..prompty.model import PromptAgent

__all__ = ["EventTap", "PromptyRun", "is_prompty_file", "prepare_run", "run_prompty_turn"]

SUFFIX = ".prompty"
_ENV_REFERENCE = re.compile(r"\$\{env:([^:}]+)(?::[^}]*)?\}", re.IGNORECASE)
_NOT_WITH_A_FILE = (
    ("system_given", "--system"),
    ("root", "--root"),
    ("durable", "--durable"),
    ("agent", "--agent"),
)

MakeTransport = Callable[..., CompletionTransport]


def is_prompty_file(argument: str | None) -> bool:
    """Whether ``tether run``'s first argument names a ``.prompty`` file (by its ending: one
    that does not exist is then a usage error, not a prompt)."""
    return argument is not None and argument.endswith(SUFFIX)


class EventTap(Middleware):
    """Hands each event of the runs it wraps to ``see`` as it passes (put it first, so it sees
    what the caller gets)."""

    def __init__(self, see: Callable[[StreamEvent], None]) -> None:
        self.see = see

    async def wrap_run(self, run: RunRequest, call_next: RunHandler) -> AsyncIterator[StreamEvent]:
        async with contextlib.aclosing(as_generator(call_next(run))) as events:
            async for event in events:
                self.see(event)
                yield event


@dataclass(frozen=True, slots=True)
class PromptyRun:
    """A loaded ``.prompty`` file with what to run it with; ``shown`` names it as given."""

    agent: PromptAgent
    shown: str
    inputs: dict[str, Any] = field(default_factory=dict)
    handlers: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def unhandled(self) -> list[str]:
        """The function tools the file declares that no handler serves."""
        from ..prompty.registry import get_tool  # noqa: PLC0415

        return [
            t.name
            for t in self.agent.tools or ()
            if t.kind == "function" and t.name not in self.handlers and get_tool(t.name) is None
        ]

    def transport(
        self, opts: argparse.Namespace, make_transport: MakeTransport
    ) -> tuple[CompletionTransport, bool]:
        """The model to run on, and whether the CLI made it (and so closes it)."""
        from ..prompty.errors import WireError  # noqa: PLC0415
        from ..prompty.execution.wire import model_options, transport_for  # noqa: PLC0415

        model, outputs = self.agent.model, self.agent.outputs or ()
        if opts.model_given or model is None or not model.id:
            options = model_options(None if model is None else model.options, outputs)
            return make_transport(opts, defaults=options), True
        overrides: dict[str, Any] = {}
        if opts.temperature is not None:
            overrides["temperature"] = opts.temperature
        if opts.max_tokens is not None:
            overrides["max_tokens"] = opts.max_tokens
        try:
            made = transport_for(model, outputs, stream=not opts.no_stream, overrides=overrides)
        except (WireError, TypeError, ValueError) as exc:
            raise UsageError(f"{self.shown}: cannot call its model: {exc}") from exc
        connection = model.connection
        return made, connection is None or connection.kind != "reference"


def _model_variables(path: Path) -> set[str]:
    """The environment variables the file's ``model`` section names, as written."""
    from ..prompty.loading.files import parse_yaml, read_text, split_frontmatter  # noqa: PLC0415

    split = split_frontmatter(read_text(path), path=str(path))
    if split.frontmatter is None:
        return set()
    data, _ = parse_yaml(split.frontmatter, path=str(path), first_line=split.frontmatter_line)
    model = data.get("model") if isinstance(data, dict) else None
    return {m.group(1) for text in _strings(model) for m in [_ENV_REFERENCE.fullmatch(text)] if m}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _load(path: Path, shown: str, allowed: Sequence[str]) -> PromptAgent:
    """The agent in ``path``; a file that cannot be loaded is a ``UsageError``."""
    try:
        from ..prompty.errors import EnvAccessError, LoadError  # noqa: PLC0415
        from ..prompty.loading.loader import load, load_dotenv  # noqa: PLC0415
    except ImportError as exc:
        raise UsageError(f"running a .prompty file needs tether's prompty extra ({exc})") from exc
    try:
        if (path.parent / ".env").is_file():
            load_dotenv(path)
        names = _model_variables(path) | set(allowed)
        return load(path, env=sorted(names))
    except EnvAccessError as exc:
        name = exc.variable or "?"
        message = (
            f"${{env:{name}}} is not allowed: tether run reads only the variables of the "
            f"file's model section; --allow-env {name} lets it read this one"
        )
        raise UsageError(str(LoadError(message, path=exc.path, line=exc.line))) from exc
    except LoadError as exc:
        raise UsageError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"{shown}: cannot read it: {exc}") from exc


def _handlers(specs: Sequence[str], agent: PromptAgent, shown: str) -> dict[str, Any]:
    """The ``--tools`` handlers, each for a tool the file declares."""
    declared = [t.name for t in agent.tools or ()]
    handlers: dict[str, Callable[..., Any]] = {}
    for spec in specs:
        for name, handler in load_handlers(spec).items():
            if name not in declared:
                listed = ", ".join(declared) or "none"
                raise ToolSpecError(
                    f"--tools {spec}: {shown} declares no tool {name!r} (it declares: {listed})"
                )
            if name in handlers:
                raise ToolSpecError(f"--tools {spec}: a second handler for tool {name!r}")
            handlers[name] = handler
    return handlers


def prepare_run(opts: argparse.Namespace) -> PromptyRun:
    """The file ``opts.prompt`` loaded, its inputs read and its handlers found; a
    ``UsageError`` (or ``ToolSpecError``) for anything wrong, before anything runs."""
    shown = str(opts.prompt)
    for attribute, option in _NOT_WITH_A_FILE:
        if getattr(opts, attribute, None):
            raise UsageError(f"{option} does not apply to a .prompty file")
    path = Path(shown).expanduser()
    if not path.exists():
        raise UsageError(f"no such file: {shown}")
    if not path.is_file():
        raise UsageError(f"not a file: {shown}")
    agent = _load(path, shown, opts.allow_env)
    inputs = read_inputs(agent.inputs or (), opts.input, opts.inputs, path.name)
    return PromptyRun(agent, shown, inputs, _handlers(opts.tools, agent, path.name))


async def run_prompty_turn(
    run: PromptyRun,
    renderer: Renderer,
    *,
    transport: CompletionTransport,
    middleware: Sequence[Middleware] = (),
    max_iterations: int = 10,
    limits: Limits | None = None,
) -> TurnOutcome:
    """Prompty's ``turn`` on ``run``, every engine event handed to ``renderer``; a failure is
    in the outcome (the spec's error, as ``turn`` raises it), a cancellation goes on."""
    from ..prompty import turn_async  # noqa: PLC0415

    watch = TurnWatch(renderer)
    try:
        await turn_async(
            run.agent,
            run.inputs,
            run.handlers,
            transport=transport,
            max_iterations=max_iterations,
            limits=limits,
            middleware=[EventTap(watch), *middleware],
        )
    except asyncio.CancelledError:
        watch.finish(cancelled=True)
        raise
    except Exception as exc:
        return watch.finish(error=exc)
    return watch.finish()


async def _run_once(
    run: PromptyRun,
    renderer: Renderer,
    transport: CompletionTransport,
    owned: bool,
    options: Mapping[str, Any],
) -> TurnOutcome:
    try:
        return await interruptible(run_prompty_turn(run, renderer, transport=transport, **options))
    finally:
        if owned:
            await close_transport(transport)


def command_run_file(
    opts: argparse.Namespace,
    run: PromptyRun,
    transport: tuple[CompletionTransport, bool],
    out: Console,
    err: Console,
) -> int:
    """``tether run FILE.prompty``: one turn; the exit code says how it went."""
    for name in run.unhandled():
        line = Text("warning: ", style="bold yellow")
        line.append(safe(f"{run.shown} declares tool {name!r} and no --tools handler serves it"))
        line.append("; its calls will be error results")
        err.print(line, soft_wrap=True, highlight=False)
    middleware = trace_middleware(opts.trace)
    options: dict[str, Any] = {"middleware": middleware, "max_iterations": opts.max_iterations}
    if opts.max_repeated_calls is not None:
        options["limits"] = Limits(repeated_calls=opts.max_repeated_calls)
    turn = _run_once(run, make_renderer(opts, out), *transport, options)
    return exit_code(opts, err, turn, middleware)
