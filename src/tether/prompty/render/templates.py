"""Rendering a Prompty template (spec §5): the renderer registry (``jinja2`` and ``mustache``
built in, from ``jinja`` and ``mustache``), rich-kind nonces, the provenance-tagged
segment render and its strict-input check. Templates are untrusted: see the engines' modules."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from ..env import hidden
from ..errors import (
    InvokerError,
    RenderError,
    StrictViolation,
    TemplateLimitError,
    TemplateSecurityError,
    TemplateSyntaxError,
)
from ..registry import NameTable
from ..tracing.tracer import trace
from .base import (
    BUDGET,
    MAX_LOOP_ITERATIONS,
    MAX_OUTPUT_CHARS,
    MAX_TEMPLATE_CHARS,
    MAX_WORK,
    NONCE_PREFIX,
    RICH_KINDS,
    Budget,
    Rendered,
    RenderSegment,
    RichInput,
    SegmentRenderer,
    TemplateRenderer,
)
from .jinja import JinjaRenderer
from .mustache import MustacheRenderer

__all__ = [
    "MAX_LOOP_ITERATIONS",
    "MAX_OUTPUT_CHARS",
    "MAX_TEMPLATE_CHARS",
    "MAX_WORK",
    "NONCE_PREFIX",
    "RICH_KINDS",
    "InvokerError",
    "JinjaRenderer",
    "MustacheRenderer",
    "RenderError",
    "RenderSegment",
    "Rendered",
    "RichInput",
    "SegmentRenderer",
    "StrictViolation",
    "TemplateLimitError",
    "TemplateRenderer",
    "TemplateSecurityError",
    "TemplateSyntaxError",
    "forges_role_boundary",
    "get_renderer",
    "new_nonce",
    "register_renderer",
    "render",
    "render_segments",
    "unregister_renderer",
]

_STRICT_ROLES = ("system", "user", "assistant", "developer")
_T = TypeVar("_T")

# --- the registry -------------------------------------------------------------------------


_RENDERERS: NameTable[TemplateRenderer] = NameTable("renderer")


def register_renderer(kind: str, renderer: TemplateRenderer) -> None:
    """Make ``renderer`` the engine for ``template.format.kind == kind`` (replacing any)."""
    _RENDERERS.put(kind.strip().lower(), renderer)


def unregister_renderer(kind: str) -> None:
    """Forget the engine for ``kind`` (a no-op when there is none)."""
    _RENDERERS.remove(kind.strip().lower())


def get_renderer(kind: str) -> TemplateRenderer:
    """The engine for ``kind``; ``InvokerError`` when none is registered."""
    renderer = _RENDERERS.get(kind.strip().lower()) if isinstance(kind, str) else None
    if renderer is None:
        raise InvokerError(f"No renderer registered for key: {hidden(kind)}")
    return renderer


# --- the public operations ----------------------------------------------------------------


def new_nonce(name: str) -> str:
    """A fresh rich-kind nonce, ``__PROMPTY_THREAD_<8 hex>_<name>__`` (secure random)."""
    return f"{NONCE_PREFIX}{secrets.token_hex(4)}_{name}__"


@trace(name="render")
def render(
    template: str,
    inputs: Mapping[str, Any],
    *,
    engine: str = "jinja2",
    rich_kinds: Mapping[str, str] | None = None,
) -> Rendered:
    """Render ``template`` with ``engine``; inputs named in ``rich_kinds`` are replaced by
    nonces first, and the result carries the nonce map the parser needs."""
    _check_template(template)
    renderer = get_renderer(engine)
    prepared, rich = _prepare_inputs(inputs, rich_kinds or {})
    text = _guarded(engine, lambda: renderer.render(template, prepared))
    if not isinstance(text, str):
        raise RenderError(f"renderer {hidden(engine)!r} returned {type(text).__name__}, not text")
    if len(text) > MAX_OUTPUT_CHARS:
        raise TemplateLimitError(f"rendered text is over {MAX_OUTPUT_CHARS} characters")
    return Rendered(text, rich)


def render_segments(
    template: str,
    inputs: Mapping[str, Any],
    *,
    engine: str = "jinja2",
    strict: Collection[str] = (),
    rich_kinds: Mapping[str, str] | None = None,
) -> list[RenderSegment]:
    """Render as provenance-tagged segments; a ``strict`` input whose interpolated text holds a
    role-boundary line raises ``StrictViolation``."""
    _check_template(template)
    renderer = get_renderer(engine)
    if not isinstance(renderer, SegmentRenderer):
        raise InvokerError(f"No segment renderer registered for key: {hidden(engine)}")
    prepared, _ = _prepare_inputs(inputs, rich_kinds or {})
    segments = _guarded(engine, lambda: renderer.render_segments(template, prepared, strict))
    for segment in segments:
        if segment.strict:
            _check_strict(segment)
    return segments


def _check_template(template: object) -> None:
    if not isinstance(template, str):
        raise RenderError(f"a template must be text, not {type(template).__name__}")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateLimitError(
            f"the template is {len(template)} characters; the cap is {MAX_TEMPLATE_CHARS}"
        )


def _prepare_inputs(
    inputs: Mapping[str, Any], rich_kinds: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, RichInput]]:
    prepared = dict(inputs)
    rich: dict[str, RichInput] = {}
    for name, kind in rich_kinds.items():
        if kind not in RICH_KINDS:
            raise ValueError(f"input {name!r} has kind {kind!r}, not one of {sorted(RICH_KINDS)}")
        if name not in prepared:
            continue
        nonce = new_nonce(name)
        rich[nonce] = RichInput(name, kind, prepared[name])
        prepared[name] = nonce
    return prepared, rich


def _guarded(engine: str, call: Callable[[], _T]) -> _T:
    """Runs an engine under a fresh loop budget; any failure that is not ours becomes a
    ``RenderError`` naming the engine."""
    token = BUDGET.set(Budget())
    try:
        return call()
    except (RenderError, InvokerError):
        raise
    except RecursionError as exc:
        raise TemplateLimitError(f"{engine} template or inputs are nested too deeply") from exc
    except Exception as exc:
        raise RenderError(f"{engine} render failed: {type(exc).__name__}: {exc}") from exc
    finally:
        BUDGET.reset(token)


def _check_strict(segment: RenderSegment) -> None:
    for number, line in enumerate(segment.text.split("\n"), start=1):
        if forges_role_boundary(line):
            raise StrictViolation(
                f"strict input {segment.source!r} forges a role boundary on line {number} "
                "of its value"
            )


def forges_role_boundary(line: str) -> bool:
    """Whether ``line`` starts like a role marker: optional ``#``, a role name, optional
    ``[...]``, then ``:`` (anything may follow). Linear; case-insensitive."""
    text = line.lstrip()
    if text.startswith("#"):
        text = text[1:].lstrip()
    lowered = text[:10].lower()
    role = next((r for r in _STRICT_ROLES if lowered.startswith(r)), None)
    if role is None:
        return False
    rest = text[len(role) :]
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            return False
        rest = rest[close + 1 :]
    return rest.lstrip().startswith(":")


register_renderer("jinja2", JinjaRenderer())
register_renderer("mustache", MustacheRenderer())
