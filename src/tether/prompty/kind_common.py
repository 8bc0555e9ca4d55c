"""What the built-in tool kind handlers share: their error type, and files a tool definition
names (``path``, ``specification``) found relative to the agent's own file and kept inside
its directory tree or the allowed roots, checked on the canonical path before opening.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .env import EnvValue
from .errors import LoadError, PromptyError
from .files import parse_json, parse_yaml, read_text
from .model import PromptAgent

__all__ = [
    "ToolKindError",
    "canonical_roots",
    "check_env_credentials",
    "contained_file",
    "read_data_file",
]


class ToolKindError(PromptyError, ValueError):
    """A tool call cannot be made as its definition or arguments say (the model sees the text)."""


def check_env_credentials(tool: str, endpoint: object, credentials: Iterable[object]) -> None:
    """A credential the file read from the environment goes only to an endpoint that also came
    from the environment (the caller's, not one the file chose): ``ToolKindError`` otherwise."""
    if isinstance(endpoint, EnvValue):
        return
    for credential in credentials:
        if isinstance(credential, EnvValue):
            raise ToolKindError(
                f"tool {tool!r}: {credential.reference} is a credential from the environment; "
                "it goes only to an endpoint from the environment, not to one the file names"
            )


def canonical_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """``roots`` resolved once, so containment compares canonical paths."""
    try:
        return tuple(Path(r).resolve() for r in roots)
    except (OSError, ValueError, RuntimeError) as exc:
        raise LoadError(f"Allowed root cannot be resolved: {exc}") from exc


def contained_file(reference: str, agent: PromptAgent, roots: Sequence[Path], field: str) -> Path:
    """The canonical path of ``reference`` (relative to ``agent``'s file), refused unless it lies
    in that file's directory tree or one of ``roots``; nothing is opened here."""
    where = agent.source
    if not reference.strip() or "\0" in reference:
        raise LoadError(f"{field} is empty or not a path: {reference!r}", path=where, field=field)
    base = None if where is None else Path(where).resolve().parent
    candidate = Path(reference)
    if not candidate.is_absolute():
        if base is None:
            raise LoadError(
                f"{field} {reference!r} is relative but the agent has no source file",
                field=field,
            )
        candidate = base / candidate
    try:
        target = candidate.resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        raise LoadError(f"{reference} cannot be resolved: {exc}", path=where, field=field) from exc
    allowed = roots if base is None else (base, *roots)
    if not any(target.is_relative_to(root) for root in allowed):
        raise LoadError(f"{reference} resolves outside allowed roots", path=where, field=field)
    return target


def read_data_file(path: Path) -> Any:
    """A JSON or YAML document (by extension; YAML otherwise, which JSON also is), size- and
    depth-capped; a final symlink is refused, as the path is already canonical."""
    text = read_text(path, follow_symlinks=False)
    if path.suffix.lower() != ".json":
        data, _ = parse_yaml(text, path=str(path))
        return data
    return parse_json(text, path=str(path))
