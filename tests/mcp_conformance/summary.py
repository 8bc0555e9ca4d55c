"""The MCP conformance suite's results, read from its ``checks.json`` files: one line per
scenario (its checks passed and failed, and whether it is expected to fail), then the total as
``N passed, M failed`` alone on the last line; ``summary.json`` beside the results keeps the same
for the test. Run by ``scripts/mcp-conformance.sh``:
``summary.py RESULTS_DIR EXPECTED_FAILURES_YML``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

_STAMP = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")  # the suite's "-2026-01-31T12-00-00-000Z"


def expected_failures(path: Path) -> dict[str, set[str]]:
    """The scenarios the file lists under ``server:`` and ``client:`` (the suite's format)."""
    listed: dict[str, set[str]] = {"server": set(), "client": set()}
    side = None
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if line.endswith(":") and not line.startswith((" ", "-")):
            side = line[:-1]
        elif line.strip().startswith("- ") and side in listed:
            listed[side].add(line.strip()[2:].strip().strip("'\""))
    return listed


def scenario_name(folder: Path, root: Path, side: str) -> str:
    """A result folder's scenario: ``server-tools-list-<stamp>``, ``auth/basic-cimd-<stamp>``."""
    name = _STAMP.sub("", folder.relative_to(root).as_posix())
    return name.removeprefix("server-") if side == "server" else name


def read_side(root: Path, side: str) -> dict[str, dict[str, Any]]:
    """Each scenario of one side: its checks counted by status, and the ids of those that failed
    (a scenario run twice keeps its last run)."""
    scenarios: dict[str, dict[str, Any]] = {}
    for checks_file in sorted((root / side).rglob("checks.json")):
        checks = json.loads(checks_file.read_text())
        statuses = [c["status"] for c in checks]
        scenarios[scenario_name(checks_file.parent, root / side, side)] = {
            "passed": statuses.count("SUCCESS"),
            "failed": statuses.count("FAILURE"),
            "warnings": statuses.count("WARNING"),
            "failing": sorted({c["id"] for c in checks if c["status"] in ("FAILURE", "WARNING")}),
        }
    return scenarios


def main(results: Path, expected_path: Path) -> None:
    expected = expected_failures(expected_path)
    summary = {side: read_side(results, side) for side in ("server", "client")}
    summary["expected"] = {side: sorted(names) for side, names in expected.items()}
    (results / "summary.json").write_text(json.dumps(summary, indent=2))
    passed = failed = 0
    for side in ("server", "client"):
        for name, counts in sorted(summary[side].items()):
            passed += counts["passed"]
            failed += counts["failed"]
            total = counts["passed"] + counts["failed"]
            mark = "expected to fail" if name in expected[side] else ""
            warned = f" ({counts['warnings']} warnings)" if counts["warnings"] else ""
            print(f"{side:6}  {name:42} {counts['passed']:>2}/{total:<2}{warned} {mark}".rstrip())
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
