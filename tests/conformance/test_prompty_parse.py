"""``Parser.parse`` (19): Prompty's parser vectors, each through tether's ``parse``.

``thread_inputs`` names thread inputs by property name; the rendered text already holds each
one's nonce (``__PROMPTY_THREAD_<hex>_<name>__``, as the renderer would have made it), so the
test finds that nonce in the text and gives ``parse`` the nonce → thread map a render returns.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from prompty_adapter import assert_subset, load

from tether.prompty.render.base import NONCE_PREFIX
from tether.prompty.render.parse import parse

VECTORS = load("Parser.parse")


def _threads(rendered: str, thread_inputs: dict[str, Any]) -> dict[str, Any]:
    threads = {}
    for name, messages in thread_inputs.items():
        pattern = re.escape(NONCE_PREFIX) + r"[0-9a-f]+_" + re.escape(name) + "__"
        nonces = re.findall(pattern, rendered)
        assert nonces, f"no nonce for thread {name!r} in the rendered text"
        threads.update(dict.fromkeys(nonces, messages))
    return threads


@pytest.mark.parametrize("vector", VECTORS, ids=[f"Parser.parse:{v['name']}" for v in VECTORS])
def test_parse(vector: dict[str, Any]) -> None:
    given = vector["input"]
    threads = _threads(given["rendered"], given.get("thread_inputs") or {})
    messages = parse(given["rendered"], threads=threads)
    assert_subset(vector["expected"], {"messages": [m.to_dict() for m in messages]})
