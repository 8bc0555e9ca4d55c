"""Prompty's tracing core (spec §3): the registry of named backends, the ``@trace`` decorator,
``to_dict`` serialisation, redaction of secrets before any backend sees a value, and usage
hoisting from child spans to their parents.

A backend is a factory ``(span_name) -> context manager`` whose ``__enter__`` gives an emitter
``(key, value) -> None``; ``Tracer.start`` opens every registered one and fans each emission out.
Nesting is each backend's own business (the ``.tracy`` backend and OpenTelemetry keep theirs in
context variables, so concurrent asyncio tasks build separate trees).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import inspect
import logging
import math
import threading
import traceback
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, aclosing
from pathlib import PurePath
from types import TracebackType
from typing import Any, ClassVar, Protocol, TypeAlias, TypeVar, overload

from ...tracing.redact import BLANK, environment_secrets, is_sensitive_key, redact
from ..env import EnvValue, known_values

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_NODES",
    "MAX_STRING",
    "Emitter",
    "Tracer",
    "TracerFactory",
    "failure",
    "hoist_usage",
    "iso_utc",
    "redacted",
    "to_dict",
    "trace",
]

log = logging.getLogger("tether.prompty.tracing")

Emitter: TypeAlias = Callable[[str, Any], None]
F = TypeVar("F", bound=Callable[..., Any])

MAX_DEPTH = 64  # nesting levels serialised; deeper values become "[too deep]"
MAX_ITEMS = 1_000  # entries kept of one list or dict, and items kept of a traced generator
MAX_STRING = 64_000  # characters kept of one string
MAX_NODES = 100_000  # values serialised by one ``to_dict`` call
CUT = "…[cut]"


class TracerFactory(Protocol):
    """A tracing backend: opens a span called ``name``; entering it gives the span's emitter,
    leaving it ends the span."""

    def __call__(self, name: str, /) -> AbstractContextManager[Emitter]: ...


# --- the registry ---------------------------------------------------------------------------------


class Tracer:
    """The process-wide registry of tracing backends (§3.1). Safe from any thread: changes
    replace an immutable snapshot under a lock, and ``start`` reads one snapshot."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _backends: ClassVar[tuple[tuple[str, TracerFactory], ...]] = ()

    @classmethod
    def add(cls, name: str, factory: TracerFactory) -> None:
        """Register ``factory`` as ``name`` (replacing a backend of that name)."""
        with cls._lock:
            kept = tuple((n, f) for n, f in cls._backends if n != name)
            cls._backends = (*kept, (name, factory))

    @classmethod
    def remove(cls, name: str) -> None:
        """Unregister the backend ``name`` (nothing happens if there is none)."""
        with cls._lock:
            cls._backends = tuple((n, f) for n, f in cls._backends if n != name)

    @classmethod
    def clear(cls) -> None:
        """Unregister every backend."""
        with cls._lock:
            cls._backends = ()

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The registered backends' names, in the order they were added."""
        return tuple(name for name, _ in cls._backends)

    @classmethod
    def active(cls) -> bool:
        """Whether any backend is registered (with none, tracing is skipped)."""
        return bool(cls._backends)

    @classmethod
    def start(cls, name: str) -> AbstractContextManager[Emitter]:
        """A span called ``name`` in every registered backend: ``with Tracer.start(name) as
        emit: emit(key, value)``. Values are serialised and redacted once, then fanned out."""
        return _Span(name, cls._backends)


