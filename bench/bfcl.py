"""The Berkeley Function Calling Leaderboard (BFCL v4) run offline on the local model: BFCL's own
data and checkers, the model called directly through BFCL's OpenAI-compatible handler (the raw
baseline) and through tether (``Agent`` with native tool calls, ``Agent`` with constrained calls
where this tether has them, ``SkillAgent``).

    py=$(bash scripts/bench-env.sh | tail -n 1)   # its own environment: bfcl-eval, tether[local]
    "$py" bench/bfcl.py --quick                    # 1 item per category, bounded (CI)
    "$py" bench/bfcl.py --json results.json        # the fixed sample: 25 per non-live category
    "$py" bench/bfcl.py --model 0.5b               # Qwen2.5-Coder-0.5B, where tether.local has it
    "$py" bench/bfcl.py --model path/to/any.gguf   # a GGUF file of your own

Categories: the non-live simple (Python), multiple, parallel, parallel_multiple and irrelevance
(BFCL's AST checker) and multi_turn_base (BFCL's multi-turn checker, which executes BFCL's
simulated APIs). Items are a seeded sample of each category (``--seed``); their ids are printed
and written to ``--json``. Every prompt, template and limit here was fixed before any full run.
Exits 1 when a category errored (an exception, not a low score).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import platform
import random
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

try:
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING, ModelConfig
    from bfcl_eval.eval_checker import eval_runner as checker
    from bfcl_eval.model_handler.api_inference.openai_completion import (
        OpenAICompletionsHandler,
    )
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry
except ImportError as exc:  # pragma: no cover - said plainly, not as a traceback
    sys.exit(
        f"bench/bfcl.py needs the bench environment ({exc}); run it with the python that"
        " `bash scripts/bench-env.sh` prints"
    )

import bfcl_columns as cols  # noqa: E402

from tether.local import LocalModel, ModelWeights, weights  # noqa: E402

AST_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
MULTI_TURN = "multi_turn_base"
CATEGORIES = (*AST_CATEGORIES, MULTI_TURN)
COLUMNS = {
    "raw": "raw model",
    "agent": "Agent",
    "agent_constrained": "Agent constrained",
    "agent_repeats": "Agent, repeats",
    "skill_agent": "SkillAgent",
}
# Multi-turn only: the Agent with ``Limits(repeated_calls=...)`` (single-turn items make one reply)
MULTI_TURN_ONLY = ("agent_repeats",)
BENCHMARK = "BFCL v4 (bfcl-eval 2026.3.23)"
REGISTRY_NAME = "tether-local-FC"  # the model as BFCL's registry and checkers know it
TEMPERATURE = 0.001  # BFCL's default for generation, for every column
# The most tokens one reply may have, for the raw model and the Agent alike. BFCL's OpenAI
# handler sends no limit and llama.cpp's default is none: a small model that loops would write
# until the context is full. The longest ground truth in these categories is 1,345 characters.
MAX_TOKENS = 1024
SAMPLE = 25  # per non-live category: the fixed sample of 125
MULTI_TURN_SAMPLE = 5  # multi-turn items are slow on a CPU (see docs/benchmarks.md)
QUICK = 1  # --quick: items per category (one item of each costs about 10 minutes on 2 cores)
QUICK_TURNS = 1  # and a multi-turn item's first turn only,
QUICK_STEPS = 5  # quit after 5 replies with calls (BFCL's limit is 20)
N_CTX = 16384  # a multi-turn entry's function docs alone are about 8,000 tokens


@dataclass
class Cell:
    """One column on one category: the items' verdicts, and any exceptions."""

    correct: int = 0
    total: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)


# -- the sample ------------------------------------------------------------------------------------


