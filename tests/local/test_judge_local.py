"""The LLM judge on the real local model: at temperature 0 it tells answers that meet a rubric
from answers that do not, through tether's typed output (every grade validates)."""

from __future__ import annotations

import pytest

from tether.evals import Judge
from tether.evals.grading import EvalContext
from tether.evals.trajectory import CallMade, Trajectory
from tether.local import LocalModel

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

RUBRIC = "The answer tells the customer that there are no plums to buy (none in stock)."
CALLS = (CallMade("stock", {"item": "plums"}, False, "0"),)


async def test_the_local_model_grades_good_and_bad_answers_apart(local_model: LocalModel) -> None:
    judge = Judge(RUBRIC, model=local_model.chat_transport(temperature=0, max_tokens=200))
    verdicts = {}
    for answer in (
        "No, you cannot buy plums today.",
        "There are 0 plums in stock.",
        "Yes, we have 20 plums.",
        "Plums are a fruit.",
    ):
        ctx = EvalContext("plums", "Can I buy plums today?", None, {}, answer, Trajectory(CALLS))
        verdict = await judge.evaluate(ctx)
        assert verdict.score is not None and 0.0 <= verdict.score <= 1.0
        assert verdict.reason
        verdicts[answer] = verdict.passed
    assert verdicts == {
        "No, you cannot buy plums today.": True,
        "There are 0 plums in stock.": True,
        "Yes, we have 20 plums.": False,
        "Plums are a fruit.": False,
    }
