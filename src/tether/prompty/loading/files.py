"""Reading a ``.prompty`` file's text into data (spec §2.2, §2.11): the frontmatter split from
the body, the YAML parsed safely within caps (keeping each value's line for error messages),
and ``${env:...}`` / ``${file:...}`` references resolved, files only inside allowed roots.

Everything here treats its input as untrusted: sizes are capped before parsing, YAML nesting
and alias expansion are bounded before anything is built, the text references bring in is
capped in total, and a referenced file is opened name by name beneath its allowed folder, so no
link swapped in after a check leads outside (``paths``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..env import EnvAccess, remember
from ..errors import EnvAccessError, LoadError, MissingFileError, OutsideRootError
from ..paths import Located, Place, locate, read_located, read_open

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_REFERENCED_CHARS",
    "MAX_YAML_CHARS",
    "Doc",
    "Split",
    "parse_json",
    "parse_yaml",
    "read_text",
    "resolve_references",
    "split_frontmatter",
]

MAX_FILE_BYTES = 1 << 20
"""The largest .prompty file, or file a reference names, that is read."""
MAX_YAML_CHARS = 256 << 10
"""The longest YAML text (frontmatter or referenced file) that is parsed."""
MAX_YAML_NODES = 20_000
"""The most values one YAML document may hold once its aliases are expanded."""
MAX_DEPTH = 32
"""The deepest nesting of mappings and lists in a YAML or JSON document."""
MAX_INCLUDE_DEPTH = 4
"""How deep ``${file:...}`` references may nest inside referenced files."""
MAX_RESOLVED_NODES = 100_000
"""The most values reference resolution visits in one load, referenced files included."""
MAX_REFERENCED_CHARS = 4 * MAX_FILE_BYTES
"""The most text ``${file:...}`` references may bring into one load, all told: a file named
twice (or through a YAML alias) counts twice, though it is read once."""

_DELIMITERS = ("---", "+++")

PathKey = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Split:
    """A file's text cut in two: ``frontmatter`` is ``None`` when the file has none; lines are
    1-based (``frontmatter_line`` is the opening delimiter's)."""

    frontmatter: str | None
    body: str
    frontmatter_line: int = 1
    body_line: int = 1


@dataclass(frozen=True, slots=True)
class Doc:
    """One parsed document: where it came from and the line of each path in it."""

    path: str | None
    lines: Mapping[PathKey, int] = field(default_factory=dict)

    def line_of(self, at: PathKey) -> int | None:
        """The line of ``at``, or of its nearest ancestor that has one."""
        for end in range(len(at), -1, -1):
            line = self.lines.get(at[:end])
            if line is not None:
                return line
        return None

    def error(self, message: str, at: PathKey = ()) -> LoadError:
        """A ``LoadError`` pointing at ``at`` in this document."""
        return LoadError(message, path=self.path, line=self.line_of(at), field=dotted(at) or None)


def dotted(at: PathKey) -> str:
    """``("tools", 0, "name")`` as ``tools[0].name``."""
    out = ""
    for part in at:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def split_frontmatter(text: str, *, path: str | None = None) -> Split:
    """Frontmatter and body (§2.2), in linear time: a file whose first non-blank text is
    ``---`` or ``+++`` has frontmatter up to the next line that is only such a delimiter."""
    start = len(text) - len(text.lstrip())
    if not text.startswith(_DELIMITERS, start):
        return Split(None, text)
    open_line = text.count("\n", 0, start) + 1
    pos = start + 3
    close = _closing_line(text, pos)
    if close is None:
        raise LoadError("Malformed frontmatter: no closing '---' line", path=path, line=open_line)
    begin, end = close
    rest = text[end:]
    body = rest.strip()
    body_at = end + len(rest) - len(rest.lstrip())
    return Split(text[pos:begin], body, open_line, text.count("\n", 0, body_at) + 1)


def _closing_line(text: str, pos: int) -> tuple[int, int] | None:
    """Start and end offsets of the first delimiter line after ``pos``."""
    line_start = text.find("\n", pos)
    while line_start != -1:
        line_start += 1
        line_end = text.find("\n", line_start)
        stop = len(text) if line_end == -1 else line_end
        if text[line_start:stop].strip() in _DELIMITERS:
            return line_start, stop
        line_start = line_end
    return None


def parse_yaml(text: str, *, path: str | None = None, first_line: int = 1) -> tuple[Any, Doc]:
    """YAML with the safe loader, within ``MAX_YAML_CHARS``, ``MAX_DEPTH`` and
    ``MAX_YAML_NODES``; ``first_line`` is the file line of the text's first line."""
    import yaml  # noqa: PLC0415 - the prompty extra

    if len(text) > MAX_YAML_CHARS:
        raise LoadError(
            f"Invalid frontmatter YAML: longer than {MAX_YAML_CHARS} characters",
            path=path,
            line=first_line,
        )
    try:
        _check_shape(yaml.parse(text, Loader=yaml.SafeLoader), path, first_line)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except LoadError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        if exc.context_mark is not None and (mark is None or mark.index >= len(text.rstrip())):
            mark = exc.context_mark  # the problem is the end of the text: point at its start
        line = None if mark is None else first_line + mark.line
        message = f"Invalid frontmatter YAML: {_yaml_problem(exc)}"
        raise LoadError(message, path=path, line=line) from exc
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise LoadError(f"Invalid frontmatter YAML: {exc}", path=path, line=first_line) from exc
    lines: dict[PathKey, int] = {}
    if node is not None:
        _record_lines(node, (), first_line, lines)
    return data, Doc(path, lines)


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    return ", ".join(parts) or type(exc).__name__


def _check_shape(events: Iterator[yaml.Event], path: str | None, first_line: int) -> None:
    """Refuse deep nesting, recursive aliases and alias bombs before any node is built."""
    import yaml  # noqa: PLC0415

    size = 0
    sizes: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = []
    for event in events:
        line = first_line + (event.start_mark.line if event.start_mark else 0)
        anchor = getattr(event, "anchor", None)
        if isinstance(event, yaml.AliasEvent):
            if anchor not in sizes:
                raise LoadError(
                    f"Invalid frontmatter YAML: alias *{anchor} is recursive or undefined",
                    path=path,
                    line=line,
                )
            size += sizes[anchor]
        elif isinstance(event, yaml.ScalarEvent):
            size += 1
            if anchor is not None:
                sizes[anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            size += 1
            if anchor is not None:
                sizes.pop(anchor, None)
            stack.append((anchor, size))
            if len(stack) > MAX_DEPTH:
                raise LoadError(
                    f"Invalid frontmatter YAML: nested deeper than {MAX_DEPTH} levels",
                    path=path,
                    line=line,
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            opened, began = stack.pop()
            if opened is not None:
                sizes[opened] = size - began + 1
        if size > MAX_YAML_NODES:
            raise LoadError(
                f"Invalid frontmatter YAML: more than {MAX_YAML_NODES} values "
                "once aliases are expanded",
                path=path,
                line=line,
            )


def _record_lines(node: yaml.Node, at: PathKey, first: int, out: dict[PathKey, int]) -> None:
    import yaml  # noqa: PLC0415

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = (*at, key.value)
                out.setdefault(child, first + key.start_mark.line)
                _record_lines(value, child, first, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.setdefault((*at, i), first + item.start_mark.line)
            _record_lines(item, (*at, i), first, out)


def read_text(path: Path, *, follow_symlinks: bool = True) -> str:
    """A regular file's UTF-8 text (a BOM dropped), at most ``MAX_FILE_BYTES``; never blocks
    on a FIFO or device, and with ``follow_symlinks=False`` refuses a final symlink."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise MissingFileError(f"File not found: {path}", path=str(path)) from None
    except OSError as exc:
        raise LoadError(f"Cannot open file: {exc.strerror}", path=str(path)) from exc
    return read_open(fd, str(path), MAX_FILE_BYTES)


def resolve_references(
    data: Any,
    doc: Doc,
    *,
    base_dir: Path | Place,
    allowed_roots: Sequence[Path] | None = None,
    env: EnvAccess | None = None,
) -> Any:
    """``data`` with every string that is wholly ``${env:...}`` or ``${file:...}`` replaced
    (§2.11), walking all mappings and lists; other ``${protocol:...}`` strings stay as written.
    Files resolve against ``base_dir`` and must lie inside it or ``allowed_roots``, opened
    without a race (``paths``); variables are read as ``env`` allows (default: the whole
    environment, as the spec reads it), each value an ``EnvValue``."""
    base = base_dir if isinstance(base_dir, Place) else Place(Path(base_dir))
    resolver = _Resolver(
        base,
        tuple(_canonical_root(r) for r in allowed_roots or ()),
        EnvAccess.of(None) if env is None else env,
    )
    return resolver.walk(data, doc, (), 0)


def _canonical_root(root: Path) -> Path:
    try:
        return Path(root).resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        raise LoadError(f"Allowed root cannot be resolved: {exc}", path=str(root)) from exc


class _Resolver:
    """One load's reference resolution, with its budget of values visited."""

    def __init__(self, base: Place, roots: tuple[Path, ...], env: EnvAccess):
        self.base = base
        self.roots = roots
        self.access = env
        self.visited = 0
        self.referenced = 0
        self.texts: dict[Path, str] = {}

    def walk(self, value: Any, doc: Doc, at: PathKey, includes: int) -> Any:
        self.visited += 1
        if self.visited > MAX_RESOLVED_NODES:
            raise doc.error(f"More than {MAX_RESOLVED_NODES} values after resolving references", at)
        if isinstance(value, dict):
            return {k: self.walk(v, doc, (*at, str(k)), includes) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v, doc, (*at, i), includes) for i, v in enumerate(value)]
        if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
            return self.reference(value[2:-1], doc, at, includes)
        return value

    def reference(self, inner: str, doc: Doc, at: PathKey, includes: int) -> Any:
        protocol, _, content = inner.partition(":")
        protocol = protocol.lower()
        if protocol == "env":
            return self.env(content, doc, at)
        if protocol == "file":
            return self.file(content, doc, at, includes)
        return "${" + inner + "}"

    def env(self, content: str, doc: Doc, at: PathKey) -> str:
        name, _, default = content.partition(":")
        if name and not self.access.allows(name):
            raise EnvAccessError(
                f"${{env:{name}}} is not allowed: the caller did not let this file read "
                f"variable '{name}' (load(..., env=['{name}']) does)",
                variable=name,
                path=doc.path,
                line=doc.line_of(at),
                field=dotted(at) or None,
            )
        value = self.access.get(name) if name and "\0" not in name else None
        if value is not None:
            return remember(value, name)
        if default:
            return default
        raise doc.error(f"Environment variable '{name}' not set", at)

    def file(self, reference: str, doc: Doc, at: PathKey, includes: int) -> Any:
        if includes >= MAX_INCLUDE_DEPTH:
            raise doc.error(f"File references nest deeper than {MAX_INCLUDE_DEPTH}", at)
        if not reference.strip():
            raise doc.error("Empty file reference", at)
        found = locate(reference, self.base, self.roots)
        if found is None:
            raise _outside(f"{reference} resolves outside allowed roots", doc, at)
        target = found.path
        text = self.texts.get(target)
        if text is None:
            text = self.read(reference, found, doc, at)
            self.texts[target] = text
        self.referenced += len(text)
        if self.referenced > MAX_REFERENCED_CHARS:
            raise doc.error(
                f"The referenced files together are over {MAX_REFERENCED_CHARS} characters", at
            )
        content, inner = _parse_file(target, text)
        return self.walk(content, inner, (), includes + 1)

    def read(self, reference: str, found: Located, doc: Doc, at: PathKey) -> str:
        """The referenced file's text, opened name by name beneath its allowed folder."""
        try:
            return read_located(found, MAX_FILE_BYTES)
        except MissingFileError:
            raise MissingFileError(
                f"Referenced file not found: {reference}",
                path=doc.path,
                line=doc.line_of(at),
                field=dotted(at) or None,
            ) from None
        except OutsideRootError:
            message = f"{reference} resolves outside allowed roots (through a link)"
            raise _outside(message, doc, at) from None


def _outside(message: str, doc: Doc, at: PathKey) -> OutsideRootError:
    return OutsideRootError(message, path=doc.path, line=doc.line_of(at), field=dotted(at) or None)


def _parse_file(target: Path, text: str) -> tuple[Any, Doc]:
    """A referenced file's content: JSON, YAML, or text by extension (§2.11)."""
    suffix = target.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return parse_yaml(text, path=str(target))
    doc = Doc(str(target))
    if suffix != ".json":
        return text, doc
    return parse_json(text, path=str(target)), doc


def parse_json(text: str, *, path: str) -> Any:
    """A JSON document from an untrusted file, its nesting capped at ``MAX_DEPTH``."""
    try:
        content = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise LoadError(f"Invalid JSON: {exc}", path=path) from exc
    if _depth(content) > MAX_DEPTH:
        raise LoadError(f"JSON nested deeper than {MAX_DEPTH} levels", path=path)
    return content


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            todo.extend((c, depth + 1) for c in children)
    return deepest
