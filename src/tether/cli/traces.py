"""``tether trace FILE``: a recorded run (``Recorder`` JSON lines) as a tree in the terminal,
or (``--html OUT``) as one self-contained page."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from .args import EXIT_OK, CommandError
from .terminal import safe, safe_text
from .trace_file import SpanRecord, Summary, load_trace, summarize

__all__ = ["command_trace"]


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def command_trace(opts: argparse.Namespace, out: Console, err: Console) -> int:
    """Show the trace ``opts.file``; ``CommandError`` when it cannot be read, or the page
    cannot be written."""
    try:
        roots, skipped = load_trace(opts.file)
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read the trace: {exc}") from exc
    if skipped:
        err.print(Text(f"note: {skipped} line(s) were not spans and were left out"))
    prices = dict(opts.price or [])
    if opts.html is not None:
        from .trace_page import page  # noqa: PLC0415 - only for --html

        try:
            opts.html.write_text(page(roots, prices, title=opts.file.name), encoding="utf-8")
        except OSError as exc:
            raise CommandError.about(f"cannot write the page {opts.html}", exc) from exc
        out.print(safe_text(f"wrote {opts.html}"))
        return EXIT_OK
    if not roots:
        out.print(safe_text(f"no spans in {opts.file}"))
        return EXIT_OK
    for root in roots:
        out.print(_render(root))
    out.print(_summary_line(summarize(roots), prices))
    return EXIT_OK


def _render(root: SpanRecord) -> Tree:
    """The span tree, each span's children in start order (no recursion: traces can be deep)."""
    tree = Tree(_label(root))
    stack = [(root, tree)]
    while stack:
        span, node = stack.pop()
        stack.extend((child, node.add(_label(child))) for child in span.children)
    return tree


def _label(span: SpanRecord) -> Text:
    label = safe_text(span.name, "bold" if span.kind == "run" else "")
    label.append(f"  {span.seconds * 1000:.1f} ms", style="dim")
    a = span.attributes
    if "gen_ai.usage.input_tokens" in a:
        label.append(
            f"  {_int(a['gen_ai.usage.input_tokens'])} in / "
            f"{_int(a.get('gen_ai.usage.output_tokens'))} out",
            style="cyan",
        )
    if span.error is not None:
        label.append(f"  {safe(span.error)}", style="red")
    return label


def _summary_line(summary: Summary, prices: Mapping[str, tuple[float, float]]) -> Text:
    tokens = ", ".join(f"{m}: {i} in / {o} out" for m, (i, o) in summary.tokens.items())
    line = safe_text(
        f"{summary.calls} model call(s), {summary.tool_calls} tool call(s), "
        f"{summary.errors} error(s); {tokens or 'no tokens'}",
        "dim",
    )
    cost = summary.cost(prices) if prices else None
    if cost is not None:
        line.append(f"; ${cost:.4f}")
    return line
