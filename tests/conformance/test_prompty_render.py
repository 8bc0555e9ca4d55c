"""``Renderer.render`` (23) and ``Renderer.renderSegments`` (5): Prompty's render vectors, each
through tether's ``render`` / ``render_segments``.

A render vector marks a rich-kind input by giving it as ``{"_kind": <kind>, ...}``: that input
is declared with that kind (the template then sees its nonce). ``nonce_pattern`` is a regular
expression the whole rendered text must match. A segments vector's ``strict_props`` are the
inputs marked ``strict``; its ``error`` names the class of the error it expects.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from prompty_adapter import assert_subset, load

from tether.prompty import errors
from tether.prompty.errors import RenderError
from tether.prompty.render.templates import render, render_segments

RENDER = load("Renderer.render")
SEGMENTS = load("Renderer.renderSegments")


def _rich_kinds(inputs: dict[str, Any]) -> dict[str, str]:
    return {k: v["_kind"] for k, v in inputs.items() if isinstance(v, dict) and "_kind" in v}


@pytest.mark.parametrize("vector", RENDER, ids=[f"Renderer.render:{v['name']}" for v in RENDER])
def test_render(vector: dict[str, Any]) -> None:
    given, expected = vector["input"], vector["expected"]
    rich_kinds = _rich_kinds(given["inputs"])
    result = render(
        given["template"], given["inputs"], engine=given["engine"], rich_kinds=rich_kinds
    )
    if "nonce_pattern" in expected:
        assert re.fullmatch(expected["nonce_pattern"], result.text), result.text
        assert sorted(r.name for r in result.rich.values()) == sorted(rich_kinds)
        for nonce, rich in result.rich.items():
            assert nonce in result.text
            assert rich.value == given["inputs"][rich.name]
    assert_subset(
        {k: v for k, v in expected.items() if k != "nonce_pattern"}, {"rendered": result.text}
    )


@pytest.mark.parametrize(
    "vector", SEGMENTS, ids=[f"Renderer.renderSegments:{v['name']}" for v in SEGMENTS]
)
def test_render_segments(vector: dict[str, Any]) -> None:
    given, expected = vector["input"], vector["expected"]

    def run() -> list[dict[str, Any]]:
        segments = render_segments(
            given["template"],
            given["inputs"],
            engine=given["engine"],
            strict=given.get("strict_props", ()),
        )
        return [s.to_dict() for s in segments]

    if "error" in expected:
        error = getattr(errors, expected["error"])
        assert issubclass(error, RenderError)
        with pytest.raises(error):
            run()
        return
    assert_subset(expected, {"segments": run()})
