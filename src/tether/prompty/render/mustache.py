"""The ``mustache`` engine: pystache with no HTML escaping, no partials and plain-data inputs;
the template is re-tokenised first in linear time so pystache's backtracking tag regex never
sees an input that makes it slow, and every piece of text pystache emits (literal text, a
value, a section's joined text) is charged to the render's work budget as it is made, so a
render stops before it builds more than ``MAX_WORK`` characters."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import TemplateLimitError, TemplateSyntaxError
from .base import MAX_INPUT_DEPTH, charge, counted

__all__ = ["MustacheRenderer"]

_MUSTACHE_MAX_TAG = 200
_MUSTACHE_MAX_NESTING = 64
_MUSTACHE_RUN_BREAK = 32


class MustacheRenderer:
    """``mustache`` through pystache: no HTML escaping, no partials, plain-data inputs, and
    the template re-tokenised first so pystache's backtracking tag regex stays linear."""

    def render(self, template: str, inputs: Mapping[str, Any]) -> str:
        """Render a mustache template; a missing name renders empty."""
        import pystache  # noqa: PLC0415 - the prompty extra, loaded on first use

        canonical = _MustacheScanner(template).canonical()
        context = _plain(inputs, 0)
        parsed = pystache.parse(canonical)
        _pay_as_built(parsed)
        renderer = pystache.Renderer(escape=lambda s: s, missing_tags="ignore", partials={})
        text = renderer.render(parsed, context)
        return str(text)


class _Literal:
    """Template text, charged each time it is emitted."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def render(self, engine: Any, context: Any) -> str:
        charge(len(self.text))
        return self.text


class _Paid:
    """A value or section node whose text is charged as soon as it is made."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node

    def render(self, engine: Any, context: Any) -> str:
        text = str(self.node.render(engine, context))
        charge(len(text))
        return text


def _pay_as_built(parsed: Any) -> None:
    """Rewrites a pystache parse tree in place so each piece it emits is charged: text as
    ``_Literal``, values and sections (after their own parts) wrapped in ``_Paid``."""
    tree: list[Any] = parsed._parse_tree
    for i, node in enumerate(tree):
        if isinstance(node, str):
            tree[i] = _Literal(node)
            continue
        inner = getattr(node, "parsed", None) or getattr(node, "parsed_section", None)
        if inner is not None:
            _pay_as_built(inner)
        if inner is not None or hasattr(node, "key"):
            tree[i] = _Paid(node)


class _CountedList(list[Any]):
    """A list whose iteration spends the render's loop budget (pystache loops over it)."""

    def __iter__(self) -> Iterator[Any]:
        return counted(super().__iter__())


def _plain(value: Any, depth: int) -> Any:
    """Inputs as plain data only: no objects whose methods pystache would call."""
    if depth > MAX_INPUT_DEPTH:
        raise TemplateLimitError(f"an input is nested over {MAX_INPUT_DEPTH} deep")
    if value is None:
        return ""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return _CountedList(_plain(v, depth + 1) for v in value)
    return str(value)


_KEY_CHARS = frozenset("._-")


