"""Properties of the SkillAgent door on untrusted model output: any reply parses to an action
whose args are an object no deeper than the cap, or to a validation error; and any script of
replies and handle failures gives a run that returns, never an exception."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.skills import (
    Action,
    AgentState,
    CallSkillAction,
    FinalAnswerAction,
    MaxIterationsObservation,
    ModelErrorObservation,
    Observation,
    Registry,
    SkillAgent,
    SkillObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from tether.skills.base import FunctionSkill
from tether.skills.protocol import MAX_REPLY_DEPTH, parse_action

pytestmark = pytest.mark.timeout(300)

FUZZ = fuzz(200)


def look(key: str = "all", n: int = 1) -> Any:
    """Look a key up."""
    return {"key": key, "n": n}


REGISTRY = Registry([FunctionSkill(look)])
NAMES = st.sampled_from(["look", "other", "", 3, None])
SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["key", "n", "x"]) | st.text(max_size=4), inner, max_size=3
        )
    ),
    max_leaves=10,
)


def deep(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


DEPTHS = st.sampled_from([MAX_REPLY_DEPTH - 3, MAX_REPLY_DEPTH - 2, MAX_REPLY_DEPTH, 600])
DEEP = st.builds(deep, DEPTHS | st.integers(0, 600), JSON)
ARGS = JSON | DEEP | st.builds(lambda v: {"key": v}, DEEP)
REPLIES = st.one_of(
    st.builds(
        lambda n, a, t: {"thought": t, "action": {"skill_name": n, "args": a}}, NAMES, ARGS, JSON
    ),
    st.builds(lambda a: {"action": {"final_answer": a}}, JSON),
    st.builds(lambda v: {"action": v}, JSON),
    JSON,
).map(json.dumps) | st.text(max_size=60)


def depth_of(value: Any) -> int:
    stack, most = [(value, 1)], 0
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            most = max(most, level)
            stack.extend((child, level + 1) for child in item)
    return most


@FUZZ
@given(REPLIES)
def test_any_reply_is_a_sound_action_or_a_validation_error(raw: str) -> None:
    event = parse_action(raw, REGISTRY)
    assert isinstance(event, CallSkillAction | FinalAnswerAction | ValidationErrorObservation)
    if isinstance(event, CallSkillAction):
        assert event.skill_name == "look" and isinstance(event.args, dict)
        assert depth_of(event.args) <= MAX_REPLY_DEPTH - 2  # the reply and action levels
    if isinstance(event, FinalAnswerAction):
        assert event.answer.strip()


@FUZZ
@given(NAMES, ARGS)
def test_a_skill_call_carries_the_args_the_model_sent_or_is_refused(name: Any, args: Any) -> None:
    raw = json.dumps({"thought": "t", "action": {"skill_name": name, "args": args}})
    event = parse_action(raw, REGISTRY)
    if isinstance(event, CallSkillAction):  # never other args than those sent (never {})
        assert event.args == args and isinstance(args, dict)
        assert depth_of(args) <= MAX_REPLY_DEPTH - 2
    else:
        assert isinstance(event, ValidationErrorObservation)
        assert name != "look" or not isinstance(args, dict) or depth_of(args) > MAX_REPLY_DEPTH - 2


class FakeClock:
    def now(self) -> float:
        return 0.0

    def random(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        return None


class Script:
    """A handle that plays replies, raising those that are exceptions."""

    def __init__(self, replies: list[str | Exception]) -> None:
        self.replies = replies

    def generate(self, prompt: str, **kwargs: Any) -> str:
        reply = self.replies.pop(0) if self.replies else '{"action": {"final_answer": "end"}}'
        if isinstance(reply, Exception):
            raise reply
        return reply


FAILURES = st.sampled_from([ConnectionError("down"), ValueError("bad"), KeyError("k")])


@FUZZ
@given(st.lists(REPLIES | FAILURES, max_size=6), st.integers(1, 4), st.integers(0, 2))
def test_any_script_gives_a_run_that_returns(
    replies: list[str | Exception], max_iterations: int, max_retries: int
) -> None:
    agent = SkillAgent(Script(list(replies)), REGISTRY, clock=FakeClock())
    state = agent.run("q", max_iterations=max_iterations, max_retries=max_retries)
    assert isinstance(state, AgentState)
    events = list(state.stream)
    assert all(isinstance(e, Action | Observation) for e in events)
    last = events[-1]
    assert isinstance(last, FinalAnswerAction | MaxIterationsObservation | ModelErrorObservation)
    for before, after in pairwise(events):
        if isinstance(before, CallSkillAction):  # a call is always followed by what came of it
            assert isinstance(after, SkillObservation | ToolErrorObservation)
            assert isinstance(before.args, dict)
