"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``), both ways, as
``scripts/mcp-conformance.sh`` runs it: its server scenarios against ``tether mcp-serve --http``,
its client scenarios through tether's own MCP client (``everything_client.py``). Every scenario
the suite has runs; each one not in ``expected-failures.yml`` passes every check, and each one
listed still fails (a fixed one must leave the list). The suite comes from ``scripts/parts.sh``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from parts import absent

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mcp-conformance.sh"
CACHE = Path(
    os.environ.get("TETHER_CACHE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether"
)
MODULES = CACHE / "npm-conformance" / "node_modules"
NODE = MODULES / "node" / "bin" / "node"
SUITE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def listed_scenarios(side: str) -> set[str]:
    """The scenarios the installed suite has for ``side`` (``server`` or ``client``)."""
    out = subprocess.run(
        [str(NODE), str(SUITE), "list", f"--{side}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return set(re.findall(r"^  - (\S+)", out, re.MULTILINE))


@pytest.mark.timeout(300)
def test_every_scenario_not_expected_to_fail_passes_and_each_listed_one_fails(
    tmp_path: Path,
) -> None:
    if not (NODE.exists() and SUITE.exists()):
        absent("the MCP conformance suite (npm @modelcontextprotocol/conformance, with node)")
    done = subprocess.run(
        [str(SCRIPT), str(tmp_path)],
        env={**os.environ, "PYTHON": sys.executable, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=280,
        check=False,
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    counted = re.fullmatch(r"(\d+) passed, (\d+) failed", last)
    assert counted, f"no closing line: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    passed = failed = 0
    for side in ("server", "client"):
        ran, expected = summary[side], set(summary["expected"][side])
        assert set(ran) == listed_scenarios(side), f"{side}: not every scenario ran"
        assert expected <= set(ran), f"{side}: listed but no such scenario: {expected - set(ran)}"
        for name, counts in ran.items():
            passed, failed = passed + counts["passed"], failed + counts["failed"]
            if name in expected:
                assert counts["failing"], f"{side} {name} passes now: take it off the list"
            else:
                assert counts["passed"] and not counts["failing"], f"{side} {name}: {counts}"
    assert (int(counted[1]), int(counted[2])) == (passed, failed)
    assert done.returncode == 0, done.stdout[-3000:]  # the suite's own baseline verdict agrees
