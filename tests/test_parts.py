"""A bare ``pytest`` on a machine without the real parts skips their tests (the ones that start
child processes too) and says in one line how to get them; ``scripts/test.sh`` (which sets
``TETHER_TEST_ALL_PARTS``) turns the same absence into a failure."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import parts

ROOT = Path(__file__).parents[1]
# The SIGKILL trials start a child per trial; the several-writers test starts four at once.
CHILDREN = ["tests/stores/test_crash.py", "tests/stores/test_contract.py"]


def bare_pytest(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TETHER_PG_DSN", "TETHER_REDIS_URL", parts.ALL_PARTS)
    }
    env.update(extra, TETHER_CRASH_TRIALS="2")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_without_servers_the_tests_that_start_children_skip_and_say_how() -> None:
    done = bare_pytest(*CHILDREN, "-k", "(sigkill or several) and (postgres or redis)")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 skipped" in done.stdout and "failed" not in done.stdout and "error" not in done.stdout
    hint = [line for line in done.stdout.splitlines() if line.startswith("skipped for want of")]
    assert hint == [f"skipped for want of real parts: PostgreSQL (2), Redis (2); {parts.HOW}"]


def test_where_every_part_is_promised_an_absent_server_fails() -> None:
    done = bare_pytest(
        *CHILDREN, "-k", "(sigkill or several) and postgres", **{parts.ALL_PARTS: "1"}
    )
    assert done.returncode == 1
    assert "2 errors" in done.stdout and "TETHER_PG_DSN is not set" in done.stdout


def test_where_every_part_is_promised_any_skip_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("import pytest\n\ndef test_it():\n    pytest.skip('x')\n")
    run = [str(tmp_path / "test_one.py"), "-p", "conftest", "--rootdir", str(tmp_path)]
    tests = str(ROOT / "tests")
    assert bare_pytest(*run, PYTHONPATH=tests).returncode == 0
    done = bare_pytest(*run, PYTHONPATH=tests, **{parts.ALL_PARTS: "1"})
    assert done.returncode == 1
    assert f"a test skipped, and {parts.ALL_PARTS} promises none: failed" in done.stdout


def test_ci_runs_the_readme_test_command() -> None:
    setup = (ROOT / "README.md").read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", setup, re.DOTALL)
    assert len(commands) == 2 and commands[1] == "scripts/test.sh"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == commands[1]  # the last step, after lint, types and benches
