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


def _setup(text: str) -> str:
    return text.split("## Set up", 1)[1].split("The reliability suite", 1)[0]


def test_the_install_lines_agree_everywhere() -> None:
    """The README and the getting-started page give the same set-up, the user's install is
    the first command, and every ``pip install`` line in the docs and examples names extras
    the project has."""
    import tomllib

    readme = (ROOT / "README.md").read_text()
    assert _setup(readme) == _setup((ROOT / "docs" / "getting-started.md").read_text())
    first = re.search(r"```bash\n(.*?)\n```", _setup(readme), re.DOTALL)
    assert first is not None and "pip install -e '.[local,serve]'" in first.group(1)
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    texts = [readme, *(p.read_text() for p in (ROOT / "docs").rglob("*.md"))]
    texts += [p.read_text() for p in (ROOT / "examples").glob("*.py")]
    named = {
        extra.strip()
        for text in texts
        for group in re.findall(r"pip install [^\n]*?\[([a-z0-9_,\- ]+)\]", text)
        for extra in group.split(",")
    }
    assert named and named <= extras, named - extras