def sample(category: str, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` entries of ``category``, chosen by ``seed`` alone, in the data's order; the entries
    as BFCL's generation step loads them (function docs with its language hint)."""
    entries = load_dataset_entry(category, include_prereq=False)
    rng = random.Random(f"bfcl:{seed}:{category}")
    picks = sorted(rng.sample(range(len(entries)), min(n, len(entries))))
    return [entries[i] for i in picks]


def first_turns(entry: dict[str, Any], turns: int | None) -> dict[str, Any]:
    """A multi-turn entry cut to its first ``turns`` turns (``None``: all of them)."""
    if turns is None or not cols.is_multi_turn(entry):
        return entry
    return {**entry, "question": entry["question"][:turns]}


def checker_inputs(
    category: str, turns: int | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The prompt entries (as BFCL's evaluation step loads them) and ground truths, by id; a
    multi-turn ground truth cut to ``turns`` turns, as its entries are."""
    prompts = load_dataset_entry(
        category, include_prereq=False, include_language_specific_hint=False
    )
    truths = {} if category == "irrelevance" else load_ground_truth_entry(category)
    by_id = {p["id"]: p for p in prompts}
    truth_by_id = {t["id"]: t for t in truths} if truths else {}
    if turns is not None and category == MULTI_TURN:
        truth_by_id = {
            k: {**t, "ground_truth": t["ground_truth"][:turns]} for k, t in truth_by_id.items()
        }
    return by_id, truth_by_id


# -- scoring: BFCL's checkers, as its evaluation runner calls them per entry -----------------------


def score(
    handler: Any, category: str, entry_id: str, result: Any, prompts: Any, truths: Any
) -> dict[str, Any]:
    """BFCL's verdict on one result: ``{"valid": bool, ...}`` with its error when not valid."""
    prompt = copy.deepcopy(prompts[entry_id])
    if category == "irrelevance":
        return dict(
            checker._evaluate_single_relevance_entry(
                handler, entry_id, result, prompt, REGISTRY_NAME, category
            )
        )
    truth = truths[entry_id]["ground_truth"]
    if category == MULTI_TURN:
        return dict(
            checker._evaluate_single_multi_turn_entry(
                handler, entry_id, result, truth, prompt, cols.unique_name("check"), category
            )
        )
    return dict(
        checker._evaluate_single_ast_entry(
            handler,
            entry_id,
            result,
            truth,
            prompt,
            REGISTRY_NAME,
            category,
            language=Language.PYTHON,
            return_format=ReturnFormat.PYTHON,
        )
    )


# -- the model and the parts each column uses ------------------------------------------------------


class CappedHandler(OpenAICompletionsHandler):  # type: ignore[misc]
    """BFCL's OpenAI-compatible handler, unchanged but for ``max_tokens`` on every request and,
    while ``cold`` (a single-turn item), the server's prompt cache off (``cols.COLD``)."""

    cold = False

    def generate_with_backoff(self, **kwargs: Any) -> Any:
        return super().generate_with_backoff(
            **kwargs, max_tokens=MAX_TOKENS, **cols.cache_off(self.cold)
        )


def register(alias: str) -> OpenAICompletionsHandler:
    """Register the local model with BFCL as an OpenAI-compatible function-calling model (BFCL's
    way to add a model) and build its handler, as BFCL's generation step does."""
    MODEL_CONFIG_MAPPING[REGISTRY_NAME] = ModelConfig(
        model_name=alias,
        display_name=f"{alias} (FC, local llama.cpp)",
        url="",
        org="",
        license="",
        model_handler=CappedHandler,
        is_fc_model=True,
        underscore_to_dot=True,  # the OpenAI path sends "a.b" as "a_b"
    )
    config = MODEL_CONFIG_MAPPING[REGISTRY_NAME]
    handler = config.model_handler(
        model_name=config.model_name,
        temperature=TEMPERATURE,
        registry_name=REGISTRY_NAME,
        is_fc_model=config.is_fc_model,
    )
    assert isinstance(handler, OpenAICompletionsHandler)
    return handler


@dataclass
class Parts:
    """What the columns call: BFCL's handler, tether's transport and SkillAgent handle, all on
    the one local server."""

    local: LocalModel
    handler: OpenAICompletionsHandler

    def transport(self, cold: bool) -> Any:
        """The chat transport; ``cold``: with the server's prompt cache off (``cols.COLD``)."""
        return self.local.chat_transport(
            temperature=TEMPERATURE, max_tokens=MAX_TOKENS, **cols.cache_off(cold)
        )

    @property
    def handle(self) -> Any:
        return self.local.text_handle(temperature=TEMPERATURE, max_tokens=cols.SKILL_MAX_TOKENS)


def local_model(choice: str) -> LocalModel:
    """``1.5b`` (the default), ``0.5b``, or the path of a GGUF file."""
    options: dict[str, Any] = {"quiet": True, "n_ctx": N_CTX, "n_parallel": 1}
    if choice == "1.5b":
        return LocalModel(weights.QWEN25_CODER_1_5B, **options)
    if choice == "0.5b":
        found = [
            w
            for w in vars(weights).values()
            if isinstance(w, ModelWeights) and "0.5b" in w.alias.lower()
        ]
        if not found:
            sys.exit(
                "bench/bfcl.py: this tether's tether.local defines no ModelWeights for"
                " Qwen2.5-Coder-0.5B; pass the path of its GGUF file with --model PATH instead"
            )
        return LocalModel(found[0], **options)
    path = Path(choice).expanduser()
    if not path.is_file():
        sys.exit(f"bench/bfcl.py: --model {choice!r} is not 1.5b, 0.5b or a GGUF file")
    return LocalModel(model_path=path, **options)


@contextlib.contextmanager
def openai_env(local: LocalModel) -> Iterator[None]:
    """BFCL's OpenAI handler reads its base URL and key from the environment."""
    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    os.environ["OPENAI_BASE_URL"] = local.base_url + "/v1"
    os.environ["OPENAI_API_KEY"] = local.api_key or "none"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# -- the sample's journal: a long run goes on where it stopped -------------------------------------


@dataclass
class Journal:
    """``--out FILE``: every scored item appended as one JSON line as soon as it is scored, after a
    first line of the settings it was run with; a run given the same file skips what is in it.
    A line cut short by a kill is ignored (that item runs again); a file of other settings is
    refused, never mixed in."""

    path: Path | None
    done: dict[tuple[str, str, str], dict[str, Any]]

    @classmethod
    def none(cls) -> Journal:
        return cls(None, {})

    @classmethod
    def open(cls, path: Path, wanted: dict[str, Any]) -> Journal:
        text = path.read_text() if path.exists() else ""
        if not text.strip():
            path.write_text(json.dumps({"settings": wanted}) + "\n")
            return cls(path, {})
        lines = text.splitlines()
        head = _json_line(lines[0])
        if head is None or head.get("settings") != wanted:
            sys.exit(
                f"bench/bfcl.py: {path} holds a run with other settings"
                f" ({head and head.get('settings')}); these are {wanted}: use another --out file"
            )
        done = {}
        for line in lines[1:]:
            row = _json_line(line)
            if row is not None and {"column", "category", "item"} <= row.keys():
                done[(row["column"], row["category"], row["item"]["id"])] = row["item"]
        if not text.endswith("\n"):  # a last line cut short: end it
            with path.open("a") as out:
                out.write("\n")
        return cls(path, done)

    def add(self, column: str, category: str, item: dict[str, Any]) -> None:
        if self.path is None:
            return
        row = json.dumps({"column": column, "category": category, "item": item}, default=str)
        with self.path.open("a") as out:
            out.write(row + "\n")
            out.flush()
            os.fsync(out.fileno())


def _json_line(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """What decides a run's items and answers: a journal is resumed only under the same."""
    return {
        "benchmark": BENCHMARK,
        "model": args.model,
        "seed": args.seed,
        "quick": args.quick,
        "items": args.items,
        "multi_turn": args.multi_turn,
        "turns": args.turns,
        "steps": cols.Steps.per_turn - 1,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
        "n_ctx": N_CTX,
    }


def pick(category: str, n: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The items of ``category``: the seeded sample, or for ``--quick`` the ``n`` cheapest (the
    shortest function docs and question: a smoke run's cost, not a measure)."""
    if not args.quick:
        return sample(category, n, args.seed)
    entries = load_dataset_entry(category, include_prereq=False)
    return sorted(entries, key=lambda e: len(json.dumps([e["function"], e["question"]])))[:n]


def columns_for(columns: list[str], category: str) -> list[str]:
    """The columns run on ``category``: ``agent_repeats`` only differs on multi-turn items."""
    return [c for c in columns if c not in MULTI_TURN_ONLY or category == MULTI_TURN]


# -- the run ---------------------------------------------------------------------------------------


def run_item(
    column: str, category: str, entry: dict[str, Any], parts: Parts, checks: Any, cell: Cell
) -> dict[str, Any] | None:
    """One column on one entry, scored into ``cell`` and returned; an exception is recorded in
    ``cell``, not raised (and ``None`` returned: an errored item is not journaled, so a resumed
    run tries it again)."""
    started = time.perf_counter()
    try:
        result = cols.run_column(column, entry, parts)
        verdict = score(parts.handler, category, entry["id"], result, *checks)
    except Exception as exc:
        cell.errors.append(f"{entry['id']}: {type(exc).__name__}: {exc}")
        seconds = round(time.perf_counter() - started, 2)
        cell.items.append({"id": entry["id"], "error": traceback.format_exc(), "seconds": seconds})
        cell.seconds += seconds
        return None
    item = {
        "id": entry["id"],
        "valid": bool(verdict.get("valid")),
        "error_type": verdict.get("error_type") or _nested_type(verdict),
        "result": cols.jsonable(result),
        "repeats": cols.repeats(result),
        "seconds": round(time.perf_counter() - started, 2),
    }
    add_item(cell, item)
    return item


def add_item(cell: Cell, item: dict[str, Any]) -> None:
    """A scored item (run now or read back from the journal) counted in ``cell``."""
    cell.total += 1
    cell.correct += bool(item["valid"])
    cell.seconds += float(item["seconds"])
    cell.items.append(item)


def _nested_type(verdict: dict[str, Any]) -> str | None:
    error = verdict.get("error")
    return error.get("error_type") if isinstance(error, dict) else None


def columns_to_run() -> tuple[list[str], dict[str, str]]:
    """The columns this tether can compute, and why any other is not."""
    skipped = {}
    if not cols.agent_takes_constrained_calls():
        skipped["agent_constrained"] = "n/a: this tether's Agent has no constrained_calls option"
    return [c for c in COLUMNS if c not in skipped], skipped


def run(args: argparse.Namespace) -> dict[str, Any]:
    per_category = dict.fromkeys(AST_CATEGORIES, args.items)
    per_category[MULTI_TURN] = args.multi_turn
    chosen = [c for c in CATEGORIES if c in args.categories]
    columns, skipped = columns_to_run()
    cells = {col: {cat: Cell() for cat in chosen} for col in columns}
    ids: dict[str, list[str]] = {}
    started = time.perf_counter()
    journal = Journal.open(args.out, settings(args)) if args.out else Journal.none()
    with _serving(args) as parts:
        for category in chosen:
            picked = pick(category, per_category[category], args)
            entries = [first_turns(e, args.turns) for e in picked]
            ids[category] = [e["id"] for e in entries]
            checks = checker_inputs(category, args.turns)
            for entry in entries:  # the columns in turn on each item: the prompt cache helps
                for column in columns_for(columns, category):
                    cell = cells[column][category]
                    if (done := journal.done.get((column, category, entry["id"]))) is not None:
                        add_item(cell, done)
                    elif parts is None:
                        continue  # --journal-only: what is not in the journal is not run
                    elif item := run_item(column, category, entry, parts, checks, cell):
                        journal.add(column, category, item)
                if parts is not None:
                    _progress(args, category, entry["id"], cells, columns)
    return {
        "benchmark": BENCHMARK,
        "model": args.model,
        "model_alias": args.local.model,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}",
        "seed": args.seed,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
        "multi_turn_turns": args.turns or "all",
        "multi_turn_steps": cols.Steps.per_turn - 1,
        "items": ids,
        "columns": {c: COLUMNS[c] for c in columns},
        "skipped_columns": skipped,
        "seconds": round(time.perf_counter() - started, 1),
        "results": {
            col: {cat: _cell_json(cell) for cat, cell in by_cat.items()}
            for col, by_cat in cells.items()
        },
    }


@contextlib.contextmanager
def _serving(args: argparse.Namespace) -> Iterator[Parts | None]:
    """The local model served to every column, or with ``--journal-only`` nothing at all."""
    if args.journal_only:
        yield None
        return
    with args.local as local, openai_env(local):
        yield Parts(local, register(local.model))


def _progress(
    args: argparse.Namespace, category: str, entry_id: str, cells: Any, columns: list[str]
) -> None:
    if not args.verbose:
        return
    marks = []
    for column in columns_for(columns, category):
        last = cells[column][category].items[-1]
        verdict = "ERR" if "error" in last else ("ok" if last["valid"] else "no")
        marks.append(f"{column}={verdict} {last.get('seconds', 0):.0f}s")
    print(f"  {entry_id:28} {' '.join(marks)}", file=sys.stderr, flush=True)


def _cell_json(cell: Cell) -> dict[str, Any]:
    return {
        "correct": cell.correct,
        "total": cell.total,
        "percent": round(100 * cell.correct / cell.total, 1) if cell.total else None,
        "seconds": round(cell.seconds, 1),
        "errors": cell.errors,
        "items": cell.items,
    }


# -- the table -------------------------------------------------------------------------------------


def table(report: dict[str, Any]) -> str:
    """Category x column, percent (correct/total), then each tether column minus the raw one."""
    columns = list(report["columns"])
    results = report["results"]
    categories = list(report["items"])
    width = 20
    head = f"{'category':20}" + "".join(f"{report['columns'][c]:>{width}}" for c in columns)
    head += "".join(f"  n/a: {COLUMNS[c]}" for c in report["skipped_columns"])
    lines = [head]
    for category in [*categories, "overall"]:
        cells = [_pick(results[c], category, c) for c in columns]
        row = f"{category:20}" + "".join(f"{_cell_text(cell):>{width}}" for cell in cells)
        row += "".join(f"  {'n/a':>{len(COLUMNS[c]) + 5}}" for c in report["skipped_columns"])
        lines.append(row)
    if "raw" in columns:
        lines.append("")
        lines.append("difference to the raw model, points:")
        for column in [c for c in columns if c != "raw"]:
            diffs = []
            for category in [*categories, "overall"]:
                mine = _pick(results[column], category, column)
                raw = _pick(results["raw"], category, "raw")
                diffs.append(f"{category} {_diff(mine, raw)}")
            lines.append(f"  {report['columns'][column]}: " + ", ".join(diffs))
    if MULTI_TURN in categories:
        items = {c: results[c][MULTI_TURN]["items"] for c in columns}
        counts = [
            f"{report['columns'][c]} {sum(i.get('repeats', 0) for i in items[c])}" for c in columns
        ]
        told = f"repeated calls on {MULTI_TURN} (same call, same arguments, same turn): "
        lines.append(told + ", ".join(counts))
    for skipped, why in report["skipped_columns"].items():
        lines.append(f"{COLUMNS[skipped]}: {why}")
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    """The table as Markdown (for bench/RESULTS.md and the docs): percent (correct/total) per
    category and column, and each tether column's difference to the raw model in points."""
    columns = list(report["columns"])
    results, names = report["results"], report["columns"]
    lines = [
        "| category | " + " | ".join(names[c] for c in columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for category in [*report["items"], "overall"]:
        cells = []
        for column in columns:
            mine = _pick(results[column], category, column)
            text = _cell_text(mine)
            if column != "raw" and "raw" in columns and mine["total"]:
                text += f" ({_diff(mine, _pick(results['raw'], category, 'raw'))})"
            cells.append(text)
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pick(by_category: dict[str, Any], category: str, column: str) -> dict[str, Any]:
    """A column's cell on a category, or its overall (none for a multi-turn-only column)."""
    if category != "overall":
        return by_category[category]
    if column in MULTI_TURN_ONLY:
        return {"correct": 0, "total": 0, "errors": []}
    return _overall(by_category)


def _overall(by_category: dict[str, Any]) -> dict[str, Any]:
    correct = sum(c["correct"] for c in by_category.values())
    total = sum(c["total"] for c in by_category.values())
    errors = [e for c in by_category.values() for e in c["errors"]]
    return {"correct": correct, "total": total, "errors": errors}


def _cell_text(cell: dict[str, Any]) -> str:
    if not cell["total"]:
        return "error" if cell["errors"] else "-"
    text = f"{100 * cell['correct'] / cell['total']:.1f} ({cell['correct']}/{cell['total']})"
    return text + (" !" if cell["errors"] else "")


def _diff(mine: dict[str, Any], raw: dict[str, Any]) -> str:
    if not mine["total"] or not raw["total"]:
        return "-"
    points = 100 * mine["correct"] / mine["total"] - 100 * raw["correct"] / raw["total"]
    return f"{points:+.1f}"


def errored(report: dict[str, Any]) -> list[str]:
    """Every exception, and every cell of a column on a category it runs on left unscored."""
    failures = []
    for col, by_cat in report["results"].items():
        for cat, cell in by_cat.items():
            failures += [f"{report['columns'][col]} / {cat}: {err}" for err in cell["errors"]]
            wanted = report["items"][cat] and col in columns_for([col], cat)
            if wanted and not cell["total"] and not cell["errors"]:
                failures.append(f"{report['columns'][col]} / {cat}: no item scored")
    return failures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI's smoke run: 1 item per category, a multi-turn item's first turn, 5 steps",
    )
    parser.add_argument("--items", type=int, default=SAMPLE, help="items per non-live category")
    parser.add_argument(
        "--multi-turn", type=int, default=MULTI_TURN_SAMPLE, help="multi_turn_base items"
    )
    parser.add_argument(
        "--turns", type=int, default=None, help="only the first N turns of a multi-turn item"
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="replies with calls per turn before a multi-turn item is quit (BFCL's: 20)",
    )
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--seed", type=int, default=42, help="the sample's seed")
    parser.add_argument("--model", default="1.5b", help="1.5b (default), 0.5b, or a GGUF path")
    parser.add_argument("--json", type=Path, default=None, help="write the full results here")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="journal each scored item here (JSON lines); run again to go on where it stopped",
    )
    parser.add_argument(
        "--journal-only",
        action="store_true",
        help="print the table of what the --out journal holds so far; run nothing",
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--verbose", action="store_true", help="one line per item on stderr")
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.multi_turn = QUICK, QUICK
        args.turns = args.turns or QUICK_TURNS
        args.max_steps = args.max_steps or QUICK_STEPS
    if args.journal_only and args.out is None:
        parser.error("--journal-only reads the journal named by --out")
    if args.items < 1 or args.multi_turn < 0:
        parser.error("--items must be >= 1 and --multi-turn >= 0")
    if (args.turns is not None and args.turns < 1) or (
        args.max_steps is not None and args.max_steps < 1
    ):
        parser.error("--turns and --max-steps must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.local = local_model(args.model)
    cols.VERBOSE = args.verbose
    if args.max_steps is not None:
        cols.limit_steps(args.max_steps)
    warnings.simplefilter("ignore")  # BFCL's docs leave some parameters untyped: tools warn
    report = run(args)
    print(
        f"BFCL v4 on {report['model_alias']} ({args.model}), seed {args.seed}, "
        f"{report['seconds']:.0f} s"
    )
    for category, ids in report["items"].items():
        print(f"  {category}: {', '.join(ids)}")
    print(markdown(report) if args.markdown else table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    failures = [] if args.journal_only else errored(report)
    for failure in failures:
        print(f"ERROR {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
