"""Issue 22 §2.4: loading and rendering are bounded in memory and work for any file and inputs.

Each hostile case must stop with a typed error, and (where it would build a large value) with a
small peak of traced memory: the bound is checked before the value is built, not after.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.prompty import load
from tether.prompty.errors import LoadError, RenderError, TemplateLimitError, TemplateSecurityError
from tether.prompty.render.templates import render

MB = 1 << 20
PEAK = 48 * MB  # well under what any case below builds without its bound


def _stopped(call: Callable[[], Any], error: type[BaseException] = TemplateLimitError) -> str:
    """Runs ``call`` under tracemalloc: it must raise ``error`` with a small peak."""
    tracemalloc.start()
    try:
        with pytest.raises(error) as raised:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK, f"peak {peak / MB:.0f} MB"
    return str(raised.value)


def _render(template: str, engine: str = "jinja2", **inputs: Any) -> Callable[[], Any]:
    return lambda: render(template, inputs, engine=engine)


# --- jinja2: string methods and operators that build large values ---------------------------

N = 60_000_000


@pytest.mark.parametrize(
    "template",
    [
        f'{{{{ "x".ljust({N}) }}}}',
        f'{{{{ "x".rjust({N}, "y") }}}}',
        f'{{{{ "x".center({N}) }}}}',
        f'{{{{ "1".zfill({N}) }}}}',
        '{{ ("\\t" * 1000).expandtabs(60000) }}',
        '{{ ("x" * 1000).replace("x", "y" * 60000) }}',
        '{{ ("x" * 3000000).join(["a"] * 20) }}',
        '{{ ("x" * 3000000).join(items) }}',
        '{{ (("ab" * 1000000) ~ "") * 1 + ("ab" * 2000000) }}',
        '{{ ("x" * 2000000).encode() * 30 }}',
        "{{ (1).to_bytes(60000000, 'big') | length }}",
        '{{ ("x".encode()).ljust(60000000) | length }}',
        '{% set f = "x".ljust %}{{ f(60000000) }}',
        '{{ ("x" | attr("ljust"))(60000000) }}',
    ],
)
def test_string_methods_cannot_build_past_the_cap(template: str) -> None:
    _stopped(_render(template, items=["a"] * 20))


@pytest.mark.parametrize(
    "template",
    ['{{ "{:>60000000}".format(1) }}', '{{ ("x" * 1000).translate({120: "y" * 60000}) }}'],
)
def test_formatting_and_translation_stay_refused(template: str) -> None:
    with pytest.raises(TemplateSecurityError):
        render(template, {})


def test_repeating_a_large_value_in_a_loop_spends_the_work_budget() -> None:
    template = '{% for i in range(2000) %}{% set y = "x" * 4000000 %}{% endfor %}done'
    assert "work" in _stopped(_render(template))


# --- jinja2: blocks whose text is never output ---------------------------------------------

DOUBLING = "".join(
    f"{{% set {b} %}}{{{{ {a} }}}}{{{{ {a} }}}}{{% endset %}}"
    for a, b in zip("sabcde", "abcdef", strict=True)
)


def test_set_blocks_cannot_double_a_value_past_the_cap() -> None:
    _stopped(_render(DOUBLING + "{{ f | length }}", s="x" * 1_000_000))


def test_filter_blocks_are_bounded_while_they_build() -> None:
    template = "{% filter upper %}{% for i in range(50000) %}{{ s }}{% endfor %}{% endfilter %}"
    _stopped(_render(template, s="x" * 1000))


def test_literal_text_repeated_inside_a_set_block_is_counted() -> None:
    template = "{% set a %}{% for i in range(50000) %}" + "L" * 1000 + "{% endfor %}{% endset %}"
    _stopped(_render(template))


# --- jinja2: work, not only loop steps -----------------------------------------------------

BIG = "x" * 1_000_000


@pytest.mark.parametrize(
    "body",
    [
        "{% if s == t %}{% endif %}",
        '{% if "y" in s %}{% endif %}',
        '{{ s.count("y") }}',
        "{{ s | wordcount }}",
        "{{ s[1:] | length }}",
    ],
)
def test_each_step_of_a_loop_pays_for_the_work_it_does(body: str) -> None:
    template = "{% for i in range(100000) %}" + body + "{% endfor %}"
    with pytest.raises(TemplateLimitError, match="work"):
        render(template, {"s": BIG, "t": "".join(["x"] * len(BIG))})


def test_a_recursive_loop_is_refused() -> None:
    template = "{% for x in [1] recursive %}{{ loop(range(100000)) }}{% endfor %}"
    with pytest.raises(RenderError, match="recursive"):
        render(template, {})


def test_an_ordinary_render_is_untouched() -> None:
    template = (
        "{% for m in items %}{{ loop.index }}. {{ m.name | upper }}: "
        "{{ m.text | replace('a', 'b') | trim }}{% if m.name == 'x' %}!{% endif %}\n{% endfor %}"
        "{{ items | map(attribute='name') | join(', ') }} {{ doc[:5] }} {{ doc | length }}"
    )
    items = [{"name": "x", "text": " banana "}, {"name": "y", "text": "apple"}]
    text = render(template, {"items": items, "doc": "y" * 2_000_000}).text
    assert text == "1. X: bbnbnb!\n2. Y: bpple\nx, y yyyyy 2000000"


# --- mustache ------------------------------------------------------------------------------


@pytest.mark.parametrize("inner", ["{{x}}", "L" * 500])
def test_nested_mustache_sections_are_bounded_while_they_build(inner: str) -> None:
    template = "{{#a}}{{#a}}{{#a}}{{#a}}" + inner + "{{/a}}{{/a}}{{/a}}{{/a}}"
    _stopped(_render(template, "mustache", a=list(range(20)), x="x" * 500))


def test_an_ordinary_mustache_render_is_untouched() -> None:
    template = "{{#items}}- {{name}}{{^last}},{{/last}}\n{{/items}}{{{raw}}} {{missing}}."
    items = [{"name": "a", "last": False}, {"name": "b", "last": True}]
    text = render(template, {"items": items, "raw": "<b>"}, engine="mustache").text
    assert text == "- a,\n- b\n<b> ."


# --- loading -------------------------------------------------------------------------------


def test_aliases_of_a_file_reference_are_not_read_again_and_again(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 200_000)
    aliases = ", ".join(["*r"] * 300)
    path = tmp_path / "agent.prompty"
    path.write_text(f"---\nfirst: &r ${{file:big.txt}}\nmore: [{aliases}]\n---\nx\n")
    assert "referenced files" in _stopped(lambda: load(path), LoadError)


def test_referenced_files_have_a_total_cap(tmp_path: Path) -> None:
    for i in range(10):
        (tmp_path / f"part{i}.txt").write_text("y" * 900_000)
    refs = "\n".join(f"  p{i}: ${{file:part{i}.txt}}" for i in range(10))
    path = tmp_path / "agent.prompty"
    path.write_text(f"---\nmetadata:\n{refs}\n---\nx\n")
    with pytest.raises(LoadError, match="referenced files"):
        load(path)


def test_a_few_references_still_load(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("hello")
    path = tmp_path / "agent.prompty"
    path.write_text("---\nmetadata: {a: &n '${file:note.txt}', b: *n, c: *n}\n---\nx\n")
    assert load(path).metadata == {"a": "hello", "b": "hello", "c": "hello"}
