"""Untrusted .prompty text never breaks ``loads`` with anything but the door's own errors."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.prompty.errors import PromptyError
from tether.prompty.loading.loader import loads, validate_inputs

FUZZ = fuzz(200)


def _words(text: str) -> list[str]:
    return text.split()


KEYS = _words("""name description displayName metadata model inputs outputs tools template kind id
provider apiType connection options temperature maxOutputTokens stopSequences additionalProperties
parameters bindings properties items required default example enumValues format parser serverName
approvalMode allowedTools specification path input strict endpoint apiKey""")
WORDS = _words("""function mcp openapi prompty custom string integer array object jinja2 mustache
key reference never ${env:HOME} ${env:TETHER_FUZZ_UNSET} ${env:TETHER_FUZZ_UNSET:dflt}
${file:missing.json} ${file:../escape.json} ${file:/etc/hostname} ${file:} ${env:}
${FILE:x.yaml} ${other:thing}""")
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(WORDS)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=25,
)
FRONTMATTER = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=7)
TOKENS = [
    *_words("--- +++ name model inputs tools { } [ ] , *a *b # ? | > ... ~ .nan 1e999 2024-01-01"),
    *["\n", "  ", "- ", ": ", "kind: function", "&a ", "<<: ", "!!binary ", "!!set ", "'", '"'],
    *["!!python/name:x", "\t", "%YAML 1.1", "${env:HOME}", "${file:x.json}", "9" * 30],
    *["\\u0000", "\x00", "\ufeff", "\r\n"],
]
YAMLISH = st.lists(st.sampled_from(TOKENS) | st.text(max_size=4), max_size=40).map("".join)


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz") / "app"
    folder.mkdir()
    (folder / "x.json").write_text('{"kind": "key", "endpoint": "${env:TETHER_FUZZ_UNSET:e}"}')
    (folder / "x.yaml").write_text("a: [1, 2]\n")
    return folder


def _load_quietly(text: str, base_dir: Path) -> None:
    """``loads``: a ``PromptyError`` is an accepted outcome; success must serialise."""
    try:
        agent = loads(text, base_dir=base_dir, source="fuzz.prompty")
    except PromptyError as error:
        str(error)  # the message must render, too
        return
    json.dumps(agent.to_dict(), default=str)
    with contextlib.suppress(PromptyError):
        validate_inputs(agent, {})


@FUZZ
@given(text=st.text(max_size=300))
def test_arbitrary_text(base_dir: Path, text: str) -> None:
    _load_quietly(text, base_dir)


@FUZZ
@given(text=YAMLISH)
def test_yaml_ish_frontmatter(base_dir: Path, text: str) -> None:
    _load_quietly(f"---\n{text}\n---\nuser:\n{{{{q}}}}\n", base_dir)


@FUZZ
@given(frontmatter=FRONTMATTER)
def test_structured_frontmatter(base_dir: Path, frontmatter: dict[str, Any]) -> None:
    dumped = yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True)
    _load_quietly(f"---\n{dumped}---\nsystem:\nhi\n", base_dir)
