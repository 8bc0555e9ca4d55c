"""What the built-in tool kind handlers share: their error type, the rule for credentials
read from the environment, and files a tool definition names (``path``, ``specification``)
found relative to the agent's own folder, kept inside its tree or the allowed roots, and opened
name by name from there (``paths``), so no link swapped in meanwhile leads outside.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..env import hidden
from ..errors import LoadError, OutsideRootError
from ..execution.credentials import check_credential
from ..loading.files import MAX_FILE_BYTES, parse_json, parse_yaml
from ..model import PromptAgent
from ..paths import Located, Place, locate, read_located

__all__ = [
    "canonical_roots",
    "check_env_credentials",
    "contained_file",
    "read_data_file",
]


def check_env_credentials(
    tool: str, endpoint: object, url: str, credentials: Mapping[str, object], path: str | None
) -> None:
    """A credential the file read from the environment (``credentials``: by field) goes only to
    an endpoint that came from the environment or the application's code, never to ``url``
    when the file wrote it (or it is the document's own server): ``CredentialEndpointError``."""
    for field, credential in credentials.items():
        check_credential(
            credential,
            field=f"tools[{tool}].connection.{field}",
            endpoint=endpoint,
            url=url,
            path=path,
        )


def canonical_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """``roots`` resolved once, so containment compares canonical paths."""
    try:
        return tuple(Path(r).resolve() for r in roots)
    except (OSError, ValueError, RuntimeError) as exc:
        raise LoadError(f"Allowed root cannot be resolved: {exc}") from exc


def contained_file(
    reference: str, agent: PromptAgent, roots: Sequence[Path], field: str
) -> Located:
    """Where ``reference`` (relative to ``agent``'s folder) lies, refused unless in that folder's
    tree or one of ``roots`` (``..`` folded as text); nothing is opened here, and the file is
    later opened name by name from there (``read_data_file``, ``load_located``)."""
    where = agent.source
    if not reference.strip() or "\0" in reference:
        raise LoadError(f"{field} is empty or not a path: {reference!r}", path=where, field=field)
    base = _tool_folder(agent)
    if base is None and not os.path.isabs(reference):
        raise LoadError(
            f"{field} {reference!r} is relative but the agent has no source file", field=field
        )
    places = [Place(r) for r in roots] if base is None else [base, *(Place(r) for r in roots)]
    found = None if not places else locate(reference, places[0], [p.root for p in places[1:]])
    if found is None:
        raise OutsideRootError(
            f"{hidden(reference)} resolves outside allowed roots", path=where, field=field
        )
    return found


def _tool_folder(agent: PromptAgent) -> Place | None:
    """The folder an agent's tool files are found in: where it was opened beneath a root, else
    its file's (canonical) folder."""
    if agent.origin is not None:
        return agent.origin
    if agent.source is None:
        return None
    try:
        return Place(Path(agent.source).resolve().parent)
    except (OSError, ValueError, RuntimeError) as exc:
        raise LoadError(f"{agent.source} cannot be resolved: {exc}", path=agent.source) from exc


def read_data_file(found: Located, field: str) -> Any:
    """A JSON or YAML document (by extension; YAML otherwise, which JSON also is), size- and
    depth-capped, opened name by name beneath its allowed folder."""
    path = found.path
    try:
        text = read_located(found, MAX_FILE_BYTES)
    except OutsideRootError:
        message = f"{path} resolves outside allowed roots (through a link)"
        raise OutsideRootError(message, path=str(path), field=field) from None
    if path.suffix.lower() != ".json":
        data, _ = parse_yaml(text, path=str(path))
        return data
    return parse_json(text, path=str(path))