class _Span:
    """One span open in several backends; a backend that fails is logged and left out."""

    __slots__ = ("_backends", "_name", "_open", "_secrets")

    def __init__(self, name: str, backends: tuple[tuple[str, TracerFactory], ...]) -> None:
        self._name, self._backends = name, backends
        self._open: list[tuple[str, AbstractContextManager[Emitter], Emitter]] = []
        self._secrets: tuple[str, ...] | None = None

    def __enter__(self) -> Emitter:
        for backend, factory in self._backends:
            try:
                manager = factory(self._name)
                emit = manager.__enter__()
            except Exception:
                log.warning("tracer %r could not open span %r", backend, self._name, exc_info=True)
                continue
            self._open.append((backend, manager, emit))
        return self.emit

    def emit(self, key: str, value: Any) -> None:
        """Serialise and redact ``value``, then hand it to every open backend."""
        if not self._open:
            return
        if self._secrets is None:
            self._secrets = _secrets()
        try:
            if value is not None and is_sensitive_key(key):
                safe: Any = BLANK
            else:
                safe = _Walk(self._secrets).value(value, 0)
        except Exception:
            log.warning("could not serialise %r of span %r", key, self._name, exc_info=True)
            return
        for backend, _, emit in self._open:
            try:
                emit(key, safe)
            except Exception:
                log.warning("tracer %r failed on %r", backend, key, exc_info=True)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        while self._open:
            backend, manager, _ = self._open.pop()
            try:
                manager.__exit__(kind, error, tb)
            except BaseException as exc:
                if exc is error:
                    continue  # the span's own exception, going on up anyway
                if not isinstance(exc, Exception):
                    raise
                log.warning("tracer %r failed to end span %r", backend, self._name, exc_info=True)


# --- serialisation and redaction --------------------------------------------------------------


def to_dict(value: Any) -> Any:
    """``value`` as JSON-safe data (§3.3): scalars as they are, datetimes in ISO 8601, dataclasses
    and models as dicts, paths as strings, containers recursively, anything else ``str()``.
    Cycles, depth, size and string length are capped."""
    return _Walk(None).value(value, 0)


def redacted(value: Any) -> Any:
    """``to_dict(value)`` with secrets blanked (§3.4): the value of every key that names a
    credential at any depth, and credentials found in strings (tether's ``redact``)."""
    return _Walk(_secrets()).value(value, 0)


def _secrets() -> tuple[str, ...]:
    """What redaction blanks inside text: the values of variables named like credentials, and
    every value a ``.prompty`` file read with ``${env:...}`` whatever its name; longest first."""
    found = {*environment_secrets(), *known_values()}
    return tuple(sorted(found, key=len, reverse=True))


def iso_utc(moment: dt.datetime) -> str:
    """``moment`` in ISO 8601, ``Z`` for UTC."""
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


_LEAVES = (
    type(None),
    bool,
    int,
    float,
    str,
    dt.datetime,
    dt.date,
    dt.time,
    PurePath,
    bytes,
    bytearray,
    memoryview,
)
"""The values ``_Walk.leaf`` writes whole: scalars, moments, paths, bytes."""


