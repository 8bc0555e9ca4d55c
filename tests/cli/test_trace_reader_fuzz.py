"""``tether trace FILE`` reads an untrusted file, fuzzed: whatever its bytes, the reader returns
each span once (typed as the renderers expect) and a count of the lines it left out, or its one
typed error (``ValueError``, for a file over the cap); the tree and the page are drawn for any of
it. A hang fails on the test timeout: parent loops come often (ids are drawn from five)."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from rich.console import Console

from fuzzing import fuzz
from tether.cli import trace_file
from tether.cli.args import build_parser
from tether.cli.trace_file import SpanRecord, load_trace, summarize, walk
from tether.cli.traces import command_trace

FIELDS = ("v", "trace", "span", "parent", "kind", "name", "start", "end", "attributes", "events")
GEN_AI = ("gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
BIG = 10**400  # a JSON integer past what a float holds

ids = st.sampled_from(["a", "b", "c", "d", ""])
past_floats = st.integers(309, 1000).map(lambda digits: 10**digits)  # JSON holds any integer
numbers = st.integers() | past_floats | st.floats()  # NaN and ±Infinity too
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
good_spans = st.fixed_dictionaries(
    {
        "v": st.just(1),
        "trace": st.text(max_size=5),
        "span": ids,
        "parent": st.none() | ids,
        "kind": st.sampled_from(["run", "model", "tool", "other"]),
        "name": st.text(max_size=12) | st.just("chat m"),  # m has a price
        "start": st.floats(),
        "end": st.floats(),
    },
    optional={
        "attributes": st.dictionaries(st.sampled_from(GEN_AI) | st.text(max_size=5), json_values),
        "events": st.lists(json_values, max_size=3),
        "error": st.none() | st.text(max_size=10),
    },
)


@st.composite
def damaged_spans(draw: st.DrawFn) -> dict[str, Any]:
    """A span with some of its fields dropped or given any JSON value."""
    span = draw(good_spans)
    for key in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3)):
        if draw(st.booleans()):
            span.pop(key, None)
        else:
            span[key] = draw(numbers | json_values)
    return span


def dumped(value: object, ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


OVERFLOWING = dumped(
    {"v": 1, "trace": "t", "span": "s", "kind": "k", "name": "n", "start": BIG, "end": 2}, True
)
# Nesting past the parser's depth is test_cli_trace_input's: under Hypothesis, its timing callback
# would run at the recursion limit, and its error reach pytest as unraisable.
damaged_lines = (
    st.builds(dumped, damaged_spans(), st.booleans())
    | st.builds(dumped, json_values, st.booleans())
    | st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass"))
    | st.binary(max_size=40)
    | st.sampled_from([b"", b"  ", b"\r", b"{", b'{"v": 1', b"[" * 500])
)
Entry = tuple[dict[str, Any] | None, bytes]  # a good span and its line, or None and a bad line
entries = st.lists(
    st.builds(lambda s, a: (s, dumped(s, a)), good_spans, st.booleans())
    | damaged_lines.map(lambda line: (None, line)),
    max_size=12,
)


def body_of(drawn: list[Entry], crlf: bool) -> bytes:
    """The file: one line per entry, ending in LF or CRLF."""
    ending = b"\r\n" if crlf else b"\n"
    return b"".join(line + ending for _, line in drawn)


def lines_counted(body: bytes, max_line: int) -> int:
    """How many lines the reader must account for: not blank, or too long to read."""
    pieces = body.split(b"\n")
    with_ends = [p + b"\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    return sum(1 for p in with_ends if p.strip() or len(p) > max_line)


def check_spans(roots: list[SpanRecord]) -> list[SpanRecord]:
    """Every span once, typed, each child under its own parent; the summary computes."""
    spans = [span for _, span in walk(roots)]
    assert len({id(s) for s in spans}) == len(spans)
    for span in spans:
        assert all(isinstance(f, str) for f in (span.trace, span.span, span.kind, span.name))
        assert isinstance(span.start, float) and isinstance(span.end, float)
        assert isinstance(span.attributes, dict)
        assert all(isinstance(e, dict) for e in span.events)
        assert span.parent is None or isinstance(span.parent, str)
        assert span.error is None or isinstance(span.error, str)
        assert all(child.parent == span.span for child in span.children)
    summarize(roots)
    return spans


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One file, rewritten by every example."""
    return tmp_path_factory.mktemp("fuzz") / "trace.jsonl"


@fuzz(200)
@given(drawn=entries, crlf=st.booleans())
@example(drawn=[(None, OVERFLOWING)], crlf=False)
def test_any_lines_give_every_good_span_and_a_count_of_the_rest(
    trace_path: Path, drawn: list[Entry], crlf: bool
) -> None:
    trace_path.write_bytes(body := body_of(drawn, crlf))
    roots, skipped = load_trace(trace_path)
    spans = check_spans(roots)
    assert len(spans) + skipped == lines_counted(body, trace_file.MAX_LINE_BYTES)
    good = Counter((s["span"], s["name"]) for s, _ in drawn if s is not None)
    assert not good - Counter((s.span, s.name) for s in spans)  # no good span is lost


@fuzz(200)
@given(
    body=st.binary(max_size=600) | st.builds(body_of, entries, st.booleans()),
    max_line=st.integers(1, 300),
    max_trace=st.integers(1, 3000),
)
def test_any_bytes_under_any_caps_give_spans_or_the_one_typed_error(
    trace_path: Path, body: bytes, max_line: int, max_trace: int
) -> None:
    trace_path.write_bytes(body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trace_file, "MAX_LINE_BYTES", max_line)
        patch.setattr(trace_file, "MAX_TRACE_BYTES", max_trace)
        if len(body) > max_trace:
            with pytest.raises(ValueError, match="is larger than"):
                load_trace(trace_path)
            return
        roots, skipped = load_trace(trace_path)
    assert len(check_spans(roots)) + skipped == lines_counted(body, max_line)


@fuzz(50)
@given(drawn=entries, html=st.booleans())
def test_the_tree_and_the_page_are_drawn_for_any_trace(
    trace_path: Path, drawn: list[Entry], html: bool
) -> None:
    trace_path.write_bytes(body_of(drawn, crlf=False))
    page = trace_path.with_suffix(".html")
    argv = ["trace", str(trace_path), "--price", "m=1:2", *(["--html", str(page)] if html else [])]
    out, err = io.StringIO(), io.StringIO()
    opts = build_parser().parse_args(argv)
    assert command_trace(opts, Console(file=out), Console(file=err)) == 0
    if html:
        assert page.read_text(encoding="utf-8").endswith("</html>")
