"""Where skills are found: a ``Registry`` (thread-safe; a private one per agent, or the
process-wide one ``@skill`` fills) and the decorators that make and register skills.

Validators are hooks, not registry entries: ``register_validator`` (cantus's
``protocols.validator``) names one process-wide, and ``@skill(post_hook="that name")`` uses it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, overload

from .base import FunctionSkill, Skill, make_skill
from .hooks import RESERVED_VALIDATOR_NAMES, ReservedValidatorNameError, Validator

__all__ = [
    "KINDS",
    "Registry",
    "get_registry",
    "register_skill",
    "register_validator",
    "skill",
]

KINDS: tuple[str, ...] = ("skill",)
_REMOVED_KINDS = ("analyzer", "validator", "workflow")

Hook = Callable[..., Any]
"""A pre- or post-hook: a callable, or (post-hooks) the name of a registered validator."""


class Registry:
    """Skills by name. ``register(a_skill)`` or cantus's ``register("skill", a_skill)``; a name
    registered again is replaced. ``KINDS`` are the kinds of entry it holds: skills only."""

    KINDS: ClassVar[tuple[str, ...]] = KINDS

    def __init__(self, skills: Iterable[Skill] = ()) -> None:
        self._lock = threading.Lock()
        self._by_kind: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        for one in skills:
            self.register(one)

    def register(self, kind_or_skill: str | Skill, instance: Any = None) -> Any:
        """Add a skill (returned, so this works as a decorator on skill objects)."""
        kind, item = ("skill", kind_or_skill) if instance is None else (kind_or_skill, instance)
        if kind in _REMOVED_KINDS:
            raise ValueError(
                f"{kind}s are hooks, not registry entries: pass them as "
                "@skill(pre_hook=..., post_hook=...) (register_validator names a validator)"
            )
        if kind not in KINDS:
            raise ValueError(f"Unknown protocol kind: {kind!r} (known: {list(KINDS)})")
        if isinstance(item, str) or not getattr(item, "name", None):
            raise ValueError(f"a registered {kind} needs a name; got {item!r}")
        with self._lock:
            self._by_kind[kind][item.name] = item
        return item

    def lookup(self, kind: str, name: str) -> Any:
        """The entry ``name`` of ``kind``, or None."""
        with self._lock:
            return self._by_kind.get(kind, {}).get(name)

    def get(self, name: str) -> Skill | None:
        """The skill ``name``, or None."""
        found = self.lookup("skill", name)
        return found if isinstance(found, Skill) else None

    def names_for(self, kind: str) -> list[str]:
        """The names registered under ``kind``, sorted."""
        with self._lock:
            return sorted(self._by_kind.get(kind, {}))

    def skills(self) -> list[Skill]:
        """The skills, sorted by name."""
        with self._lock:
            entries = self._by_kind["skill"]
            return [entries[n] for n in sorted(entries)]

    def spec_for_llm(self) -> dict[str, list[dict[str, Any]]]:
        """``{"skill": [spec, ...]}`` sorted by name: what the model is told it may call."""
        return {"skill": [s.spec_for_llm() for s in self.skills()]}

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            for entries in self._by_kind.values():
                entries.clear()

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.names_for("skill"))


_GLOBAL = Registry()


def get_registry() -> Registry:
    """The process-wide registry ``@skill`` registers into."""
    return _GLOBAL


@overload
def skill(fn: Callable[..., Any], /) -> FunctionSkill: ...
@overload
def skill(
    fn: None = None,
    /,
    *,
    pre_hook: Hook | None = None,
    post_hook: Hook | str | None = None,
) -> Callable[[Callable[..., Any]], FunctionSkill]: ...
def skill(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    pre_hook: Hook | None = None,
    post_hook: Hook | str | None = None,
) -> FunctionSkill | Callable[[Callable[..., Any]], FunctionSkill]:
    """Make a typed function a skill and register it process-wide: ``@skill`` or
    ``@skill(pre_hook=..., post_hook=...)`` (``post_hook`` a callable or a registered
    validator's name). The result is a ``Skill`` (callable as before)."""
    if fn is not None:
        return _GLOBAL.register(make_skill(fn))  # type: ignore[no-any-return]
    post = _post_hook(post_hook)
    return lambda f: _GLOBAL.register(make_skill(pre_hook=pre_hook, post_hook=post)(f))


def register_skill(
    fn_or_skill: Callable[..., Any] | Skill,
    *,
    pre_hook: Hook | None = None,
    post_hook: Hook | str | None = None,
) -> Skill:
    """Register a function (made a skill) or a ``Skill`` object process-wide; returns the skill."""
    made = (
        fn_or_skill
        if isinstance(fn_or_skill, Skill)
        else make_skill(pre_hook=pre_hook, post_hook=_post_hook(post_hook))(fn_or_skill)
    )
    return _GLOBAL.register(made)  # type: ignore[no-any-return]


# -- named validators ----------------------------------------------------------------------------

_VALIDATORS: dict[str, Validator] = {}
_VALIDATORS_LOCK = threading.Lock()


@overload
def register_validator(name_or_fn: Callable[..., Any], /) -> Validator: ...
@overload
def register_validator(name_or_fn: str, fn: Callable[..., Any], /) -> Validator: ...
@overload
def register_validator(name_or_fn: str, /) -> Callable[[Callable[..., Any]], Validator]: ...
def register_validator(
    name_or_fn: str | Callable[..., Any], fn: Callable[..., Any] | None = None, /
) -> Validator | Callable[[Callable[..., Any]], Validator]:
    """Name a validator process-wide (cantus's ``protocols.validator``): ``register_validator(
    "name", fn)``, ``@register_validator("name")`` or bare ``@register_validator`` (the function's
    name). ``fn`` takes a skill's value and returns a ``Result``; the returned ``Validator`` is a
    post-hook (``@skill(post_hook=...)``, by itself or by name) whose refusals the model sees
    under that name. The agent's own check names are refused (``ReservedValidatorNameError``, a
    ``ValueError``); a name registered again is replaced."""
    if not isinstance(name_or_fn, str):
        return _register_validator(getattr(name_or_fn, "__name__", ""), name_or_fn)
    name = name_or_fn
    if fn is None:
        _check_name(name)
        return lambda f: _register_validator(name, f)
    return _register_validator(name, fn)


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a validator needs a non-empty name; got {name!r}")
    if name in RESERVED_VALIDATOR_NAMES:
        raise ReservedValidatorNameError(
            f"{name!r} is the agent's own check; give the validator another name"
        )


def _register_validator(name: str, fn: Callable[..., Any]) -> Validator:
    _check_name(name)
    if not callable(fn):
        raise TypeError(f"validator {name!r} must be callable, not {type(fn).__name__}")
    made = Validator(fn if getattr(fn, "__name__", None) == name else _renamed(fn, name))
    with _VALIDATORS_LOCK:
        _VALIDATORS[name] = made
    return made


def _renamed(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` under another name (the name a validator's refusals carry)."""

    def named(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    named.__name__ = named.__qualname__ = name
    named.__doc__ = fn.__doc__
    return named


def _post_hook(hook: Hook | str | None) -> Hook | None:
    """A post-hook as given, or the registered validator a name names."""
    if not isinstance(hook, str):
        return hook
    with _VALIDATORS_LOCK:
        found = _VALIDATORS.get(hook)
        known = sorted(_VALIDATORS)
    if found is None:
        raise ValueError(
            f"no validator is registered as {hook!r} (registered: {known}); "
            "register_validator(name, fn) first"
        )
    return found
