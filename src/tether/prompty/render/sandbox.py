"""The jinja2 sandbox Prompty templates run in: immutable, internals refused, and every
operation paid for from the render's work budget (``base.Budget``).

What an operation reads is charged before it runs and what it builds after; an operation that
could build a value out of proportion to its inputs (``ljust``, ``replace``, ``join``, ``*``,
``expandtabs``, ``to_bytes``, …) has its result's size worked out first and refused past the
output cap, and a split pays for its pieces first, so no template or input makes a render
build more than about ``MAX_WORK`` plus one capped value.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import TemplateLimitError
from .base import (
    ITEM_COST,
    MAX_OUTPUT_CHARS,
    charge,
    check_container_size,
    counted,
    is_container,
    text_of,
    weight_of,
)

if TYPE_CHECKING:
    from jinja2 import Environment

__all__ = ["concat_filter", "jinja_env", "mark_filter"]

_MAX_INT_BITS = 100_000
_DROPPED_FILTERS = (
    "batch",
    "center",
    "format",
    "indent",
    "pprint",
    "random",
    "slice",
    "striptags",
    "sum",
    "urlize",
    "wordwrap",
)
_CONSTANT_FILTERS = frozenset(("attr", "count", "d", "default", "first", "last", "length", "safe"))
_CONSTANT_TESTS = frozenset(
    (
        "boolean",
        "callable",
        "defined",
        "divisibleby",
        "escaped",
        "even",
        "false",
        "filter",
        "float",
        "integer",
        "iterable",
        "mapping",
        "none",
        "number",
        "odd",
        "sameas",
        "sequence",
        "string",
        "test",
        "true",
        "undefined",
    )
)
"""Filters and tests whose cost does not grow with their operand: not charged for reading it."""


@functools.cache
def jinja_env() -> Environment:
    """The one sandboxed environment, built on first use (jinja2 is an optional extra)."""
    from jinja2 import ChainableUndefined  # noqa: PLC0415
    from jinja2.exceptions import SecurityError  # noqa: PLC0415
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: PLC0415

    class PromptySandbox(ImmutableSandboxedEnvironment):
        """Refuses internals outright (not as a silent undefined) and string formatting, and
        charges operators, calls and slices to the render's work budget."""

        intercepted_binops = frozenset({"*", "**", "%", "+", "-", "/", "//"})
        intercepted_unops = frozenset({"-", "+"})

        def getattr(self, obj: Any, attribute: str) -> Any:
            if attribute.startswith("__"):
                raise SecurityError(f"access to attribute {attribute!r} is refused")
            return _guarded(super().getattr(obj, attribute))

        def getitem(self, obj: Any, argument: Any) -> Any:
            return _guarded(super().getitem(obj, argument))

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            raise SecurityError(
                f"access to attribute {attribute!r} of a {type(obj).__name__!r} is refused"
            )

        def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
            if super().wrap_str_format(value) is None:
                return None

            def refuse(*_: Any, **__: Any) -> str:
                raise SecurityError("str.format is not allowed in a prompty template")

            return refuse

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            charge(weight_of(left) + weight_of(right))
            return _paid(super().call_binop(context, operator, left, right))

        def call_unop(self, context: Any, operator: str, arg: Any) -> Any:
            charge(weight_of(arg))
            return _paid(super().call_unop(context, operator, arg))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            receiver = getattr(__obj, "__self__", None)
            charge(_weights(receiver, *args, *kwargs.values()))
            return _paid(super().call(__context, __obj, *args, **kwargs))

    env = PromptySandbox(
        autoescape=False,
        keep_trailing_newline=True,
        undefined=ChainableUndefined,
        finalize=_finalize,
    )
    _restrict(env)
    return env


def _finalize(value: Any) -> str:
    """What ``{{ … }}`` prints, charged as work (in ``{% set %}`` and filter blocks too)."""
    text = text_of(value)
    charge(len(text))
    return text


def _weights(*values: Any) -> int:
    return sum(weight_of(v) for v in values)


def _paid(result: Any) -> Any:
    """Charges what an operation built; an iterator it returned spends a step per item."""
    charge(weight_of(result))
    if isinstance(result, Iterator):
        return counted(result)
    return result


# --- filters and tests ----------------------------------------------------------------------


