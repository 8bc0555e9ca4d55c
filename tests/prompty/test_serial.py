"""The door's one serialiser: camelCase keys, the per-field rules and the key order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from tether.prompty.serial import (
    FLATTEN,
    OMIT_EMPTY,
    SKIP,
    JsonShape,
    SparseJsonShape,
    rule,
    to_dict,
)


@dataclass(frozen=True, slots=True)
class _Leaf(SparseJsonShape):
    media_type: str | None = None


@dataclass(frozen=True, slots=True)
class _Node(JsonShape):
    kind: str
    leaf_list: tuple[_Leaf, ...] = ()
    by_name: Mapping[str, Any] = field(default_factory=dict)
    maybe: str | None = None
    tags: tuple[str, ...] = field(default=(), metadata=OMIT_EMPTY)
    hidden: int = field(default=0, metadata=SKIP)
    renamed: int = field(default=1, metadata=rule(key="other"))
    extra: Mapping[str, Any] = field(default_factory=dict, metadata=FLATTEN)
    _json_keys = ("renamed", ..., "size")

    @property
    def size(self) -> int:
        return len(self.leaf_list)


def test_fields_become_camel_case_keys_with_their_rules_in_the_given_order() -> None:
    node = _Node(
        "k",
        (_Leaf("a/b"), _Leaf()),
        {"x": _Leaf("c"), "y": (1, 2)},
        extra={"kind": "lost", "more": 1},
    )
    assert list(to_dict(node).items()) == [
        ("kind", "k"),
        ("more", 1),
        ("other", 1),
        ("leafList", [{"mediaType": "a/b"}, {}]),
        ("byName", {"x": {"mediaType": "c"}, "y": (1, 2)}),
        ("maybe", None),
        ("size", 2),
    ]
    assert node.to_dict() == to_dict(node)


def test_a_key_order_naming_no_attribute_is_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class Bad(JsonShape):
        a: int = 0
        _json_keys = ("b", ...)

    with pytest.raises(AttributeError, match="names no attribute 'b'"):
        Bad().to_dict()
