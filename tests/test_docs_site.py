"""Every code example on the docs site runs as written, and prints what its page says it prints;
the README and the docs agree.

The convention for the pages under ``docs/``:

- Every fenced ```` ```python ```` block is an example: a whole program, run as written in a
  fresh interpreter (``sys.executable``, the repository root as working directory, 60 s at most).
  It must exit with status 0.
- A ```` ```text ```` block right after it (nothing but blank lines between) is its output: what
  the program prints to stdout, exactly (trailing whitespace aside). In that block ``...`` stands
  for any text, for figures that change from run to run (durations, ids).
- An example on the real local model has the line ``<!-- local model -->`` right before its
  fence: it runs with the tests that use the local model (its weights are fetched once), with
  more time.
- An example that cannot run here (it needs a provider's key) has the line
  ``<!-- not run: why -->`` right before its fence; the reason is required, and the test below
  keeps the number of such blocks small.
- Other blocks (``bash``, ``console``, ``yaml``, ``toml``, ``text`` on its own) are commands and
  files, not examples.

Blocks are found at the start of a line only (not inside lists or admonitions), so that what the
page shows is exactly what runs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->")
LOCAL = "<!-- local model -->"
MAX_NOT_RUN = 3


@dataclass(frozen=True)
class Block:
    page: str  # relative to docs/
    index: int  # among the page's python blocks, from 0
    code: str
    output: str | None  # the text block that follows, if any
    not_run: str | None  # the reason given, for a block that does not run
    local: bool = False  # it runs on the real local model


def _fences(text: str) -> list[tuple[str, str, int, int]]:
    """(language, body, first line, last line) of each top-level fenced block."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        opened = re.fullmatch(r"```(\w*)\s*", lines[i])
        if opened is None:
            i += 1
            continue
        end = lines.index("```", i + 1)
        found.append((opened.group(1), "\n".join(lines[i + 1 : end]) + "\n", i, end))
        i = end + 1
    return found


def _blocks(path: Path) -> list[Block]:
    text = path.read_text()
    lines = text.splitlines()
    fences = _fences(text)
    blocks: list[Block] = []
    for n, (language, body, start, end) in enumerate(fences):
        if language != "python":
            continue
        output = None
        if n + 1 < len(fences):
            nxt_language, nxt_body, nxt_start, _ = fences[n + 1]
            between = lines[end + 1 : nxt_start]
            if nxt_language == "text" and not any(line.strip() for line in between):
                output = nxt_body
        before = lines[start - 1] if start else ""
        reason = NOT_RUN.fullmatch(before.strip())
        blocks.append(
            Block(
                page=path.relative_to(DOCS).as_posix(),
                index=len(blocks),
                code=body,
                output=output,
                not_run=reason.group(1) if reason else None,
                local=before.strip() == LOCAL,
            )
        )
    return blocks


def _all_blocks() -> list[Block]:
    return [block for page in sorted(DOCS.rglob("*.md")) for block in _blocks(page)]


BLOCKS = _all_blocks()
RUN = [b for b in BLOCKS if b.not_run is None and not b.local]
ON_LOCAL = [b for b in BLOCKS if b.local]


def _lines(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _matches(expected: str, out: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in _lines(expected).split("..."))
    return re.fullmatch(pattern, _lines(out), re.DOTALL) is not None


@pytest.mark.parametrize("block", RUN, ids=[f"{b.page}:{b.index}" for b in RUN])
def test_the_example_runs_and_prints_what_the_page_shows(block: Block) -> None:
    _run_example(block, 60)


@pytest.mark.local_model
@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", ON_LOCAL, ids=[f"{b.page}:{b.index}" for b in ON_LOCAL])
def test_the_local_model_example_runs(block: Block, local_model: object) -> None:
    """Run after the session's local model is up: its weights are here, its platform can run
    it (the example starts a server of its own)."""
    _run_example(block, 540)


def _run_example(block: Block, seconds: float) -> None:
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        capture_output=True,
        text=True,
        timeout=seconds,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, f"{block.page}, python block {block.index}:\n{done.stderr}"
    if block.output is not None:
        assert _matches(block.output, done.stdout), (
            f"{block.page}, python block {block.index} printed:\n{done.stdout}\n"
            f"the page shows:\n{block.output}"
        )


def test_the_site_has_examples_and_few_that_do_not_run() -> None:
    assert len(RUN) >= 30
    assert ON_LOCAL, "the local model's example is on the providers page"
    skipped = [f"{b.page}:{b.index} ({b.not_run})" for b in BLOCKS if b.not_run]
    assert len(skipped) <= MAX_NOT_RUN, skipped
    # most examples show their output
    assert sum(b.output is not None for b in RUN) >= len(RUN) * 2 // 3


def test_a_marker_sits_only_before_a_python_block() -> None:
    for page in DOCS.rglob("*.md"):
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            if "not run:" in line:
                assert NOT_RUN.fullmatch(line.strip()), f"{page.name}:{n + 1}"
                assert lines[n + 1] == "```python", f"{page.name}:{n + 1}"


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_quickstart_is_the_getting_started_one() -> None:
    readme = _section((ROOT / "README.md").read_text(), "Quickstart")
    page = _section((DOCS / "getting-started.md").read_text(), "Quickstart")
    code = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(code) == 1 and code[0] in page


def test_the_readme_set_up_commands_are_the_getting_started_ones() -> None:
    readme = _section((ROOT / "README.md").read_text(), "Set up")
    page = (DOCS / "getting-started.md").read_text()
    commands = re.findall(r"```bash\n(.+?)\n```", readme, re.S)
    assert len(commands) == 2
    for command in commands:
        assert f"```bash\n{command}\n```" in page


def test_the_readme_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
