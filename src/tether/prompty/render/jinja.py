"""The ``jinja2`` engine (spec §5.5): real jinja2 in the sandbox of ``sandbox``, its
compiled tree checked and instrumented (depth, size, no template loading, no macros, no
recursive loops; loops spend steps and the work of the text they repeat, comparisons the work
of what they read), with an output cap; ``render_segments`` brackets each interpolation with
secret markers."""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import RenderError, TemplateLimitError, TemplateSecurityError, TemplateSyntaxError
from .base import MAX_EXPRESSION_DEPTH, MAX_OUTPUT_CHARS, MAX_TEMPLATE_NODES, RenderSegment
from .sandbox import jinja_env

if TYPE_CHECKING:
    from jinja2 import nodes

__all__ = ["JinjaRenderer"]


class JinjaRenderer:
    """The default engine: real ``jinja2`` in an immutable sandbox (spec §5.5)."""

    def render(self, template: str, inputs: Mapping[str, Any]) -> str:
        """Render with lenient undefineds, no escaping, whitespace kept verbatim."""
        compiled = _jinja_compile(template, None)
        return _jinja_run(compiled, inputs)

    def render_segments(
        self, template: str, inputs: Mapping[str, Any], strict: Collection[str]
    ) -> list[RenderSegment]:
        """Render with every ``{{ … }}`` output bracketed by secret markers, then split."""
        token = f"{secrets.randbelow(10**24):024d}"  # digits: untouched by case filters
        marks = _Marks(token, inputs, frozenset(strict))
        compiled = _jinja_compile(template, marks)
        return marks.split(_jinja_run(compiled, inputs))


def _jinja_run(compiled: Any, inputs: Mapping[str, Any]) -> str:
    from jinja2 import UndefinedError  # noqa: PLC0415
    from jinja2.exceptions import SecurityError  # noqa: PLC0415

    chunks: list[str] = []
    size = 0
    try:
        for chunk in compiled.generate(dict(inputs)):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise TemplateLimitError(f"rendered text is over {MAX_OUTPUT_CHARS} characters")
            chunks.append(chunk)
    except SecurityError as exc:
        raise TemplateSecurityError(f"Template refused by the sandbox: {exc}") from exc
    except UndefinedError as exc:
        raise RenderError(f"Undefined template variable: {exc.message}") from exc
    return "".join(chunks)


def _jinja_compile(template: str, marks: _Marks | None) -> Any:
    import jinja2  # noqa: PLC0415 - the prompty extra, loaded on first use

    env = jinja_env()
    try:
        tree = env.parse(template)
        _check_tree(tree)
        _instrument(tree, marks)
        return env.from_string(tree)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateSyntaxError(
            f"Template syntax error: {exc.message} (line {exc.lineno})"
        ) from exc
    except RecursionError as exc:
        raise TemplateLimitError("the template is nested too deeply") from exc
    except SyntaxError as exc:  # Python's own compiler refusing the generated code
        raise TemplateLimitError(f"the template is too complex to compile: {exc.msg}") from exc


_FORBIDDEN_NODES = {
    "Extends": "{% extends %}",
    "Include": "{% include %}",
    "Import": "{% import %}",
    "FromImport": "{% from … import %}",
    "Macro": "{% macro %}",
    "CallBlock": "{% call %}",
}