def _restrict(env: Environment) -> None:
    """Drops filters and globals that build output out of proportion to their input, bounds the
    ones that can amplify (``join``, ``replace``, ``string``, ``tojson``), and charges every
    filter and test for what it reads and builds."""
    from jinja2 import pass_eval_context  # noqa: PLC0415

    for name in _DROPPED_FILTERS:
        env.filters.pop(name, None)
    for name in ("lipsum", "namespace"):
        env.globals.pop(name, None)
    join, replace = env.filters["join"], env.filters["replace"]
    string, tojson = env.filters["string"], env.filters["tojson"]

    @pass_eval_context
    def bounded_join(ctx: Any, value: Any, d: str = "", attribute: Any = None) -> Any:
        items = [value] if isinstance(value, str) else list(counted(value))
        if attribute is None and not isinstance(value, str):
            return concat_filter(items, str(d))
        return _within_cap(join(ctx, value if isinstance(value, str) else items, d, attribute))

    @pass_eval_context
    def bounded_replace(ctx: Any, s: Any, old: Any, new: Any, count: Any = None) -> Any:
        _fits(_size_of_replace(str(s), str(old), str(new), count), "a replace")
        return replace(ctx, s, old, new, count)

    @pass_eval_context
    def checked_tojson(ctx: Any, value: Any, indent: Any = None) -> Any:
        if is_container(value):
            charge(check_container_size(value))
        return _within_cap(tojson(ctx, value, indent))

    def checked_string(value: Any) -> Any:
        if is_container(value):
            charge(check_container_size(value))
        return string(value)

    env.filters.update(
        {"join": bounded_join, "replace": bounded_replace, "string": checked_string}
        | {"tojson": checked_tojson}
    )
    for name, fn in list(env.filters.items()):
        env.filters[name] = _charged(fn, reads=name not in _CONSTANT_FILTERS)
    for name in list(env.tests):
        test: Any = env.tests[name]
        env.tests[name] = _charged(test, reads=name not in _CONSTANT_TESTS)
    env.filters.update(
        {
            "prompty.loop": counted,
            "prompty.concat": _charged(concat_filter, reads=False),
            "prompty.mark": mark_filter,
            "prompty.weigh": _weigh,
            "prompty.slice": _slice_filter,
        }
    )


def _charged(fn: Callable[..., Any], *, reads: bool) -> Callable[..., Any]:
    """``fn`` charging its arguments (when ``reads``) before and its result after."""

    @functools.wraps(fn)  # keeps jinja's pass_context / pass_eval_context marks
    def run(*args: Any, **kwargs: Any) -> Any:
        if reads:
            charge(_weights(*args, *kwargs.values()))
        return _paid(fn(*args, **kwargs))

    return run


def _weigh(value: Any) -> Any:
    """A comparison's operand: charged for what comparing it reads, passed on unchanged."""
    charge(weight_of(value))
    return value


def concat_filter(values: Iterable[Any], separator: str = "") -> str:
    """``separator.join`` of the values as text (``~``, ``join``), sized first."""
    total, parts = 0, []
    for value in counted(values):
        text = text_of(value)
        total += len(text) + len(separator)
        _fits(total, "a joined value")
        parts.append(text)
    return separator.join(parts)


def mark_filter(value: Any, token: str, index: int) -> str:
    """An interpolation bracketed by segment markers (``render_segments``)."""
    return f"\x00{token}<{index}\x00{text_of(value)}\x00{token}>\x00"


def _within_cap(text: Any) -> Any:
    if isinstance(text, str) and len(text) > MAX_OUTPUT_CHARS:
        raise TemplateLimitError(f"a filter's result is over {MAX_OUTPUT_CHARS} characters")
    return text


def _fits(size: int, what: str) -> None:
    """Refuses, before it is built, a result of ``size`` past the output cap (what is built is
    charged once it is there)."""
    if size > MAX_OUTPUT_CHARS:
        raise TemplateLimitError(f"{what} would be over {MAX_OUTPUT_CHARS} characters")


# --- methods that can build large values ----------------------------------------------------

Sizer = Callable[[Any, tuple[Any, ...], Mapping[str, Any]], int]


def _guarded(value: Any) -> Any:
    """``value``, or for a method that can amplify, a wrapper that sizes its result first
    (done at access, so a method passed along is guarded too)."""
    if not isinstance(value, types.BuiltinMethodType):
        return value
    owner, name = value.__self__, value.__name__
    if isinstance(owner, str | bytes | bytearray):
        if name == "join":
            return _sized_join(value, owner)
        if name in ("translate", "maketrans"):
            return _refused(name)
        if name in _SPLITS:
            return _paying(value, owner, _split_work)
        sizer = _TEXT_SIZERS.get(name)
    elif isinstance(owner, int) and name == "to_bytes":
        sizer = _to_bytes_size
    else:
        sizer = None
    if sizer is None:
        return value
    where = f"{type(owner).__name__}.{name}"

    def sized(*args: Any, **kwargs: Any) -> Any:
        _fits(sizer(owner, args, kwargs), where)
        return value(*args, **kwargs)

    return sized


def _paying(method: Any, owner: Any, work: Sizer) -> Callable[..., Any]:
    def paid(*args: Any, **kwargs: Any) -> Any:
        charge(work(owner, args, kwargs))
        return method(*args, **kwargs)

    return paid


