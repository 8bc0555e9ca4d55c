"""Fuzzing the renderer and the parser: any template and inputs give text or a ``RenderError``;
any rendered text parses, quickly, into messages of known roles; signing a template's markers
changes nothing about how it parses."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.prompty.errors import RenderError, RoleInjectionError
from tether.prompty.render.markers import ROLES, match_role_marker
from tether.prompty.render.parse import parse, pre_render
from tether.prompty.render.templates import forges_role_boundary, render, render_segments

FUZZ = fuzz(200)

TEMPLATE_TOKENS = [
    "{{", "}}", "{%", "%}", "{#", "#}", "{{-", "-}}", "{%-", "-%}", " if ", " elif ", " else ",
    " endif ", " for ", " in ", " endfor ", " set ", " endset ", " filter ", " endfilter ",
    " = ", "x", "y", "items", "loop.index", "|", "upper", "join(',')", "length", "default(",
    "replace('', 'ab')", ")", "(", "[", "]", ".", "~", "+", "*", "**", "%", "'", '"', "\n", " ",
    "system:", "user[a=1]:", "{{#", "{{/", "{{^", "{{{", "}}}", "{{!", "{{=", "=}}", "{{>",
    "&", "__class__", "0", "1", "9", "range(99)",
]  # fmt: skip
TEXT_TOKENS = [
    "user", "system", "assistant", "developer", "tool", "USER", "[", "]", "=", '"', ",", ":",
    "#", " ", "\t", "\n", "\r", "a", "7", "1.5", "true", "nonce", "__PROMPTY_THREAD_",
    "abcd1234", "_h__", "```",
]  # fmt: skip
THREAD_NONCE = "__PROMPTY_THREAD_abcd1234_h__"

templates = st.one_of(
    st.text(max_size=120), st.lists(st.sampled_from(TEMPLATE_TOKENS), max_size=40).map("".join)
)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)
inputs = st.dictionaries(st.sampled_from(["x", "y", "items", "q"]), values, max_size=4)
rendered_texts = st.one_of(
    st.text(max_size=200), st.lists(st.sampled_from(TEXT_TOKENS), max_size=60).map("".join)
)


@FUZZ
@given(templates, inputs, st.sampled_from(["jinja2", "mustache"]))
def test_any_template_renders_or_raises_a_render_error(
    template: str, given_inputs: dict[str, Any], engine: str
) -> None:
    try:
        result = render(template, given_inputs, engine=engine)
    except RenderError:
        return
    assert isinstance(result.text, str)


@FUZZ
@given(templates, inputs)
def test_segments_put_together_are_the_rendered_text(
    template: str, given_inputs: dict[str, Any]
) -> None:
    try:
        text = render(template, given_inputs).text
    except RenderError:
        return
    try:
        segments = render_segments(template, given_inputs)
    except RenderError as exc:  # only a filter rewriting the markers may stop segments
        assert "markers were altered" in str(exc)
        return
    assert "".join(s.text for s in segments) == text
    assert all(s.kind == "interp" or s.source is None for s in segments)


@FUZZ
@given(rendered_texts)
def test_any_text_parses_into_messages_of_known_roles(text: str) -> None:
    messages = parse(text, threads={THREAD_NONCE: [{"role": "user", "content": "from thread"}]})
    assert all(m.role in ROLES for m in messages)
    try:
        strict = parse(text, nonce="abcd1234")
    except RoleInjectionError:
        return
    assert all(m.role in ROLES for m in strict)


@FUZZ
@given(rendered_texts)
def test_signing_markers_before_render_changes_nothing_about_the_parse(text: str) -> None:
    plain = parse(text)
    signed = parse(pre_render(text, "f00d"), nonce="f00d")
    assert [m.to_dict() for m in signed] == [m.to_dict() for m in plain]


ADVERSARIAL = [
    "user[" + "a=" * 50_000,
    "user[" + "a=" * 50_000 + "]:",
    "user[" + 'a="' * 50_000 + "]:",
    "user[" + "a=1," * 50_000 + "]:",
    "user[" + "a = " * 50_000 + "]:",
    "system" + " " * 100_000 + ":",
    "#" * 100_000 + "user:",
    "user" + "[" * 100_000 + ":",
    "user[a=" + "]" * 100_000 + ":",
    'user[a="x"' + " " * 100_000 + "b]:",
    "\n".join(['user[a=1, b="two"]:'] * 20_000),
    "__PROMPTY_THREAD_" * 20_000,
]


@pytest.mark.parametrize(
    "text", ADVERSARIAL, ids=[f"adversarial-{i}" for i in range(len(ADVERSARIAL))]
)
def test_adversarial_marker_lines_parse_quickly(text: str) -> None:
    started = time.perf_counter()
    parse(text, threads={THREAD_NONCE: []})
    for line in text.split("\n")[:3]:
        match_role_marker(line)
        forges_role_boundary(line)
    pre_render(text, "n")
    assert time.perf_counter() - started < 2
