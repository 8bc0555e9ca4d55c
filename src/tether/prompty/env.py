"""Values a ``.prompty`` file read from the environment with ``${env:NAME}`` (spec §2.11), and
endpoints it wrote itself.

Each is an ``EnvValue``: a string that knows its reference, whose ``repr`` is the reference and
never the value. Every such value is remembered for the process, so the door's errors show the
reference in its place (``hide``) and the tracer blanks it whatever the variable is called.
An endpoint the file wrote as it is (not ``${env:}``) loads as ``Written``, so a credential from
the environment can be kept from it while one the application's code sets is trusted.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..tracing.redact import add_secret_source

__all__ = [
    "MIN_HIDDEN",
    "EnvAccess",
    "EnvOption",
    "EnvValue",
    "Written",
    "hidden",
    "hide",
    "known_values",
    "remember",
]

MIN_HIDDEN = 8
"""The shortest remembered value searched for inside longer text (a shorter one would match
ordinary words); an ``EnvValue`` itself is recognised at any length."""
_MAX_KNOWN = 4_096


class _Memory:
    """The values remembered so far (value → reference), oldest first, at most ``_MAX_KNOWN``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.known: dict[str, str] = {}
        self.longest_first: tuple[tuple[str, str], ...] = ()

    def add(self, value: str, reference: str) -> None:
        with self.lock:
            if self.known.get(value) == reference:
                return
            if len(self.known) >= _MAX_KNOWN:
                self.known.pop(next(iter(self.known)))
            self.known[value] = reference
            pairs = ((v, r) for v, r in self.known.items() if len(v) >= MIN_HIDDEN)
            self.longest_first = tuple(sorted(pairs, key=lambda p: len(p[0]), reverse=True))


_MEMORY = _Memory()


class EnvValue(str):
    """A string read from the environment; ``reference`` is ``${env:NAME}``."""

    reference: str

    def __new__(cls, value: str, reference: str = "${env:?}") -> EnvValue:
        made = super().__new__(cls, value)
        made.reference = reference
        return made

    def __repr__(self) -> str:
        return self.reference

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return (str(self), self.reference)


class Written(str):
    """A string the ``.prompty`` file (or a file it references) wrote as it is: neither read
    from the environment nor set by the application's code."""

    __slots__ = ()

    @classmethod
    def mark(cls, value: str | None) -> str | None:
        """``value`` marked as written, unless it came from the environment (or is absent)."""
        return value if value is None or isinstance(value, EnvValue) else cls(value)


def remember(value: str, name: str) -> EnvValue:
    """``value`` (of variable ``name``) as an ``EnvValue``, remembered for ``hide``."""
    reference = "${env:" + name + "}"
    _MEMORY.add(value, reference)
    return EnvValue(value, reference)


def known_values() -> tuple[str, ...]:
    """Every remembered value long enough to search for, longest first."""
    return tuple(v for v, _ in _MEMORY.longest_first)


def hide(text: str) -> str:
    """``text`` with each remembered value replaced by its reference."""
    for value, reference in _MEMORY.longest_first:
        if value in text:
            text = text.replace(value, reference)
    return text


def hidden(value: Any) -> str:
    """``value`` as an error message may show it: an ``EnvValue`` as its reference."""
    return value.reference if isinstance(value, EnvValue) else str(value)


EnvOption = Iterable[str] | Mapping[str, str] | None
"""What ``load(..., env=)`` takes: ``None`` (the whole environment, as the spec reads it),
variable names to read from ``os.environ`` (an allow-list for a file from elsewhere; ``()`` for
none at all), or a mapping to read every variable from."""


@dataclass(frozen=True, slots=True)
class EnvAccess:
    """Which variables one load may read (``names``; ``None`` is every one) and from where
    (``source``; ``None`` is ``os.environ`` as it is when read, so an agent that keeps its
    access still copies and pickles)."""

    names: frozenset[str] | None
    source: Mapping[str, str] | None = None

    @classmethod
    def of(cls, env: EnvOption | EnvAccess) -> EnvAccess:
        """The access ``env`` grants (an ``EnvAccess`` is kept as it is)."""
        if isinstance(env, EnvAccess):
            return env
        if env is None or env is os.environ:
            return cls(None)
        if isinstance(env, str | bytes):
            raise TypeError("env takes a list of variable names or a mapping, not one string")
        if isinstance(env, Mapping):
            return cls(None, env)
        names = frozenset(env)
        if not all(isinstance(n, str) for n in names):
            raise TypeError("env takes variable names as strings")
        return cls(names)

    def within(self, limit: EnvAccess) -> EnvAccess:
        """This access, reading no variable ``limit`` may not read (a child file of a parent
        loaded with ``limit`` never sees more than the parent could)."""
        if limit.names is None:
            return self
        names = limit.names if self.names is None else self.names & limit.names
        return EnvAccess(names, self.source)

    def allows(self, name: str) -> bool:
        """Whether ``name`` may be read."""
        return self.names is None or name in self.names

    def get(self, name: str) -> str | None:
        """The variable's value, or ``None`` when it is not set (or not a string)."""
        value = (os.environ if self.source is None else self.source).get(name)
        return value if isinstance(value, str) else None


add_secret_source(known_values)  # engine traces blank them too, whatever the variable's name