def _sized_join(method: Any, owner: Any) -> Callable[..., Any]:
    def join(iterable: Iterable[Any]) -> Any:
        items = list(counted(iterable))
        size = sum(weight_of(i) for i in items) + len(owner) * max(len(items) - 1, 0)
        _fits(size, f"{type(owner).__name__}.join")
        return method(items)

    return join


def _refused(name: str) -> Callable[..., Any]:
    from jinja2.exceptions import SecurityError  # noqa: PLC0415

    def refuse(*_: Any, **__: Any) -> Any:
        raise SecurityError(f"{name} is not allowed in a prompty template")

    return refuse


def _arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], at: int, name: str, default: Any) -> Any:
    return args[at] if len(args) > at else kwargs.get(name, default)


def _width_size(owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    width = _arg(args, kwargs, 0, "width", 0)
    return max(len(owner), width if _is_int(width) else 0)


def _tabs_size(owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    size = _arg(args, kwargs, 0, "tabsize", 8)
    tab = "\t" if isinstance(owner, str) else b"\t"
    tabs: int = owner.count(tab)
    return len(owner) + tabs * max(size if _is_int(size) else 8, 0)


def _replace_size(owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    old, new = _arg(args, kwargs, 0, "old", ""), _arg(args, kwargs, 1, "new", "")
    count = _arg(args, kwargs, 2, "count", -1)
    if not isinstance(old, str | bytes | bytearray) or not isinstance(new, str | bytes):
        return len(owner)  # the call itself will refuse the types
    return _size_of_replace(owner, old, new, count)


def _to_bytes_size(owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    length = _arg(args, kwargs, 0, "length", 1)
    return int(length) if _is_int(length) else 1


def _split_work(owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """What a split builds: the text again, and a new string object (~56 bytes) per piece."""
    sep = _arg(args, kwargs, 0, "sep", None)
    pieces: int = len(owner) // 2 + 1
    if isinstance(sep, str | bytes) and sep:
        pieces = owner.count(sep) + 1
    limit = _arg(args, kwargs, 1, "maxsplit", -1)
    if _is_int(limit) and limit >= 0:
        pieces = min(pieces, limit + 1)
    return len(owner) + pieces * (ITEM_COST + 48)


_TEXT_SIZERS: dict[str, Sizer] = {
    "ljust": _width_size,
    "rjust": _width_size,
    "center": _width_size,
    "zfill": _width_size,
    "expandtabs": _tabs_size,
    "replace": _replace_size,
}
_SPLITS = frozenset(("split", "rsplit", "splitlines"))


def _slice_filter(obj: Any, start: Any, stop: Any, step: Any) -> Any:
    """``obj[start:stop:step]`` (a template's slice), charged for what it builds first."""
    index = slice(start, stop, step)
    charge(_slice_size(obj, index))
    return obj[index]


def _slice_size(obj: Any, index: slice) -> int:
    """The work a slice builds: its length (items weighed as a container's)."""
    try:
        length = len(range(*index.indices(len(obj))))
    except (TypeError, ValueError, OverflowError):
        return 0
    return length if isinstance(obj, str | bytes | bytearray) else length * ITEM_COST


def _size_of_replace(text: Any, old: Any, new: Any, count: Any = None) -> int:
    hits: int = len(text) + 1 if not old else text.count(old)
    if _is_int(count) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(0, len(new) - len(old))


def _check_binop(operator: str, left: Any, right: Any) -> None:
    from jinja2.exceptions import SecurityError  # noqa: PLC0415

    if operator == "%" and isinstance(left, str | bytes):
        raise SecurityError("%-formatting of strings is not allowed in a prompty template")
    if operator == "**" and _is_int(left) and _is_int(right):
        if right > 0 and max(left.bit_length(), 1) * right > _MAX_INT_BITS:
            raise TemplateLimitError("an exponent would build a number too large")
    elif operator == "*":
        _check_product(left, right)
    elif (
        operator == "+"
        and isinstance(left, str | bytes | bytearray | list | tuple)
        and hasattr(right, "__len__")
        and len(left) + len(right) > MAX_OUTPUT_CHARS
    ):
        raise TemplateLimitError(f"a sum would be over {MAX_OUTPUT_CHARS} items")


def _check_product(left: Any, right: Any) -> None:
    if _is_int(left) and _is_int(right):
        if left.bit_length() + right.bit_length() > _MAX_INT_BITS:
            raise TemplateLimitError("a product would build a number too large")
        return
    for seq, times in ((left, right), (right, left)):
        repeats = isinstance(seq, str | bytes | bytearray | list | tuple) and _is_int(times)
        if repeats and len(seq) * max(times, 0) > MAX_OUTPUT_CHARS:
            raise TemplateLimitError(f"a repetition would be over {MAX_OUTPUT_CHARS} items")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
