"""Tests for resilient tool-argument parsing (Prompty spec §9.8)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.tools.repair import ParsedArguments, failure_message, parse_arguments

FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
# Reference for comma removal: keep whole strings, drop a comma only when a closer follows it.
STRING_OR_TRAILING_COMMA = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|,(?=\s*[}\]])', re.DOTALL)
FAST = fuzz(250)


# -- examples: each strategy ----------------------------------------------------------------

EXAMPLES: list[tuple[str, dict[str, Any], str]] = [
    ('{"a": 1}', {"a": 1}, "direct"),
    ('  {"a": {"b": [1, 2]}}\n', {"a": {"b": [1, 2]}}, "direct"),
    ("", {}, "empty"),
    (" \n\t ", {}, "empty"),
    ('```json\n{"a": 1}\n```', {"a": 1}, "fences"),
    ('```\n{"a": 1}\n```', {"a": 1}, "fences"),
    ('  ```json {"a": {"b": 2}} ```  \n', {"a": {"b": 2}}, "fences"),
    ('Sure! {"a": 1} hope that helps', {"a": 1}, "first_object"),
    ('Here: {"a": "}{"} done', {"a": "}{"}, "first_object"),
    ('x {"a": "{{{", "b": "}"} y {"c": 3}', {"a": "{{{", "b": "}"}, "first_object"),
    (r'say {"q": "he said \"}\" ok", "n": 2} end', {"q": 'he said "}" ok', "n": 2}, "first_object"),
    (r'pre {"p": "C:\\", "n": {"m": 1}} post', {"p": "C:\\", "n": {"m": 1}}, "first_object"),
    ('{"a": 1,}', {"a": 1}, "trailing_commas"),
    ('{"a": [1, 2, ],\n}', {"a": [1, 2]}, "trailing_commas"),
    ('{"a": {"b": [{"c": 1,},],},}', {"a": {"b": [{"c": 1}]}}, "trailing_commas"),
    ('{"code": "x = [1, 2, ]", }', {"code": "x = [1, 2, ]"}, "trailing_commas"),
    ('{"a": "x,}", "b": [",]",],}', {"a": "x,}", "b": [",]"]}, "trailing_commas"),
    (r'{"a": "\\", "b": "\",]",}', {"a": "\\", "b": '",]'}, "trailing_commas"),
    ('```json\n{"a": 1,}\n```', {"a": 1}, "fences+trailing_commas"),
    (
        '```\n{"a": [1, 2,], "s": "[3, ]",\n}\n```',
        {"a": [1, 2], "s": "[3, ]"},
        "fences+trailing_commas",
    ),
    ('Sure! {"a": [1,2,],} hope that helps', {"a": [1, 2]}, "first_object+trailing_commas"),
    ('ok: {"a": 1,} bye, ]', {"a": 1}, "first_object+trailing_commas"),
    ('Here:\n```json\n{"a": "b",}\n```\nDone.', {"a": "b"}, "first_object+trailing_commas"),
]


@pytest.mark.parametrize(("raw", "expected", "strategy"), EXAMPLES)
def test_strategies(raw: str, expected: dict[str, Any], strategy: str) -> None:
    assert parse_arguments(raw) == ParsedArguments(expected, strategy, None)


@pytest.mark.parametrize(("raw", "_expected", "strategy"), EXAMPLES)
def test_warning_only_for_fallbacks(
    raw: str, _expected: object, strategy: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="tether.tools"):
        parse_arguments(raw)
    records = [r for r in caplog.records if r.name == "tether.tools"]
    if strategy in ("direct", "empty"):
        assert records == []
    else:
        assert [r.levelno for r in records] == [logging.WARNING]
        fragments = {
            "fences": "markdown fences",
            "first_object": "first JSON object",
            "trailing_commas": "trailing commas",
        }
        assert all(fragments[step] in records[0].getMessage() for step in strategy.split("+"))


def test_strategy_order_fences_before_extraction() -> None:
    # Both fences and extraction would work; fences comes first.
    assert parse_arguments('```json\n{"a": 1}\n```').strategy == "fences"


def test_trailing_commas_compose_with_fences_and_prose() -> None:
    # Comma removal also runs on the fence-stripped or extracted text, after the spec's chain.
    fenced = parse_arguments('```json\n{"a": 1,}\n```')
    assert fenced == ParsedArguments({"a": 1}, "fences+trailing_commas", None)
    in_prose = parse_arguments('Sure! {"a": [1,2,],} hope that helps')
    assert in_prose == ParsedArguments({"a": [1, 2]}, "first_object+trailing_commas", None)


def test_trailing_commas_never_touch_strings() -> None:
    assert parse_arguments('{"code": "x = [1, 2, ]", }').value == {"code": "x = [1, 2, ]"}
    assert parse_arguments('{"k,}": ",}", "l": [",]" ,]}').value == {"k,}": ",}", "l": [",]"]}
    # An escaped quote does not end the string; an escaped backslash does not escape the quote.
    assert parse_arguments(r'{"a": "\", ]", "b": "\\",}').value == {"a": '", ]', "b": "\\"}


# -- linear time ----------------------------------------------------------------------------

N = 200_000
ADVERSARIAL = {
    "fence_then_newlines": "```json\n" + "\n" * N,
    "fence_newlines_text": "```" + "\n" * N + "x",
    "fence_spaces_fence": "```" + " " * N + "``` x",
    "spaces_around_fence": " " * N + "```" + " \n" * N,
    "many_fences": "```" * N,
    "open_braces": "{" * N,
    "open_brackets": "[" * N,
    "quotes": '"' * N,
    "brace_quotes": '{"' * N,
    "backslashes_in_string": '{"a": "' + "\\" * N,
    "escaped_quotes": '{"a": "' + '\\"' * N,
    "commas": ", " * N,
    "comma_then_spaces": "{," + " " * N,
    "commas_in_object": "{" + ", " * N + "}",
    "comma_closers": ",]" * N,
    "prose_commas": "Sure! " + "{" * 10 + ",\n" * N + "} ok",
}


@pytest.mark.timeout(10)  # fails on a hang; the old backtracking regexes ran for hours here
@pytest.mark.parametrize("raw", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_linear_time_on_adversarial_input(raw: str) -> None:
    parsed = parse_arguments(raw)
    assert parsed.value is None
    assert parsed.error


@pytest.mark.timeout(10)
def test_linear_time_on_large_repairable_input() -> None:
    raw = '```json\n{"a": [' + "1, " * N + '], "s": "' + ", ]" * N + '",}\n```'
    parsed = parse_arguments(raw)
    assert parsed.strategy == "fences+trailing_commas"
    assert parsed.value == {"a": [1] * N, "s": ", ]" * N}


# -- examples: failures ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "garbage",
        "[1,2]",
        '"str"',
        "null",
        "42",
        "true",
        '{"a": 1',
        '{"a": "unterminated',
        "```json\n[1, 2]\n```",
        "{not json}",
        "}{",
        "[" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        "{" * 100_000,
        "\ud800",
        '{"a": "\udfff"',
        "1" * 10_000,
    ],
)
def test_failures(raw: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="tether.tools"):
        parsed = parse_arguments(raw)
    assert parsed.value is None
    assert parsed.strategy is None
    assert parsed.error
    assert "Invalid JSON" in failure_message(parsed)
    assert parsed.error in failure_message(parsed)
    assert not [r for r in caplog.records if r.name == "tether.tools"]


def test_error_messages() -> None:
    assert parse_arguments("[1,2]").error == "arguments must be a JSON object, got array"
    assert parse_arguments("null").error == "arguments must be a JSON object, got null"
    assert parse_arguments("```[1]```").error == "arguments must be a JSON object, got array"
    assert parse_arguments("garbage").error == "Expecting value: line 1 column 1 (char 0)"
    assert failure_message(parse_arguments("garbage")) == (
        "Error: Invalid JSON in tool arguments: Expecting value: line 1 column 1 (char 0). "
        "Call the tool again with the arguments as one valid JSON object."
    )


def test_lone_surrogate_inside_valid_object() -> None:
    assert parse_arguments('{"a": "\ud800"}').value == {"a": "\ud800"}


# -- properties -----------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=5)
prose = st.text(st.characters(exclude_characters="{}"), max_size=30)
json_ish = st.text(st.sampled_from(list('{}[]",:\\ \n`ajson01')), max_size=40)


@st.composite
def mutated_json(draw: st.DrawFn) -> str:
    """A valid JSON object text put through a few random, LLM-like mutations."""
    text = json.dumps(draw(json_objects), ensure_ascii=draw(st.booleans()))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "fence", "prose", "comma"]))
        pos = draw(st.integers(0, len(text)))
        if kind == "insert":
            text = text[:pos] + draw(st.text(min_size=1, max_size=3) | json_ish) + text[pos:]
        elif kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 3)) :]
        elif kind == "fence":
            text = f"```{draw(st.sampled_from(['json', '']))}\n{text}\n```"
        elif kind == "prose":
            text = draw(prose) + text + draw(prose)
        else:
            text = re.sub(r"([}\]])", lambda m: draw(st.sampled_from(["", ",", ", "])) + m[1], text)
    return text


any_raw = (
    st.text()
    | st.text(st.characters(codec=None, exclude_categories=()))  # every code point
    | st.text(  # lone surrogates among JSON punctuation
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.sampled_from('{}":a1,')
    )
    | json_ish
    | mutated_json()
)


def same(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)  # NaN-safe, order-sensitive comparison


def without_trailing_commas(text: str) -> str:
    return STRING_OR_TRAILING_COMMA.sub(lambda m: m[1] or "", text)


def claimed_texts(raw: str, strategy: str) -> list[str]:
    """Every text the named strategy could have parsed, derived independently of the code."""
    base, _, commas = strategy.partition("+")
    if base == "fences":
        stripped = FENCE.sub(r"\1", raw, count=1)
        texts = [stripped] if stripped != raw else []
    elif base == "first_object":
        start = raw.index("{")
        texts = [raw[start : end + 1] for end in range(start + 1, len(raw)) if raw[end] == "}"]
    else:
        assert base == "trailing_commas"
        texts, commas = [raw], base
    return [without_trailing_commas(t) for t in texts] if commas else texts


def reproduce(raw: str, parsed: ParsedArguments) -> bool:
    """Re-derive the value from the text the strategy claims it used: nothing invented."""
    if parsed.strategy == "empty":
        return raw.strip() == "" and parsed.value == {}
    if parsed.strategy == "direct":
        return same(json.loads(raw), parsed.value)
    assert parsed.strategy is not None
    for text in claimed_texts(raw, parsed.strategy):
        try:
            if same(json.loads(text), parsed.value):
                return True
        except ValueError:
            pass
    return False


@FAST
@given(any_raw)
def test_never_raises_and_never_invents(raw: str) -> None:
    parsed = parse_arguments(raw)
    if parsed.value is None:
        assert parsed.strategy is None
        assert parsed.error
        assert failure_message(parsed).startswith("Error: Invalid JSON in tool arguments: ")
    else:
        assert isinstance(parsed.value, dict)
        assert parsed.error is None
        assert reproduce(raw, parsed)


@FAST
@given(json_objects)
def test_round_trip_direct(d: dict[str, Any]) -> None:
    assert parse_arguments(json.dumps(d)) == ParsedArguments(d, "direct", None)


@FAST
@given(json_objects, st.sampled_from(["json", ""]), st.booleans())
def test_round_trip_fenced(d: dict[str, Any], tag: str, ascii_only: bool) -> None:
    raw = f"```{tag}\n{json.dumps(d, ensure_ascii=ascii_only, indent=2)}\n```"
    assert parse_arguments(raw) == ParsedArguments(d, "fences", None)


@FAST
@given(json_objects, prose, prose)
def test_round_trip_in_prose(d: dict[str, Any], before: str, after: str) -> None:
    parsed = parse_arguments(before + json.dumps(d) + after)
    assert parsed.value == d
    assert parsed.strategy in ("direct", "fences", "first_object")
    if before.strip() and "`" not in before:
        assert parsed.strategy == "first_object"


tricky_text = st.text(st.sampled_from(list(',]}[{ "\\:a')), max_size=12) | st.text(max_size=8)
tricky_objects = st.dictionaries(
    tricky_text,
    st.recursive(
        st.none() | st.integers() | tricky_text,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(tricky_text, children, max_size=3)
        ),
        max_leaves=8,
    ),
    max_size=4,
)


def dumps_with_trailing_commas(value: object) -> str:
    """JSON text with a comma after the last member of every non-empty container."""
    if isinstance(value, dict):
        members = "".join(
            f"{json.dumps(k)}: {dumps_with_trailing_commas(v)}, " for k, v in value.items()
        )
        return "{" + members + "}"
    if isinstance(value, list):
        return "[" + "".join(f"{dumps_with_trailing_commas(v)},\n" for v in value) + "]"
    return json.dumps(value)


@FAST
@given(tricky_objects)
def test_round_trip_trailing_commas_keep_strings(d: dict[str, Any]) -> None:
    parsed = parse_arguments(dumps_with_trailing_commas(d))
    assert parsed.value == d
    assert parsed.strategy == ("trailing_commas" if d else "direct")


@FAST
@given(tricky_objects.filter(bool), st.sampled_from(["json", ""]), prose, prose, st.booleans())
def test_round_trip_trailing_commas_in_fences_or_prose(
    d: dict[str, Any], tag: str, before: str, after: str, fenced: bool
) -> None:
    text = dumps_with_trailing_commas(d)
    raw = f"```{tag}\n{text}\n```" if fenced else f"{before}{text}{after}"
    parsed = parse_arguments(raw)
    assert parsed.value == d
    assert parsed.strategy is not None
    assert parsed.strategy.endswith("trailing_commas")  # bare when the prose is only whitespace


fence_pieces = st.lists(
    st.sampled_from(["```", "`", "json", "js", " ", "\n", "\t", "\u00a0", '{"a": 1}', "[1]", "x"]),
    max_size=8,
).map("".join)


def parses_to_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


@FAST
@given(fence_pieces)
def test_fences_agree_with_spec_regex(raw: str) -> None:
    stripped = FENCE.sub(r"\1", raw, count=1)
    parsed = parse_arguments(raw)
    if parses_to_object(raw) or stripped == raw or not parses_to_object(stripped):
        assert parsed.strategy != "fences"
    else:
        assert parsed == ParsedArguments(json.loads(stripped), "fences", None)
