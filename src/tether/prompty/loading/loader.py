"""Loading a ``.prompty`` file into a ``PromptAgent`` (spec §4), and checking the inputs a
caller gives against the agent's declared inputs (§12.2).

Files are read by ``files``, the frontmatter is turned into the agent by ``reader``
(shorthands expanded, ``kind`` always ``"prompt"``, a value of the wrong type a ``LoadError``
naming the file, the line and the field); this module ties them together.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..env import EnvAccess, EnvOption, hidden
from ..errors import InputError, LoadError, MissingFileError
from ..model import PromptAgent
from ..paths import Located, Place, read_located
from .files import MAX_FILE_BYTES, parse_yaml, read_text, resolve_references, split_frontmatter
from .reader import read_agent

__all__ = ["load", "load_async", "load_dotenv", "load_located", "loads", "validate_inputs"]


def load(
    path: str | os.PathLike[str],
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] | None = None,
    env: EnvOption = None,
) -> PromptAgent:
    """The agent in the ``.prompty`` file at ``path``. ``${file:...}`` references may read
    only inside the file's directory and ``allowed_roots``; ``.env`` files are not read
    (that is the application's call: see ``load_dotenv``).

    ``env`` says which ``${env:NAME}`` references the file may read. By default (``None``) the
    whole environment, as the spec says: for the application's own files. For a file from
    elsewhere, a list of names reads only those from ``os.environ``, and ``env=()`` none at all
    (with no ``allowed_roots``, such a file reads nothing beyond its own folder); a mapping is
    the whole environment the file sees. Any other reference, a ``${env:NAME:default}`` too, is
    an ``EnvAccessError`` naming the variable, which is not read. Child ``.prompty`` files
    (prompty tools) read no variable their parent could not.

    A value read is an ``EnvValue``: errors and traces show ``${env:NAME}``, never it. As a
    credential (``apiKey``, a tool's token or headers) it goes only to the provider's own host,
    an endpoint from the environment, or one the application's code sets: never to an endpoint
    written in the file (``CredentialEndpointError``, before any request)."""
    try:
        file = Path(path).resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        raise LoadError(f"Prompty file path cannot be resolved: {exc}", path=str(path)) from exc
    try:
        text = read_text(file)
    except MissingFileError:
        raise MissingFileError(f"Prompty file not found: {file}", path=str(file)) from None
    return loads(text, base_dir=file.parent, source=str(file), allowed_roots=allowed_roots, env=env)


async def load_async(
    path: str | os.PathLike[str],
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] | None = None,
    env: EnvOption = None,
) -> PromptAgent:
    """``load`` in a worker thread, so the event loop never waits on the disk."""
    return await asyncio.to_thread(load, path, allowed_roots=allowed_roots, env=env)


def loads(
    text: str,
    *,
    base_dir: str | os.PathLike[str],
    source: str | os.PathLike[str] | None = None,
    allowed_roots: Iterable[str | os.PathLike[str]] | None = None,
    env: EnvOption = None,
) -> PromptAgent:
    """The agent in ``text``, the content of a ``.prompty`` file; ``base_dir`` is where its
    ``${file:...}`` references resolve (and the allowed root besides ``allowed_roots``),
    ``source`` names it in errors, and ``env`` is as for ``load``."""
    base = Place(Path(base_dir))
    where = None if source is None else str(source)
    return _loads(text, base, where, allowed_roots, EnvAccess.of(env))


def load_located(
    found: Located,
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] | None = None,
    env: EnvAccess,
) -> PromptAgent:
    """The agent in a ``.prompty`` file found beneath an allowed folder (a child file), opened
    name by name from there, reading the variables ``env`` allows; its own references and
    tools are found beneath the same root."""
    try:
        text = read_located(found, MAX_FILE_BYTES)
    except MissingFileError:
        where = str(found.path)
        raise MissingFileError(f"Prompty file not found: {where}", path=where) from None
    agent = _loads(text, found.parent, str(found.path), allowed_roots, env)
    return dataclasses.replace(agent, origin=found.parent)


def _loads(
    text: str,
    base: Place,
    where: str | None,
    allowed_roots: Iterable[str | os.PathLike[str]] | None,
    access: EnvAccess,
) -> PromptAgent:
    """The agent in ``text``, its references resolved beneath ``base`` and the roots, reading
    the variables ``access`` allows (and remembering it for the agent's child files)."""
    if len(text) > MAX_FILE_BYTES:
        raise LoadError(f"File larger than {MAX_FILE_BYTES} characters", path=where)
    split = split_frontmatter(text, path=where)
    if split.frontmatter is None:
        line = split.body_line
        return PromptAgent(instructions=split.body, source=where, body_line=line, env_access=access)
    data, doc = parse_yaml(split.frontmatter, path=where, first_line=split.frontmatter_line)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise doc.error("Frontmatter must be a YAML mapping")
    roots = None if allowed_roots is None else [Path(r) for r in allowed_roots]
    data = resolve_references(data, doc, base_dir=base, allowed_roots=roots, env=access)
    return dataclasses.replace(read_agent(data, doc, split), env_access=access)


def validate_inputs(agent: PromptAgent, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``inputs`` with each missing declared input filled from its ``default`` (a copy);
    a missing required input without one is an ``InputError`` (§12.2). Values are not
    type-checked, undeclared inputs pass through, and ``example`` is never used."""
    validated = dict(inputs or {})
    for prop in agent.inputs or ():
        if prop.name in validated:
            continue
        if prop.default is not None:
            validated[prop.name] = copy.deepcopy(prop.default)
        elif prop.required:
            raise InputError(
                f"Missing required input: {hidden(prop.name)}",
                path=agent.source,
                line=prop.line,
                field=prop.name,
            )
    return validated


def load_dotenv(path: str | os.PathLike[str]) -> dict[str, str]:
    """For applications (§4.3): set the variables of the ``.env`` file beside ``path`` (a
    ``.prompty`` file, or a directory) that the environment does not already have; returns
    those it set. ``load`` never calls this."""
    from dotenv import dotenv_values  # noqa: PLC0415 - the prompty extra

    where = Path(path)
    env_file = (where if where.is_dir() else where.parent) / ".env"
    if not env_file.is_file():
        return {}
    added = {
        k: v for k, v in dotenv_values(env_file).items() if v is not None and k not in os.environ
    }
    os.environ.update(added)
    return added
