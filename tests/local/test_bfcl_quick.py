"""bench/bfcl.py end to end on the real local model: the cheapest item of every BFCL category
through every column, scored by BFCL's own checkers (issue 42: CI runs ``bench/bfcl.py --quick``;
it fails if a category errors, never on a score).

``bfcl-eval`` lives in the bench environment, not in tether's (its dependencies are heavy), so
the harness runs there, as a child process: ``scripts/bench-env.sh`` makes that environment (at
once when it is up to date). The test asserts that each category produced a score in each column
and that none errored, never what the scores are; then that a run killed while journaling an item
goes on from its journal to the same verdicts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "multi_turn_base",
]

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(1800)]


def _bench_python() -> str:
    """The bench environment's python, made or checked by scripts/bench-env.sh."""
    if not sys.platform.startswith("linux"):
        pytest.fail("the bench environment's script is for Linux (the local model's platform)")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "bench-env.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"scripts/bench-env.sh failed:\n{done.stderr[-4000:]}"
    return done.stdout.strip().splitlines()[-1]


def _quick(python: str, *options: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [python, str(ROOT / "bench" / "bfcl.py"), "--quick", *options],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"bench/bfcl.py failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done


def test_one_item_per_category_is_scored_in_every_column(tmp_path: Path) -> None:
    python, out, journal = _bench_python(), tmp_path / "bfcl.json", tmp_path / "bfcl.jsonl"
    # 1 item per category (the cheapest); a multi-turn item's first turn
    done = _quick(python, "--json", str(out), "--out", str(journal))
    report = json.loads(out.read_text())
    _check(report, done.stdout)
    # killed while journaling one item: a run on the same journal scores that item again and
    # reads every other one back, to the same report
    head, *rows = journal.read_text().splitlines()
    cut = next(r for r in rows if json.loads(r)["column"] == "raw")
    journal.write_text("\n".join([head, *(r for r in rows if r != cut), cut[: len(cut) // 2]]))
    again = _quick(python, "--json", str(out), "--out", str(journal))
    resumed = json.loads(out.read_text())
    assert resumed["results"] == report["results"] or _same_verdicts(resumed, report)
    assert len(journal.read_text().splitlines()) == 1 + len(rows) + 1  # the cut line, and again
    assert again.stdout.splitlines()[-5:] == done.stdout.splitlines()[-5:]


def _same_verdicts(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """The same items valid in every cell (the re-run item's seconds differ)."""

    def verdicts(report: dict[str, Any]) -> Any:
        return {
            (col, cat): [(i["id"], i["valid"]) for i in cell["items"]]
            for col, by_cat in report["results"].items()
            for cat, cell in by_cat.items()
        }

    return bool(verdicts(one) == verdicts(other))


def _check(report: dict[str, Any], done_stdout: str) -> None:
    assert list(report["items"]) == CATEGORIES
    assert all(len(ids) == 1 for ids in report["items"].values())
    assert report["multi_turn_turns"] == 1
    assert {"raw", "agent", "skill_agent"} <= set(report["columns"])
    for column, by_category in report["results"].items():
        assert list(by_category) == CATEGORIES, column
        for category, cell in by_category.items():
            where = f"{column} / {category}"
            assert cell["errors"] == [], where
            if column == "agent_repeats" and category != "multi_turn_base":
                assert cell["total"] == 0, where  # the repeats limit only differs on multi-turn
                continue
            assert cell["total"] == 1, where
            assert 0 <= cell["correct"] <= 1, where
            [item] = cell["items"]
            assert item["id"] == report["items"][category][0], where
            assert isinstance(item["valid"], bool), where
    # a column this tether cannot compute is named with its reason, never left out silently
    computed_or_skipped = set(report["columns"]) | set(report["skipped_columns"])
    assert computed_or_skipped == {
        "raw",
        "agent",
        "agent_constrained",
        "agent_repeats",
        "skill_agent",
    }
    # the printed table has a row per category, and the differences to the raw model
    for category in CATEGORIES:
        assert category in done_stdout
    assert "difference to the raw model" in done_stdout
