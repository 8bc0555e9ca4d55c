"""A SkillAgent's run survives whatever its model does (issue 22 §5): replies nested too deep,
handles that raise, arguments that are not an object, and skill results no deep copy or JSON
can take. Each ends on the stream, never as an exception out of ``run``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tether.skills import (
    AgentState,
    CallSkillAction,
    FinalAnswerAction,
    MaxIterationsObservation,
    MockModel,
    MockModelExhausted,
    ModelErrorObservation,
    Registry,
    SkillAgent,
    SkillObservation,
    ValidationErrorObservation,
)
from tether.skills.base import FunctionSkill
from tether.skills.protocol import MAX_REPLY_DEPTH, parse_action

pytestmark = pytest.mark.timeout(30)


class FakeClock:
    """A clock that never waits: it records the retry waits it was asked for."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def now(self) -> float:
        return sum(self.waits)

    def random(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


class Flaky:
    """A handle that raises ``errors`` in turn, then plays ``replies``."""

    def __init__(self, errors: list[BaseException], *replies: Any) -> None:
        self.errors = list(errors)
        self.replies = list(replies)
        self.calls = 0

    def generate(self, prompt: str, **kwargs: Any) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        reply = self.replies.pop(0)
        return reply if isinstance(reply, str) else json.dumps(reply)


runs: list[dict[str, Any]] = []


def purge(delete_all: bool = False, scope: str = "none") -> str:
    """Delete things (a skill whose defaults must never run by mistake)."""
    runs.append({"delete_all": delete_all, "scope": scope})
    return "purged"


@pytest.fixture
def registry() -> Registry:
    runs.clear()
    return Registry([FunctionSkill(purge)])


def call(args: Any) -> dict[str, Any]:
    return {"thought": "t", "action": {"skill_name": "purge", "args": args}}


def answer(text: str) -> dict[str, Any]:
    return {"thought": "done", "action": {"final_answer": text}}


def cyclic() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# -- 1. replies nested too deep ------------------------------------------------------------------


def test_args_nested_600_deep_are_refused_and_the_run_returns(registry: Registry) -> None:
    deep = "[" * 600 + "]" * 600
    raw = '{"thought": "t", "action": {"skill_name": "purge", "args": {"scope": ' + deep + "}}}"
    model = MockModel([raw, raw], then=answer("gave up"))
    state = SkillAgent(model, registry).run("q", max_iterations=2)
    refusal = state.stream[0]
    assert isinstance(refusal, ValidationErrorObservation)
    assert refusal.validator_name == "action_parse"
    assert f"deeper than {MAX_REPLY_DEPTH}" in refusal.feedback
    assert runs == []  # the skill never ran
    assert "deeper than" in model.prompts[1]  # the model is told why
    assert isinstance(state.stream[-1], MaxIterationsObservation)


def test_the_depth_cap_allows_ordinary_nesting(registry: Registry) -> None:
    inside = nested(MAX_REPLY_DEPTH - 4)  # reply, action and args add three levels
    event = parse_action(json.dumps(call({"scope": inside})), registry)
    assert isinstance(event, CallSkillAction) and event.args == {"scope": inside}
    too_deep = parse_action(json.dumps(call({"scope": nested(MAX_REPLY_DEPTH)})), registry)
    assert isinstance(too_deep, ValidationErrorObservation)


@pytest.mark.parametrize(
    ("result", "copied"),
    [
        pytest.param(threading.Lock, False, id="not-copyable"),
        pytest.param(lambda: nested(5000), False, id="too-deep-to-copy"),
        pytest.param(cyclic, True, id="cyclic"),
    ],
)
def test_a_result_no_copy_or_json_takes_still_ends_in_max_iterations(
    result: Callable[[], Any], copied: bool
) -> None:
    value = result()

    def give() -> Any:
        """Give the value."""
        return value

    model = MockModel(then={"action": {"skill_name": "give", "args": {}}})
    state = SkillAgent(model, Registry([FunctionSkill(give)])).run("q", max_iterations=2)
    last = state.stream[-1]
    assert isinstance(last, MaxIterationsObservation)
    assert len(last.partial_state) == 4  # every event kept, copied where a copy can be made
    observed = last.partial_state[1]
    assert isinstance(observed, SkillObservation)
    assert (observed.result is not value) is copied  # a deep copy where one can be made
    assert len(model.prompts) == 2  # the prompt was built with the result in it


def test_refusing_a_repeat_quotes_a_result_json_cannot_show() -> None:
    loop = cyclic()

    def give() -> Any:
        """Give the loop."""
        return loop

    again = {"action": {"skill_name": "give", "args": {}}}
    model = MockModel([again, again], then=answer("ok"))
    agent = SkillAgent(model, Registry([FunctionSkill(give)]), refuse_repeats=True)
    state = agent.run("q")
    refusal = state.stream[2]
    assert isinstance(refusal, ValidationErrorObservation)
    assert refusal.validator_name == "repeated_call"
    assert "that JSON cannot show: ValueError" in refusal.feedback
    assert state.final_answer == "ok"


# -- 2. a model handle that raises -----------------------------------------------------------------


def test_a_handle_that_keeps_raising_ends_the_run_with_an_observation(
    registry: Registry,
) -> None:
    clock = FakeClock()
    model = Flaky([ConnectionError("server down")] * 10)
    state = SkillAgent(model, registry, clock=clock).run("q", max_retries=3)
    assert isinstance(state, AgentState)
    assert model.calls == 4  # the first try and max_retries retries
    assert list(state.stream) == [ModelErrorObservation("ConnectionError: server down", attempts=4)]
    assert clock.waits == [1.0, 2.0, 4.0]  # backoff between the tries
    assert state.final_answer is None and runs == []


def test_a_handle_that_raises_once_is_retried_and_the_run_goes_on(registry: Registry) -> None:
    clock = FakeClock()
    model = Flaky([ValueError("bad weights")], call({"scope": "tmp"}), answer("done"))
    state = SkillAgent(model, registry, clock=clock).run("q")
    assert [type(e).__name__ for e in state.stream] == [
        "CallSkillAction",
        "SkillObservation",
        "FinalAnswerAction",
    ]
    assert model.calls == 3 and clock.waits == [1.0]
    assert runs == [{"delete_all": False, "scope": "tmp"}]


def test_no_retries_means_one_try(registry: Registry) -> None:
    model = Flaky([RuntimeError("boom")] * 3)
    state = SkillAgent(model, registry, clock=FakeClock()).run("q", max_retries=0)
    assert list(state.stream) == [ModelErrorObservation("RuntimeError: boom", attempts=1)]
    assert model.calls == 1


def test_a_failure_after_some_steps_keeps_them(registry: Registry) -> None:
    model = Flaky([], call({"scope": "a"}))  # the second generate pops from an empty list
    state = SkillAgent(model, registry, clock=FakeClock()).run("q", max_retries=1)
    *done, last = list(state.stream)
    assert [type(e).__name__ for e in done] == ["CallSkillAction", "SkillObservation"]
    assert isinstance(last, ModelErrorObservation) and last.attempts == 2
    assert last.message.startswith("IndexError")


async def test_step_reports_a_raising_handle_instead_of_raising(registry: Registry) -> None:
    agent = SkillAgent(Flaky([TimeoutError("slow")]), registry)
    event = await agent.step_async(AgentState("q"))
    assert event == ModelErrorObservation("TimeoutError: slow")


def test_an_exhausted_mock_model_is_a_caller_bug_and_raises(registry: Registry) -> None:
    with pytest.raises(MockModelExhausted):
        SkillAgent(MockModel(), registry, clock=FakeClock()).run("q")


# -- 3. args that are not an object ----------------------------------------------------------------


@pytest.mark.parametrize("args", ["delete_all=true", [True], None, 1, True, ""])
def test_args_that_are_not_an_object_are_refused_and_the_skill_never_runs(
    registry: Registry, args: Any
) -> None:
    model = MockModel([call(args)], then=answer("ok"))
    state = SkillAgent(model, registry).run("q")
    refusal = state.stream[0]
    assert isinstance(refusal, ValidationErrorObservation)
    assert refusal.validator_name == "action_parse"
    assert refusal.feedback.startswith("error_type: invalid_args\n")
    assert "args must be a JSON object" in refusal.feedback
    assert runs == []  # never run with its defaults
    assert "invalid_args" in model.prompts[1]
    assert state.final_answer == "ok"


def test_absent_args_mean_no_arguments(registry: Registry) -> None:
    event = parse_action(json.dumps({"action": {"skill_name": "purge"}}), registry)
    assert event == CallSkillAction(skill_name="purge", args={}, thought="")


def test_an_object_args_is_passed_as_it_is(registry: Registry) -> None:
    event = parse_action(json.dumps(call({"scope": "tmp"})), registry)
    assert event == CallSkillAction(skill_name="purge", args={"scope": "tmp"}, thought="t")
    assert isinstance(parse_action(json.dumps(answer("x")), registry), FinalAnswerAction)
