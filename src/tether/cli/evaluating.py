"""``tether eval PATH --agent MODULE:ATTR``: run an agent (or a function) over a dataset, print
the report, write it as JSON or HTML, and exit 1 when it fails its gate (a case that did not
pass; with ``--baseline``, a case that passes less often than before)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console

from .args import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from .loading import ToolSpecError, load_attribute
from .terminal import error_line

__all__ = ["command_eval"]


def command_eval(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """Evaluate, print, write, and exit by the gate."""
    from ..evals import Dataset, EvalError, Report, evaluate  # noqa: PLC0415 - only for eval
    from ..evals.gate import failures  # noqa: PLC0415

    try:
        dataset = Dataset.load(opts.path)
        baseline = None if opts.baseline is None else Report.load(opts.baseline)
        target = _target(opts.agent)
    except (EvalError, ToolSpecError) as exc:
        err.print(error_line(str(exc)), soft_wrap=True, highlight=False)
        return EXIT_USAGE
    progress = False if opts.no_progress else None
    report = asyncio.run(
        evaluate(
            target, dataset, repeat=opts.repeat, concurrency=opts.concurrency, progress=progress
        )
    )
    out.print(report.render())
    if baseline is not None:
        from ..evals.text import comparison_table  # noqa: PLC0415

        out.print(comparison_table(report.compare(baseline)))
    _write(report, opts)
    found = failures(report, baseline)
    for line in found:
        err.print(error_line(line), soft_wrap=True, highlight=False)
    return EXIT_FAILED if found else EXIT_OK


def _target(spec: str) -> Any:
    value = load_attribute(spec, "--agent")
    if callable(getattr(value, "run_stream", None)) or callable(value):
        return value
    raise ToolSpecError(f"--agent {spec}: a {type(value).__name__}, not an Agent or a function")


def _write(report: Any, opts: argparse.Namespace) -> None:
    for path, text in ((opts.json, report.to_json), (opts.html, report.to_html)):
        if path is None:
            continue
        try:
            Path(path).write_text(text(), encoding="utf-8")
        except OSError as exc:
            raise CommandError.about(f"cannot write {path}", exc) from exc
