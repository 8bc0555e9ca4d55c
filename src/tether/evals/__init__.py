"""Evaluations: know whether an agent got better or worse.

::

    from tether.evals import Case, Contains, Dataset, ToolCalls, evaluate

    dataset = Dataset([
        Case("What is the weather in Oslo?", evaluators=[ToolCalls(["get_weather"])]),
        Case("What is 17 + 25?", expected="42", evaluators=[Contains()]),
    ])
    report = await evaluate(agent, dataset, repeat=3)
    print(report.passed, report.to_json())

A dataset is also a YAML/JSON file (``Dataset.load``); ``tether eval cases.yaml --agent
module:agent --baseline report.json`` runs one from the command line and fails on a regression.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from on first use.
_HOMES = {
    "Case": "dataset",
    "Change": "compare",
    "Comparison": "compare",
    "Contains": "checks",
    "Dataset": "dataset",
    "Equals": "checks",
    "EvalContext": "grading",
    "EvalError": "errors",
    "Evaluator": "grading",
    "Expected": "paths",
    "Judge": "judge",
    "Regex": "checks",
    "Report": "report",
    "RunResult": "results",
    "CaseResult": "results",
    "CallMade": "trajectory",
    "ToolCalls": "paths",
    "Trajectory": "trajectory",
    "Typed": "checks",
    "Verdict": "grading",
    "Within": "paths",
    "check": "gate",
    "evaluate": "run",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .checks import Contains as Contains
    from .checks import Equals as Equals
    from .checks import Regex as Regex
    from .checks import Typed as Typed
    from .compare import Change as Change
    from .compare import Comparison as Comparison
    from .dataset import Case as Case
    from .dataset import Dataset as Dataset
    from .errors import EvalError as EvalError
    from .gate import check as check
    from .grading import EvalContext as EvalContext
    from .grading import Evaluator as Evaluator
    from .grading import Verdict as Verdict
    from .judge import Judge as Judge
    from .paths import Expected as Expected
    from .paths import ToolCalls as ToolCalls
    from .paths import Within as Within
    from .report import Report as Report
    from .results import CaseResult as CaseResult
    from .results import RunResult as RunResult
    from .run import evaluate as evaluate
    from .trajectory import CallMade as CallMade
    from .trajectory import Trajectory as Trajectory

__getattr__ = _lazy_names(__name__, _HOMES)
