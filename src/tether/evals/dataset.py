"""Cases and datasets: what an agent is asked and what counts as a good answer.

A dataset file (YAML or JSON) is ``{"cases": [{"inputs": ..., "expected": ..., "name": ...,
"metadata": {...}, "evaluators": [...]}], "evaluators": [...]}``; evaluators in a file are named
(``tether.evals.named``), in Python they are any evaluator.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import EvalError
from .named import evaluator_from_spec

__all__ = ["MAX_DATASET_BYTES", "Case", "Dataset"]

MAX_DATASET_BYTES = 16 * 1024 * 1024
_CASE_KEYS = frozenset({"inputs", "expected", "name", "metadata", "evaluators"})
_FILE_KEYS = frozenset({"cases", "evaluators", "name"})


@dataclass(frozen=True, slots=True)
class Case:
    """One thing to ask: ``inputs`` (the user's message for an agent, any value for a
    function), the ``expected`` answer if there is one, free ``metadata``, and evaluators that
    apply to this case only (besides the dataset's)."""

    inputs: Any
    expected: Any = None
    metadata: Mapping[str, Any] | None = None
    name: str | None = None
    evaluators: Sequence[Any] = ()


@dataclass(frozen=True, slots=True)
class Dataset:
    """Cases and the evaluators every case is checked by. Case names are unique (a case
    without one is named by its position, ``case 1`` ...), so reports compare case by case."""

    cases: Sequence[Case]
    evaluators: Sequence[Any] = ()
    name: str = "dataset"
    names: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        cases = tuple(self.cases)
        if not cases:
            raise EvalError(f"dataset {self.name!r} has no cases")
        for case in cases:
            if not isinstance(case, Case):
                raise EvalError(f"dataset {self.name!r}: {case!r} is not a Case")
        names = tuple(c.name or f"case {i}" for i, c in enumerate(cases, 1))
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise EvalError(f"dataset {self.name!r}: two cases are named {name!r}")
            seen.add(name)
        object.__setattr__(self, "cases", cases)
        object.__setattr__(self, "evaluators", tuple(self.evaluators))
        object.__setattr__(self, "names", names)

    @classmethod
    def load(cls, path: str | Path) -> Dataset:
        """Read a dataset from a ``.yaml``/``.yml`` or ``.json`` file (YAML needs PyYAML, the
        ``evals`` extra). Raises ``EvalError`` naming the file and the place that is wrong."""
        path = Path(path)
        data = _read(path)
        where = str(path)
        if not isinstance(data, Mapping):
            raise EvalError(f"{where}: expected a mapping with 'cases', not {type(data).__name__}")
        _only(data, _FILE_KEYS, where)
        cases = data.get("cases")
        if not isinstance(cases, list) or not cases:
            raise EvalError(f"{where}: 'cases' must be a non-empty list")
        made = [_case(item, f"{where}: case {i}") for i, item in enumerate(cases, 1)]
        evaluators = _evaluators(data.get("evaluators", ()), where)
        try:
            return cls(made, evaluators, name=str(data.get("name") or path.stem))
        except EvalError as exc:
            raise EvalError(f"{where}: {exc}") from None


def _read(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_DATASET_BYTES:
            raise EvalError(
                f"{path}: {size} bytes is over the {MAX_DATASET_BYTES} a dataset may have"
            )
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalError(f"{path}: cannot read the dataset ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise EvalError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    if path.suffix.lower() in (".yaml", ".yml"):
        return _yaml(text, path)
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvalError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from exc
    raise EvalError(f"{path}: a dataset is a .yaml, .yml or .json file")


def _yaml(text: str, path: Path) -> Any:
    try:
        import yaml  # noqa: PLC0415 - the evals extra, only for YAML datasets
    except ImportError as exc:
        raise EvalError(
            f"{path}: reading YAML needs PyYAML: pip install 'tether[evals]' (or use JSON)"
        ) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EvalError(f"{path}: not YAML: {exc}") from exc


def _only(data: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise EvalError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )


def _case(item: Any, where: str) -> Case:
    if not isinstance(item, Mapping):
        raise EvalError(f"{where}: expected a mapping with 'inputs', not {type(item).__name__}")
    _only(item, _CASE_KEYS, where)
    if "inputs" not in item:
        raise EvalError(f"{where}: has no 'inputs'")
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise EvalError(f"{where}: 'metadata' must be a mapping")
    name = item.get("name")
    return Case(
        item["inputs"],
        item.get("expected"),
        metadata,
        None if name is None else str(name),
        _evaluators(item.get("evaluators", ()), where),
    )


def _evaluators(specs: Any, where: str) -> tuple[Any, ...]:
    if isinstance(specs, (str, Mapping)) or not isinstance(specs, Iterable):
        raise EvalError(f"{where}: 'evaluators' must be a list")
    return tuple(evaluator_from_spec(spec, where) for spec in specs)