class _Walk:
    """One serialisation: counts values against ``MAX_NODES`` and keeps the containers on the
    current path to spot cycles. ``secrets`` None: no redaction."""

    __slots__ = ("nodes", "path", "secrets")

    def __init__(self, secrets: tuple[str, ...] | None) -> None:
        self.secrets, self.nodes, self.path = secrets, 0, set[int]()

    def value(self, value: Any, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            return "[truncated]"
        if isinstance(value, _LEAVES):
            return self.leaf(value)
        if depth >= MAX_DEPTH:
            return "[too deep]"
        if id(value) in self.path:
            return "[circular reference]"
        self.path.add(id(value))
        try:
            return self.composite(value, depth + 1)
        finally:
            self.path.discard(id(value))

    def leaf(self, value: Any) -> Any:
        """A value with no parts (one of ``_LEAVES``): as it is, or as text."""
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, str):
            if isinstance(value, EnvValue) and self.secrets is not None:
                return BLANK  # read from the environment: blank at any length
            return self.text(value)
        if isinstance(value, dt.datetime | dt.date | dt.time):
            return iso_utc(value) if isinstance(value, dt.datetime) else value.isoformat()
        if isinstance(value, PurePath):
            return self.text(str(value))
        more = CUT if len(value) > MAX_STRING else ""  # bytes, bytearray, memoryview
        return self.text(str(bytes(value[:MAX_STRING])) + more)

    def composite(self, value: Any, depth: int) -> Any:
        if isinstance(value, Mapping):
            return self.mapping(value.items(), len(value), depth)
        if isinstance(value, list | tuple | set | frozenset):
            return self.sequence(value, len(value), depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.value(_dataclass_dict(value), depth)
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):
            return self.value(_call_or_none(dump), depth)
        return self.text(_text_of(value))

    def mapping(self, items: Iterable[tuple[Any, Any]], size: int, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for n, (key, item) in enumerate(items):
            if n == MAX_ITEMS:
                out["…"] = f"[{size - MAX_ITEMS} more entries]"
                break
            name = key if isinstance(key, str) else _text_of(key)
            blank = self.secrets is not None and item is not None and is_sensitive_key(name)
            out[name] = BLANK if blank else self.value(item, depth)
        return out

    def sequence(self, items: Iterable[Any], size: int, depth: int) -> list[Any]:
        out: list[Any] = []
        for n, item in enumerate(items):
            if n == MAX_ITEMS:
                out.append(f"[{size - MAX_ITEMS} more items]")
                break
            out.append(self.value(item, depth))
        return out

    def text(self, text: str) -> str:
        if self.secrets is not None:
            text = redact(text, self.secrets)  # before the cut: a cut secret would not match
        return text if len(text) <= MAX_STRING else text[:MAX_STRING] + CUT


def _dataclass_dict(value: Any) -> Any:
    """A dataclass's own ``to_dict()`` if it has one (Prompty's types give their spec shape),
    else its fields."""
    own = getattr(value, "to_dict", None)
    if callable(own):
        found = _call_or_none(own)
        if found is not None:
            return found
    return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}


def _call_or_none(method: Callable[[], Any]) -> Any:
    try:
        return method()
    except Exception:
        return None


def _text_of(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__qualname__} object>"


# --- usage hoisting ---------------------------------------------------------------------------


def hoist_usage(frame: dict[str, Any]) -> dict[str, int | float]:
    """Set ``frame["__usage"]`` (and its children's) to the token counts of its result's
    ``usage`` plus its children's, summed by the provider's own field names (§3.5)."""
    total: dict[str, int | float] = {}
    result = frame.get("result")
    usage = result.get("usage") if isinstance(result, dict) else None
    if isinstance(usage, dict):
        _add(total, usage)
    for child in frame.get("__frames") or ():
        if isinstance(child, dict):
            _add(total, hoist_usage(child))
    frame["__usage"] = total
    return total


def _add(total: dict[str, int | float], counts: Mapping[str, Any]) -> None:
    for key, count in counts.items():
        if isinstance(count, int | float) and not isinstance(count, bool):
            total[key] = total.get(key, 0) + count


# --- the decorator ----------------------------------------------------------------------------


@overload
def trace(fn: F, /) -> F: ...


@overload
def trace(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    ignore_params: Iterable[str] = (),
    **attributes: Any,
) -> Callable[[F], F]: ...


def trace(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    ignore_params: Iterable[str] = (),
    **attributes: Any,
) -> Any:
    """Trace every call of a function, coroutine function or (async) generator function
    (§3.2): a span named ``name`` (default its signature ``module.qualname``) with its
    ``signature``, ``inputs`` (less ``self`` and ``ignore_params``), the ``attributes`` given
    here, and its ``result`` or exception. Usable bare (``@trace``) or with arguments."""

    def decorate(function: F) -> F:
        return _wrap(function, _Call(function, name, frozenset(ignore_params), attributes))

    return decorate if fn is None else decorate(fn)


