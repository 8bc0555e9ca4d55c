"""One self-contained HTML page for a recorded trace: a timeline (each run, model call and tool
call a bar on one time axis; parallel calls overlap), a token and cost summary, and each
call's attributes (arguments, results) in an expandable row. No network, no server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .trace_file import SpanRecord, summarize, walk

__all__ = ["page"]

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#1d2433;background:#fff}
h1{font-size:18px;margin:0 0 8px}
table.summary{border-collapse:collapse;margin:8px 0 16px}
table.summary td,table.summary th{border:1px solid #d5d9e0;padding:3px 8px;text-align:right}
table.summary th:first-child,table.summary td:first-child{text-align:left}
.axis,.row>summary{display:grid;grid-template-columns:34% 66%;align-items:center}
.axis{font-size:11px;color:#666;border-bottom:1px solid #ccc;margin-bottom:4px}
.ticks{position:relative;height:16px}
.ticks span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.ticks span:first-child{transform:none}.ticks span:last-child{transform:translateX(-100%)}
.row{border-bottom:1px solid #f0f1f4}
.row>summary{cursor:pointer;list-style:none;padding:2px 0}
.row>summary::-webkit-details-marker{display:none}
.label{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.track{position:relative;height:14px;background:#f7f8fa}
.bar{position:absolute;top:1px;height:12px;border-radius:2px;min-width:2px}
.run .bar{background:#6b7a99}.model .bar{background:#3f7fd9}.tool .bar{background:#2e9e6a}
.error .bar{background:#d9453f}.error .label{color:#b3261e;font-weight:600}
.detail{margin:4px 0 8px 2em;font-size:12px}
.detail table{border-collapse:collapse}
.detail td{border:1px solid #e3e6eb;padding:2px 6px;vertical-align:top}
.detail pre{margin:0;white-space:pre-wrap;word-break:break-word;max-height:20em;overflow:auto}
button{margin:0 4px 8px 0}
"""

_SCRIPT = """
for (const b of document.querySelectorAll('button[data-open]')) {
  b.addEventListener('click', () => {
    const open = b.dataset.open === '1';
    for (const d of document.querySelectorAll('details.row')) d.open = open;
  });
}
"""


def page(
    roots: Sequence[SpanRecord], prices: Mapping[str, tuple[float, float]], *, title: str
) -> str:
    """The whole page for the spans under ``roots``."""
    rows = list(walk(roots))
    if rows:
        first = min(s.start for _, s in rows)
        total = max(max(s.end for _, s in rows) - first, 1e-9)
    else:
        first, total = 0.0, 1.0
    body = [
        f"<h1>{escape(title)}</h1>",
        _summary(roots, prices),
        '<button data-open="1">expand all</button><button data-open="0">collapse all</button>',
        _axis(total),
        *(_row(span, depth, first, total) for depth, span in rows),
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f'<body><main id="timeline">{"".join(body)}</main><script>{_SCRIPT}</script></body></html>'
    )


def _summary(roots: Sequence[SpanRecord], prices: Mapping[str, tuple[float, float]]) -> str:
    summary = summarize(roots)
    lines = [
        f"<p>{summary.calls} model call(s), {summary.tool_calls} tool call(s), "
        f"{summary.errors} error(s)</p>",
        '<table class="summary"><tr><th>model</th><th>input tokens</th><th>output tokens</th>'
        "<th>cost (USD)</th></tr>",
    ]
    for model, (given, taken) in summary.tokens.items():
        cost = summary_cost(model, given, taken, prices)
        lines.append(
            f"<tr><td>{escape(model)}</td><td>{given:,}</td><td>{taken:,}</td><td>{cost}</td></tr>"
        )
    total = summary.cost(prices) if prices else None
    lines.append(
        "<tr><th>total</th>"
        f"<th>{sum(t[0] for t in summary.tokens.values()):,}</th>"
        f"<th>{sum(t[1] for t in summary.tokens.values()):,}</th>"
        f"<th>{'' if total is None else f'{total:.4f}'}</th></tr></table>"
    )
    return "".join(lines)


def summary_cost(
    model: str, given: int, taken: int, prices: Mapping[str, tuple[float, float]]
) -> str:
    if model not in prices:
        return "no price given"
    per_in, per_out = prices[model]
    return f"{(given * per_in + taken * per_out) / 1e6:.4f}"


def _axis(total: float) -> str:
    ticks = "".join(
        f'<span style="left:{i * 20}%">{total * i / 5 * 1000:.1f} ms</span>' for i in range(6)
    )
    return f'<div class="axis"><div>span</div><div class="ticks">{ticks}</div></div>'


def _row(span: SpanRecord, depth: int, first: float, total: float) -> str:
    left = (span.start - first) / total * 100
    width = span.seconds / total * 100
    classes = f"row {escape(span.kind)}" + (" error" if span.error is not None else "")
    label = f"{escape(span.name)} · {span.seconds * 1000:.1f} ms"
    if span.error is not None:
        label += f" · {escape(span.error)}"
    return (
        f'<details class="{classes}" data-span="{escape(span.span)}">'
        f'<summary><div class="label" style="padding-left:{depth * 16}px">{label}</div>'
        f'<div class="track"><div class="bar" style="left:{left:.3f}%;width:{width:.3f}%"'
        f' title="{label}"></div></div></summary>'
        f'<div class="detail">{_attributes(span.attributes)}</div></details>'
    )


def _attributes(attributes: Mapping[str, Any]) -> str:
    cells = "".join(
        f"<tr><td>{escape(str(k))}</td><td><pre>{escape(_text(v))}</pre></td></tr>"
        for k, v in sorted(attributes.items())
    )
    return f"<table>{cells}</table>" if cells else "<p>no attributes</p>"


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)
