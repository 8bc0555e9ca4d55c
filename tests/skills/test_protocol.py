"""The action protocol's parser treats the model's reply as untrusted text: any string gives an
action or a validation error (never an exception, never an invented answer), in linear time."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.skills import (
    CallSkillAction,
    FinalAnswerAction,
    Registry,
    ValidationErrorObservation,
)
from tether.skills.base import FunctionSkill
from tether.skills.protocol import MAX_REPLY_CHARS, parse_action


def lookup(key: str) -> str:
    """Look a key up."""
    return key


pytestmark = pytest.mark.timeout(60)
REGISTRY = Registry([FunctionSkill(lookup)])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@fuzz(300)
@given(st.text(max_size=400))
def test_any_text_is_an_action_or_a_validation_error(raw: str) -> None:
    event = parse_action(raw, REGISTRY)
    assert isinstance(event, CallSkillAction | FinalAnswerAction | ValidationErrorObservation)
    if isinstance(event, FinalAnswerAction):
        assert event.answer.strip()  # an empty answer is refused, never accepted


@fuzz(300)
@given(json_values, st.sampled_from(["lookup", "other", 3, None]))
def test_any_json_shape_is_an_action_or_a_validation_error(args: object, name: object) -> None:
    for reply in (
        {"thought": "t", "action": {"skill_name": name, "args": args}},
        {"action": {"final_answer": args}},
        {"action": args},
        args,
    ):
        event = parse_action(json.dumps(reply), REGISTRY)
        assert isinstance(event, CallSkillAction | FinalAnswerAction | ValidationErrorObservation)
        if isinstance(event, CallSkillAction):
            assert event.skill_name == "lookup" and isinstance(event.args, dict)


def test_huge_and_hostile_replies_stay_fast() -> None:
    hostile = [
        "{" * 100_000,
        "[" * 100_000,
        '{"a": ' * 50_000,
        "x" * (MAX_REPLY_CHARS + 1),
        "{" + " " * 150_000,
    ]
    for raw in hostile:  # the module's timeout catches a parser that is not linear
        event = parse_action(raw, REGISTRY)
        assert isinstance(event, ValidationErrorObservation), raw[:20]