def _check_tree(tree: nodes.Template) -> None:
    """Refuses tags that load templates or recurse, and trees too deep or too large (Python's
    compiler slows down sharply on deeply nested generated code)."""
    from jinja2 import nodes  # noqa: PLC0415

    stack: list[tuple[nodes.Node, int]] = [(tree, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_TEMPLATE_NODES:
            raise TemplateLimitError(f"the template has over {MAX_TEMPLATE_NODES} parts")
        what = _FORBIDDEN_NODES.get(type(node).__name__)
        if isinstance(node, nodes.For) and node.recursive:
            what = "a recursive {% for %}"
        if what is not None:
            raise TemplateSecurityError(
                f"{what} is not allowed in a prompty template (line {node.lineno})"
            )
        if depth > MAX_EXPRESSION_DEPTH:
            raise TemplateLimitError(
                f"an expression is nested over {MAX_EXPRESSION_DEPTH} deep (line {node.lineno})"
            )
        for child in node.iter_child_nodes():
            stack.append((child, depth + 1 if isinstance(child, nodes.Expr) else 0))


def _instrument(tree: nodes.Template, marks: _Marks | None) -> None:
    """Rewrites the tree in place: each loop step spends a step and the work of the text its
    body holds, ``~`` is size-checked, comparisons pay for what they read, and (for segments)
    each output outside a captured block is bracketed by markers."""
    from jinja2 import nodes  # noqa: PLC0415

    for loop in tree.find_all(nodes.For):
        work = nodes.Const(_literal_size([*loop.body, *loop.else_]))
        loop.iter = _filter(loop.iter, "prompty.loop", [work], loop.iter.lineno)
    for concat in list(tree.find_all(nodes.Concat)):
        items = nodes.List(concat.nodes, lineno=concat.lineno)
        concat.nodes = [_filter(items, "prompty.concat", [], concat.lineno)]
    _replace_slices(tree)
    for compare in list(tree.find_all(nodes.Compare)):
        compare.expr = _filter(compare.expr, "prompty.weigh", [], compare.lineno)
        for operand in compare.ops:
            operand.expr = _filter(operand.expr, "prompty.weigh", [], compare.lineno)
    if marks is not None:
        marks.instrument(tree)


def _replace_slices(tree: nodes.Template) -> None:
    """Every ``x[a:b:c]`` becomes ``x|prompty.slice(a, b, c)`` (jinja slices without the
    sandbox, so this is where a slice pays for the value it builds)."""
    from jinja2 import nodes  # noqa: PLC0415

    def rewritten(node: Any) -> Any:
        for name, value in node.iter_fields():
            if isinstance(value, list):
                setattr(
                    node, name, [rewritten(v) if isinstance(v, nodes.Node) else v for v in value]
                )
            elif isinstance(value, nodes.Node):
                setattr(node, name, rewritten(value))
        if not (isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice)):
            return node
        bounds = [node.arg.start, node.arg.stop, node.arg.step]
        args = [nodes.Const(None) if b is None else b for b in bounds]
        return _filter(node.node, "prompty.slice", args, node.lineno)

    rewritten(tree)


def _literal_size(body: list[nodes.Node]) -> int:
    """The characters of literal text and constants in ``body``: what one pass of a loop over it
    may emit without any interpolation paying for it."""
    from jinja2 import nodes  # noqa: PLC0415

    size = 0
    for stmt in body:
        for node in [stmt, *stmt.find_all((nodes.TemplateData, nodes.Const))]:
            if isinstance(node, nodes.TemplateData):
                size += len(node.data)
            elif isinstance(node, nodes.Const) and isinstance(node.value, str):
                size += len(node.value)
    return size


def _filter(node: Any, name: str, args: list[Any], lineno: int) -> nodes.Filter:
    from jinja2 import nodes  # noqa: PLC0415

    return nodes.Filter(node, name, args, [], None, None, lineno=lineno)


class _Marks:
    """Brackets interpolations with secret markers and reads them back as segments."""

    def __init__(self, token: str, inputs: Mapping[str, Any], strict: frozenset[str]) -> None:
        self.token = token
        self.inputs = inputs
        self.strict = strict
        self.sources: list[tuple[str | None, bool]] = []
        self.aliases: dict[str, str | None] = {}

    def instrument(self, tree: nodes.Template) -> None:
        """Marks every output expression not inside a ``{% set %}`` or ``{% filter %}`` body
        (those are marked where they surface), resolving loop and set aliases on the way."""
        from jinja2 import nodes  # noqa: PLC0415

        self._learn_aliases(tree)
        stack: list[nodes.Node] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, nodes.Output):
                node.nodes = [self._mark(n) for n in node.nodes]
                continue
            if isinstance(node, nodes.FilterBlock):
                if _interpolates(node.body):
                    node.filter = self._mark(node.filter, self._source(node.body))
                continue
            if isinstance(node, nodes.AssignBlock):
                continue
            stack.extend(node.iter_child_nodes())

    def _learn_aliases(self, tree: nodes.Template) -> None:
        from jinja2 import nodes  # noqa: PLC0415

        for node in tree.find_all((nodes.For, nodes.Assign, nodes.AssignBlock, nodes.With)):
            if isinstance(node, nodes.For):
                self._alias(node.target, self._source([node.iter]))
            elif isinstance(node, nodes.Assign):
                self._alias(node.target, self._source([node.node]))
            elif isinstance(node, nodes.AssignBlock):
                self._alias(node.target, self._source(node.body))
            elif isinstance(node, nodes.With):
                for target, value in zip(node.targets, node.values, strict=False):
                    self._alias(target, self._source([value]))

    def _alias(self, target: nodes.Node, source: str | None) -> None:
        from jinja2 import nodes  # noqa: PLC0415

        for name in target.find_all(nodes.Name):
            self.aliases[name.name] = source
        if isinstance(target, nodes.Name):
            self.aliases[target.name] = source

    def _source(self, roots: Iterable[nodes.Node]) -> str | None:
        """The input the first resolvable variable of ``roots`` comes from."""
        from jinja2 import nodes  # noqa: PLC0415

        for root in roots:
            names = [root] if isinstance(root, nodes.Name) else list(root.find_all(nodes.Name))
            for name in names:
                if name.name in self.aliases:
                    found = self.aliases[name.name]
                elif name.name in self.inputs:
                    found = name.name
                else:
                    continue
                if found is not None:
                    return found
        return None

    def _mark(self, node: Any, source: str | None = None) -> Any:
        from jinja2 import nodes  # noqa: PLC0415

        if isinstance(node, nodes.TemplateData):
            return node
        if source is None:
            source = self._source([node])
        self.sources.append((source, source is not None and source in self.strict))
        index = nodes.Const(len(self.sources) - 1)
        return _filter(node, "prompty.mark", [nodes.Const(self.token), index], node.lineno)

    def split(self, text: str) -> list[RenderSegment]:
        """Reads the markers back: text inside any mark is ``interp`` (its innermost source,
        strict if any enclosing mark is), text outside is ``literal``."""
        lead = "\x00" + self.token
        out: list[RenderSegment] = []
        open_marks: list[int] = []
        pos = 0
        while True:
            at = text.find(lead, pos)
            piece = text[pos:] if at < 0 else text[pos:at]
            self._emit(out, piece, open_marks)
            if at < 0:
                break
            pos = self._step(text, at + len(lead), open_marks)
        if open_marks:
            raise RenderError("an interpolation's markers were altered by a filter")
        return out

    def _step(self, text: str, pos: int, open_marks: list[int]) -> int:
        end = text.find("\x00", pos)
        what = text[pos:end] if end >= 0 else ""
        if what == ">" and open_marks:
            open_marks.pop()
        elif what[:1] == "<" and what[1:].isdigit() and int(what[1:]) < len(self.sources):
            open_marks.append(int(what[1:]))
        else:
            raise RenderError("an interpolation's markers were altered by a filter")
        return end + 1

    def _emit(self, out: list[RenderSegment], piece: str, open_marks: list[int]) -> None:
        if not piece:
            return
        if not open_marks:
            segment = RenderSegment("literal", piece)
        else:
            source = next((s for i in reversed(open_marks) if (s := self.sources[i][0])), None)
            strict = any(self.sources[i][1] for i in open_marks)
            segment = RenderSegment("interp", piece, source, strict)
        last = out[-1] if out else None
        if last and (last.kind, last.source, last.strict) == (
            segment.kind,
            segment.source,
            segment.strict,
        ):
            out[-1] = RenderSegment(last.kind, last.text + piece, last.source, last.strict)
        else:
            out.append(segment)


def _interpolates(body: list[nodes.Node]) -> bool:
    from jinja2 import nodes  # noqa: PLC0415

    for stmt in body:
        for output in [stmt, *stmt.find_all(nodes.Output)]:
            if isinstance(output, nodes.Output) and any(
                not isinstance(n, nodes.TemplateData) for n in output.nodes
            ):
                return True
    return False
