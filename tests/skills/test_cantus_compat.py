"""cantus code runs unchanged: ``register_validator`` (cantus's ``protocols.validator``) and
``Registry.KINDS``, ``EvaluatorOptimizer``'s ``generate(input, feedback)``, and
``JsonLinesPersistence.append`` refusing what JSON cannot hold before it touches the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.skills import (
    EvaluatorOptimizer,
    FinalAnswerAction,
    JsonLinesPersistence,
    Registry,
    Result,
    SkillAgent,
    SkillObservation,
    ValidationErrorObservation,
    get_registry,
    register_validator,
    skill,
)
from tether.skills import registry as registry_module
from tether.skills.hooks import ReservedValidatorNameError, Validator

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def clean_registries() -> Iterator[None]:
    get_registry().clear()
    registry_module._VALIDATORS.clear()
    yield
    get_registry().clear()
    registry_module._VALIDATORS.clear()


class Scripted:
    """A ModelHandle that plays JSON replies in order."""

    def __init__(self, *replies: dict[str, Any]) -> None:
        self.replies = list(replies)

    def generate(self, prompt: str, **kwargs: Any) -> str:
        return json.dumps(self.replies.pop(0))


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"thought": "t", "action": {"skill_name": name, "args": args}}


def answer(text: str) -> dict[str, Any]:
    return {"thought": "done", "action": {"final_answer": text}}


def positive(value: int) -> Result:
    return Result.success() if value > 0 else Result.failure("must be above zero")


# -- register_validator ----------------------------------------------------------------------------


def test_register_validator_names_a_post_hook_the_model_sees_refusals_of() -> None:
    check = register_validator("above_zero", positive)
    assert isinstance(check, Validator) and check.name == "above_zero"
    assert check(3) == Result.success() and check(-1) == Result.failure("must be above zero")

    @skill(post_hook="above_zero")  # by its registered name
    def minus(a: int, b: int) -> int:
        """Subtract b from a."""
        return a - b

    model = Scripted(call("minus", a=1, b=2), call("minus", a=2, b=1), answer("1"))
    state = SkillAgent(model).run("2 - 1?")
    assert state.stream[1] == ValidationErrorObservation("above_zero", "must be above zero")
    assert state.stream[3] == SkillObservation("minus", 1)
    assert state.stream[4] == FinalAnswerAction(answer="1", thought="done")


def test_register_validator_as_a_decorator_with_and_without_a_name() -> None:
    @register_validator("non_empty")
    def check_text(value: str) -> Result:
        return Result.success() if value else Result.failure("empty")

    @register_validator
    def short(value: str) -> Result:
        return Result.success() if len(value) < 5 else Result.failure("too long")

    assert check_text.name == "non_empty" and short.name == "short"
    assert registry_module._post_hook("non_empty") is check_text
    assert registry_module._post_hook("short") is short
    again = register_validator("short", positive)  # a name registered again is replaced
    assert registry_module._post_hook("short") is again


@pytest.mark.parametrize("name", ["action_parse", "non_empty_final_answer"])
def test_register_validator_refuses_the_agents_own_check_names(name: str) -> None:
    with pytest.raises(ReservedValidatorNameError, match=name):
        register_validator(name, positive)
    with pytest.raises(ValueError, match="the agent's own check"):
        register_validator(name)
    positive.__name__, real = name, positive.__name__
    try:
        with pytest.raises(ReservedValidatorNameError):
            register_validator(positive)
    finally:
        positive.__name__ = real
    assert registry_module._VALIDATORS == {}


def test_register_validator_bad_input_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="non-empty name"):
        register_validator("  ", positive)
    with pytest.raises(TypeError, match="must be callable"):
        register_validator("x", 3)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="no validator is registered as 'missing'"):
        skill(post_hook="missing")


def test_registry_kinds_is_the_class_attribute_skill_only() -> None:
    assert Registry.KINDS == ("skill",)
    assert Registry().KINDS == ("skill",)
    assert "KINDS" in vars(Registry)
    with pytest.raises(ValueError, match="register_validator"):
        Registry().register("validator", register_validator("above_zero", positive))


# -- EvaluatorOptimizer ----------------------------------------------------------------------------


def test_the_generator_gets_the_input_and_the_last_feedback_none_at_first() -> None:
    calls: list[tuple[str, str | None]] = []

    def generate(topic: str, feedback: str | None) -> str:  # no default, as in cantus
        calls.append((topic, feedback))
        return f"{topic} draft {len(calls)}"

    def evaluate(candidate: str) -> Result:
        return Result.success() if candidate.endswith("3") else Result.failure(f"not {candidate}")

    assert EvaluatorOptimizer(generate, evaluate).run("cats") == "cats draft 3"
    assert calls == [("cats", None), ("cats", "not cats draft 1"), ("cats", "not cats draft 2")]


def test_a_skill_as_generator_is_asked_for_what_it_takes() -> None:
    @skill
    def draft(topic: str) -> str:
        """Draft on a topic."""
        return topic.upper()

    @skill
    def redraft(topic: str, feedback: str | None) -> str:
        """Draft again with feedback."""
        return f"{topic}:{feedback}"

    assert EvaluatorOptimizer(draft, bool).run("cats") == "CATS"
    done = EvaluatorOptimizer(redraft, lambda c: Result.failure("more"), max_iters=2)
    assert done.run_with_history("cats")[0] == "cats:more"


# -- JsonLinesPersistence --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        object(),
        {"when": object()},
        SkillObservation("look", object()),
        SkillObservation("look", {1, 2}),
    ],
    ids=["object", "in-a-dict", "skill-result", "a-set"],
)
def test_append_of_what_json_cannot_hold_raises_before_touching_the_file(
    tmp_path: Path, event: Any
) -> None:
    fresh = tmp_path / "new" / "events.jsonl"
    with pytest.raises(TypeError, match=r"cannot write .* as JSON Lines"):
        JsonLinesPersistence(fresh).append(event)
    assert not fresh.exists() and not fresh.parent.exists()

    kept = tmp_path / "kept.jsonl"
    store = JsonLinesPersistence(kept)
    store.append(SkillObservation("look", "sunny"))
    before = kept.read_bytes()
    with pytest.raises(TypeError):
        store.append(event)
    assert kept.read_bytes() == before
    assert list(store.load_stream()) == [SkillObservation("look", "sunny")]
