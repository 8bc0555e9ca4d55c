"""The README quickstart and the examples run as written (the docs site's examples run in
test_docs_site.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], **kw: object) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
        **kw,  # type: ignore[arg-type]
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_readme_quickstart_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    lines = code.group(1).strip().splitlines()
    assert len(lines) <= 15
    assert _run(["-c", code.group(1)]).strip() == "2 + 3 = 5"


def test_quickstart_example_runs() -> None:
    out = _run([str(ROOT / "examples" / "quickstart.py")])
    assert "-> convert_km({'km': 42.195})" in out
    assert "<- weekday: Sunday" in out
    assert out.strip().endswith("A marathon is 26.219 miles, and 2026-11-22 is a Sunday.")