class _Call:
    """What one traced function emits: its signature, attributes, inputs and outcome."""

    __slots__ = ("attributes", "ignore", "parameters", "signature", "span_name")

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        ignore: frozenset[str],
        attributes: dict[str, Any],
    ) -> None:
        module = getattr(fn, "__module__", None) or "__main__"
        qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        self.signature = f"{module}.{qualname}"
        self.span_name = name or self.signature
        self.ignore = ignore | {"self"}
        self.attributes = attributes
        try:
            self.parameters: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.parameters = None

    def begin(self, emit: Emitter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        emit("signature", self.signature)
        for key, value in self.attributes.items():
            emit(key, value)
        emit("inputs", self.inputs(args, kwargs))

    def inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.parameters is None:
            return {"args": args, "kwargs": kwargs}
        try:
            bound = self.parameters.bind(*args, **kwargs)
        except TypeError:  # the call itself will fail, and say why
            return {"args": args, "kwargs": kwargs}
        bound.apply_defaults()
        return {k: v for k, v in bound.arguments.items() if k not in self.ignore}


def failure(error: BaseException) -> dict[str, str]:
    """The ``result`` of a call that raised ``error``."""
    return {
        "exception": type(error).__name__,
        "message": str(error),
        "traceback": "".join(traceback.format_exception(error)),
    }


def _wrap(fn: F, call: _Call) -> F:
    if inspect.isasyncgenfunction(fn):
        wrapped: Callable[..., Any] = _wrap_async_generator(fn, call)
    elif inspect.iscoroutinefunction(fn):
        wrapped = _wrap_coroutine(fn, call)
    elif inspect.isgeneratorfunction(fn):
        wrapped = _wrap_generator(fn, call)
    else:
        wrapped = _wrap_function(fn, call)
    return functools.wraps(fn)(wrapped)  # type: ignore[return-value]


def _wrap_function(fn: Callable[..., Any], call: _Call) -> Callable[..., Any]:
    def traced(*args: Any, **kwargs: Any) -> Any:
        if not Tracer.active():
            return fn(*args, **kwargs)
        with Tracer.start(call.span_name) as emit:
            call.begin(emit, args, kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                emit("result", failure(exc))
                raise
            emit("result", result)
            return result

    return traced


def _wrap_coroutine(fn: Callable[..., Any], call: _Call) -> Callable[..., Any]:
    async def traced(*args: Any, **kwargs: Any) -> Any:
        if not Tracer.active():
            return await fn(*args, **kwargs)
        with Tracer.start(call.span_name) as emit:
            call.begin(emit, args, kwargs)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                emit("result", failure(exc))
                raise
            emit("result", result)
            return result

    return traced


def _wrap_generator(fn: Callable[..., Iterator[Any]], call: _Call) -> Callable[..., Any]:
    def traced(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        if not Tracer.active():
            return (yield from fn(*args, **kwargs))
        with Tracer.start(call.span_name) as emit:
            call.begin(emit, args, kwargs)
            items: list[Any] = []
            generator = fn(*args, **kwargs)
            try:
                while True:
                    try:
                        item = next(generator)
                    except StopIteration as stop:
                        emit("result", items)
                        return stop.value
                    if len(items) < MAX_ITEMS:
                        items.append(item)
                    yield item
            except GeneratorExit:  # the consumer stopped early: what it got is the result
                emit("result", items)
                raise
            except BaseException as exc:
                emit("result", failure(exc))
                raise
            finally:
                _close(generator)

    return traced


def _close(generator: Iterator[Any]) -> None:
    close = getattr(generator, "close", None)
    if callable(close):
        close()


def _wrap_async_generator(fn: Callable[..., AsyncIterator[Any]], call: _Call) -> Callable[..., Any]:
    async def traced(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if not Tracer.active():
            async with aclosing(fn(*args, **kwargs)) as plain:  # type: ignore[type-var]
                async for item in plain:
                    yield item
            return
        with Tracer.start(call.span_name) as emit:
            call.begin(emit, args, kwargs)
            items: list[Any] = []
            try:
                async with aclosing(fn(*args, **kwargs)) as stream:  # type: ignore[type-var]
                    async for item in stream:
                        if len(items) < MAX_ITEMS:
                            items.append(item)
                        yield item
            except GeneratorExit:
                emit("result", items)
                raise
            except BaseException as exc:
                emit("result", failure(exc))
                raise
            emit("result", items)

    return traced
