"""The Prompty door's errors (spec §4.5, §12.4), each a subclass of the exception type the spec
names, so code written against the spec (``except ValueError``) still catches them.

PromptyError
└── LoadError (ValueError)          a .prompty file, or a file it references, is unusable
    ├── MissingFileError            the file is not there (also a FileNotFoundError)
    ├── EnvAccessError              the file reads a variable the caller did not allow
    ├── OutsideRootError            a file it names lies outside the allowed folders
    └── InputError                  the inputs given do not satisfy the agent's declared inputs
"""

from __future__ import annotations

from typing import Any

from .env import hide

__all__ = [
    "EnvAccessError",
    "InputError",
    "LoadError",
    "MissingFileError",
    "OutsideRootError",
    "PromptyError",
]


class PromptyError(Exception):
    """Base of every error the Prompty door raises on purpose. A value the file read from the
    environment never shows in its message: its ``${env:NAME}`` reference does."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(hide(a) if isinstance(a, str) else a for a in args))


class LoadError(PromptyError, ValueError):
    """A .prompty file cannot be loaded; ``path``, ``line`` (1-based) and ``field`` (a dotted
    frontmatter path such as ``model.connection.endpoint``) say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = hide(message)
        self.path = path
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = [
            part
            for part in (
                self.path,
                None if self.line is None else f"line {self.line}",
                None if self.field is None else f"field {self.field}",
            )
            if part
        ]
        return f"{self.message} ({', '.join(where)})" if where else self.message

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"path": self.path, "line": self.line, "field": self.field}
        return (_rebuild, (type(self), self.message, fields))


class MissingFileError(LoadError, FileNotFoundError):
    """The .prompty file, or a file a ``${file:...}`` reference names, does not exist."""


class EnvAccessError(LoadError):
    """The file references ``${env:NAME}`` and the caller did not allow ``NAME`` (``load(...,
    env=[...])``); ``variable`` is the name. The variable was not read."""

    def __init__(self, message: str, *, variable: str | None = None, **where: Any) -> None:
        super().__init__(message, **where)
        self.variable = variable

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"path": self.path, "line": self.line, "field": self.field}
        return (_rebuild, (type(self), self.message, {**fields, "variable": self.variable}))


class OutsideRootError(LoadError):
    """A file the .prompty names (``${file:}``, a tool's ``path`` or ``specification``) lies
    outside its folder and the allowed roots, by its path or through a symbolic link."""


class InputError(LoadError):
    """An input the agent declares as required was not given (spec §12.2); ``field`` is the
    input's name and ``path``/``line`` where it is declared."""


def _rebuild(cls: type[LoadError], message: str, fields: dict[str, Any]) -> LoadError:
    return cls(message, **fields)
