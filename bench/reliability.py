"""Fuzz every parser of untrusted input with its property tests at full strength, and print a table.

    python bench/reliability.py                 # 10,000 examples per property test
    python bench/reliability.py --quick         # 200 each: proves the run still works
    python bench/reliability.py --examples 500  # any other count
    python bench/reliability.py sse repair      # only the modules whose path holds these words

Each module runs alone in ``pytest -m hypothesis`` (its property tests only) with
``$TETHER_FUZZ_EXAMPLES`` set, which ``tests/fuzzing.py`` hands to every test. The examples column
is what Hypothesis reports it ran (a test whose space is exhausted runs fewer; a module still
holding a fixed count shows that count). Exits 1 if any module fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES = {  # test module -> the parser of untrusted input its properties fuzz
    "tests/tools/test_repair.py": "tool-argument repair",
    "tests/transports/test_sse.py": "SSE framing",
    "tests/transports/test_decoder_robustness.py": "provider JSON decoders",
    "tests/transports/test_openai_chat.py": "OpenAI chat stream framing",
    "tests/test_data.py": "message and event JSON",
    "tests/transports/test_retry_policy.py": "retry backoff",
    "tests/prompty/test_load_fuzz.py": ".prompty loading",
    "tests/prompty/test_render_fuzz.py": ".prompty rendering",
    "tests/skills/test_protocol.py": "SkillAgent action parser",
    "tests/skills/test_agent_fuzz.py": "SkillAgent replies",
    "tests/skills/test_persistence.py": "SkillAgent event files",
    "tests/session/test_snapshots.py": "session snapshot import",
    "tests/cli/test_trace_reader_fuzz.py": "tether trace reader",
}

_OUTCOME = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_SUMMARY = re.compile(r"\bin [\d.]+s\b")  # pytest's last line: "3 passed, 9 deselected in 2.1s"
_GENERATED = re.compile(r"during generate phase.*?\n\s*- Typical.*?\n\s*- (\d+) passing", re.S)


@dataclass
class Outcome:
    """One module's run: its test counts, the examples each test ran, and the time taken."""

    module: str
    parser: str
    counts: dict[str, int]
    examples: list[int]
    seconds: float
    code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def row(self) -> str:
        tests = sum(self.counts.values())
        failed = sum(self.counts.get(word, 0) for word in ("failed", "error", "errors"))
        low, high = (min(self.examples), max(self.examples)) if self.examples else (0, 0)
        examples = f"{high:,}" if low == high else f"{low:,}-{high:,}"
        result = f"{self.counts.get('passed', 0)}/{failed}" if tests else f"exit {self.code}"
        return (
            f"{self.module:44} {self.parser:28} {tests:>5} {examples:>13} "
            f"{result:>7} {self.seconds:9.1f}"
        )


def pytest_command(module: str) -> list[str]:
    """pytest on ``module``'s property tests, with pytest-timeout off: a module's own timeout marks
    are sized for its quick count (the caller bounds the whole process instead)."""
    command = [sys.executable, "-m", "pytest", module, "-q", "-m", "hypothesis"]
    command += ["--hypothesis-show-statistics", "-p", "no:cacheprovider"]
    if importlib.util.find_spec("pytest_timeout"):
        command += ["-p", "no:timeout", "-o", "markers=timeout: inert in this run"]
        command += ["-W", "ignore:Unknown config option:pytest.PytestConfigWarning"]
    if importlib.util.find_spec("pytest_randomly"):
        command += ["-p", "no:randomly"]
    return command


def run_module(module: str, parser: str, examples: int, timeout: float) -> Outcome:
    """Run one module's property tests in a fresh interpreter."""
    env = {**os.environ, "TETHER_FUZZ_EXAMPLES": str(examples)}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            pytest_command(module),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = -1, f"timed out after {timeout:.0f} s\n{_text(exc.stdout)}"
    seconds = time.perf_counter() - started
    counts: dict[str, int] = {}
    summary = next((s for s in reversed(output.splitlines()) if _SUMMARY.search(s)), "")
    for number, word in _OUTCOME.findall(summary):
        counts[word] = counts.get(word, 0) + int(number)
    generated = [int(n) for n in _GENERATED.findall(output)]
    return Outcome(module, parser, counts, generated, seconds, code, output)


def failures(output: str, most: int = 80) -> str:
    """What pytest said of the failures (and of errors in collection), without the statistics."""
    lines = output.splitlines()
    start = next((i for i, s in enumerate(lines) if re.match(r"=+ (FAILURES|ERRORS) =+", s)), 0)
    end = next((i for i, s in enumerate(lines) if "Hypothesis Statistics" in s), len(lines))
    shown = lines[start:end][:most] + [s for s in lines[end:] if s.startswith(("FAILED", "ERROR"))]
    return "\n".join(shown)


def _text(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run only modules whose path holds one of these")
    parser.add_argument("--examples", type=int, default=10_000, help="examples per test")
    parser.add_argument("--quick", action="store_true", help="200 examples per test")
    parser.add_argument(
        "--timeout", type=float, default=4 * 3600, help="seconds one module may take"
    )
    args = parser.parse_args()
    examples = 200 if args.quick else args.examples
    if examples < 1:
        parser.error("--examples must be at least 1")
    chosen = {m: p for m, p in MODULES.items() if not args.only or any(w in m for w in args.only)}
    if not chosen:
        parser.error(f"no module matches {args.only}")
    print(f"python {sys.version.split()[0]}, {examples:,} examples per property test", flush=True)
    head = f"{'module':44} {'parser':28} {'tests':>5} {'examples/test':>13} {'ok/fail':>7} "
    print(f"{head}{'seconds':>9}\n{'-' * (len(head) + 9)}", flush=True)
    outcomes = []
    for module, what in chosen.items():
        outcome = run_module(module, what, examples, args.timeout)
        outcomes.append(outcome)
        print(outcome.row(), flush=True)
    total = sum(o.seconds for o in outcomes)
    failed = [o for o in outcomes if not o.ok]
    print(f"{'-' * (len(head) + 9)}\n{len(outcomes)} modules, {total:.0f} s in all", end="")
    print(f"; FAILED: {len(failed)}" if failed else "; all passed")
    for outcome in failed:
        print(f"\n=== {outcome.module} (exit {outcome.code}) ===")
        print(failures(outcome.output))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