class _MustacheScanner:
    """A linear pass over a mustache template that validates every tag and re-emits it in
    canonical form (no inner whitespace, comments emptied, delimiters tracked), breaking long
    blank runs with empty comments. Partials are refused: templates load nothing."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.otag, self.ctag = "{{", "}}"
        self.sections: list[tuple[str, int]] = []
        self.out: list[str] = []

    def canonical(self) -> str:
        """The canonical template, or ``TemplateSyntaxError`` naming the line."""
        pos = 0
        while True:
            start = self.template.find(self.otag, pos)
            if start < 0:
                self._text(self.template[pos:], followed_by_tag=False)
                break
            self._text(self.template[pos:start], followed_by_tag=True)
            pos = self._tag(start)
        if self.sections:
            key, at = self.sections[-1]
            raise self._error(f"section {key!r} is never closed", at)
        return "".join(self.out)

    def _tag(self, start: int) -> int:
        body_at = start + len(self.otag)
        triple = self.template.startswith("{", body_at)
        close = "}" + self.ctag if triple else self.ctag
        end = self.template.find(close, body_at)
        if end < 0:
            raise self._error("a tag is never closed", start)
        body = self.template[body_at + triple : end].strip()
        if len(body) > _MUSTACHE_MAX_TAG and not (body.startswith("!") and not triple):
            raise self._error(f"a tag is over {_MUSTACHE_MAX_TAG} characters", start)
        if triple:
            self.out.append(f"{self.otag}{{{self._key(body, start)}}}{self.ctag}")
        else:
            self._plain_tag(body, start)
        return end + len(close)

    def _plain_tag(self, body: str, at: int) -> None:
        sigil, rest = body[:1], body[1:].strip()
        if sigil == "!":
            self.out.append(f"{self.otag}!c{self.ctag}")
        elif sigil == "=":
            self._delimiters(body, at)
        elif sigil == ">":
            raise self._error("partials ({{> name}}) are not supported", at)
        elif sigil in ("#", "^", "/", "&"):
            key = self._key(rest, at)
            self._nest(sigil, key, at)
            self.out.append(f"{self.otag}{sigil}{key}{self.ctag}")
        else:
            self.out.append(f"{self.otag}{self._key(body, at)}{self.ctag}")

    def _nest(self, sigil: str, key: str, at: int) -> None:
        if sigil in ("#", "^"):
            if len(self.sections) >= _MUSTACHE_MAX_NESTING:
                raise self._error(f"sections nest over {_MUSTACHE_MAX_NESTING} deep", at)
            self.sections.append((key, at))
        elif sigil == "/":
            if not self.sections or self.sections[-1][0] != key:
                expected = self.sections[-1][0] if self.sections else "no open section"
                raise self._error(f"closing {key!r} but the open section is {expected!r}", at)
            self.sections.pop()

    def _delimiters(self, body: str, at: int) -> None:
        parts = body[1:-1].split() if body.endswith("=") and len(body) > 1 else []
        if len(parts) != 2 or not all(_is_delimiter(p) for p in parts):
            raise self._error("a set-delimiter tag needs two punctuation delimiters", at)
        self.out.append(f"{self.otag}={parts[0]} {parts[1]}={self.ctag}")
        self.otag, self.ctag = parts

    def _key(self, key: str, at: int) -> str:
        if not key or not all(c.isalnum() or c in _KEY_CHARS for c in key):
            raise self._error(f"{key!r} is not a tag name (letters, digits, '.', '_', '-')", at)
        return key

    def _text(self, text: str, *, followed_by_tag: bool) -> None:
        """Copies literal text, breaking blank runs that pystache would rescan quadratically
        (a run right before a tag is matched at once, and may make the tag standalone)."""
        if len(text) <= _MUSTACHE_RUN_BREAK:
            self.out.append(text)
            return
        pieces: list[str] = []
        run_start = -1
        for i, char in enumerate(text):
            if char in " \t":
                if run_start < 0:
                    run_start = i
                elif (i - run_start) % _MUSTACHE_RUN_BREAK == 0:
                    pieces.append(f"{self.otag}!c{self.ctag}")
            else:
                run_start = -1
            pieces.append(char)
        if followed_by_tag and run_start >= 0:
            pieces = _unbreak_tail(pieces, f"{self.otag}!c{self.ctag}")
        self.out.append("".join(pieces))

    def _error(self, what: str, at: int) -> TemplateSyntaxError:
        line = self.template.count("\n", 0, at) + 1
        return TemplateSyntaxError(f"Template syntax error: {what} (line {line})")


def _unbreak_tail(pieces: list[str], breaker: str) -> list[str]:
    """Removes the breakers from the trailing blank run, so a following tag sees the run."""
    i = len(pieces)
    while i > 0 and pieces[i - 1] in (" ", "\t", breaker):
        i -= 1
    return pieces[:i] + [p for p in pieces[i:] if p != breaker]


def _is_delimiter(text: str) -> bool:
    return (
        bool(text)
        and len(text) <= 8
        and all(not c.isalnum() and c not in "._-=" and not c.isspace() for c in text)
    )
