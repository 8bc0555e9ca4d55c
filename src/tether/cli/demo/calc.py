"""A safe arithmetic evaluator over ``ast``: numbers, operators, a few math functions; no ``eval``.

Only whitelisted node types are walked, so names, attributes, subscripts, lambdas, comprehensions
and calls of anything but the functions below are refused before anything runs. Work is bounded:
the expression length, the size of every integer produced (in bits), exponents, and the arguments
of ``factorial``, so a short expression cannot make the evaluator spin or fill the memory.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any, TypeAlias

__all__ = ["MAX_EXPRESSION_CHARS", "CalculationError", "evaluate", "format_number"]

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 10_000  # about 3,000 decimal digits
MAX_FACTORIAL = 500

Number: TypeAlias = int | float


class CalculationError(ValueError):
    """The expression is not allowed, not valid, or its value cannot be computed."""


def _factorial(n: Number) -> int:
    if isinstance(n, float):
        if not n.is_integer():
            raise CalculationError("factorial() takes a whole number")
        n = int(n)
    if n < 0 or n > MAX_FACTORIAL:
        raise CalculationError(f"factorial() takes a whole number from 0 to {MAX_FACTORIAL}")
    return math.factorial(n)


def _log(x: Number, base: Number | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(x)
    if isinstance(digits, float) or not -30 <= digits <= 30:
        raise CalculationError("round() takes a whole number of digits from -30 to 30")
    return round(x, digits)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "exp": math.exp,
    "log": _log,
    "ln": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "degrees": math.degrees,
    "radians": math.radians,
    "hypot": math.hypot,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": _factorial,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_SYMBOLS = {
    ast.BitXor: "'^' (use ** for powers)",
    ast.BitAnd: "'&'",
    ast.BitOr: "'|'",
    ast.LShift: "'<<'",
    ast.RShift: "'>>'",
    ast.MatMult: "'@'",
    ast.Invert: "'~'",
    ast.Not: "'not'",
}


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression such as ``"2 * (3 + 4) ** 2 / sqrt(16)"``.

    Raises ``CalculationError`` for anything that is not plain arithmetic or cannot be computed.
    """
    text = expression.strip()
    if not text:
        raise CalculationError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculationError(
            f"the expression is too long ({len(text)} characters; the limit is "
            f"{MAX_EXPRESSION_CHARS})"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculationError(f"not a valid expression: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise CalculationError(f"not a valid expression: {exc}") from None
    try:
        return _eval(tree.body)
    except CalculationError:
        raise
    except ZeroDivisionError:
        raise CalculationError("division by zero") from None
    except OverflowError:
        raise CalculationError("the result is too large") from None
    except RecursionError:
        raise CalculationError("the expression is nested too deeply") from None
    except (ValueError, TypeError) as exc:
        raise CalculationError(f"cannot compute this: {exc}") from None


def _eval(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CalculationError(f"only numbers are allowed, not {value!r}")
        return _checked(value)
    if isinstance(node, ast.BinOp):
        binary = _BINARY.get(type(node.op))
        if binary is None:
            raise CalculationError(f"the operator {_symbol(node.op)} is not supported")
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        elif isinstance(node.op, ast.Mult):
            _check_product(left, right)
        return _checked(binary(left, right))
    if isinstance(node, ast.UnaryOp):
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise CalculationError(f"the operator {_symbol(node.op)} is not supported")
        return _checked(unary(_eval(node.operand)))
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise CalculationError(
            f"unknown name {node.id!r}; the constants are {', '.join(sorted(CONSTANTS))}"
        )
    if isinstance(node, ast.Call):
        return _call(node)
    raise CalculationError(
        f"{_describe(node)} is not allowed; use numbers, operators and functions"
    )


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        shown = node.func.id if isinstance(node.func, ast.Name) else _describe(node.func)
        raise CalculationError(
            f"{shown!s} is not an allowed function; allowed: {', '.join(sorted(FUNCTIONS))}"
        )
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise CalculationError(f"{node.func.id}() takes plain positional arguments only")
    args = [_eval(a) for a in node.args]
    try:
        return _checked(FUNCTIONS[node.func.id](*args))
    except TypeError:
        raise CalculationError(f"{node.func.id}() does not take {len(args)} argument(s)") from None
    except ValueError as exc:
        if isinstance(exc, CalculationError):
            raise
        raise CalculationError(f"{node.func.id}() is not defined there ({exc})") from None


def _check_power(base: Number, exponent: Number) -> None:
    if abs(exponent) > 10_000:
        raise CalculationError("the exponent is too large (the limit is 10000)")
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and max(abs(base).bit_length() - 1, 0) * exponent > MAX_INT_BITS
    ):
        raise CalculationError("the result is too large")


def _check_product(left: Number, right: Number) -> None:
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS + 1
    ):
        raise CalculationError("the result is too large")


def _checked(value: Any) -> Number:
    if isinstance(value, complex):
        raise CalculationError("the result is not a real number")
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INT_BITS:
            raise CalculationError("the result is too large")
        return value
    if isinstance(value, float):
        if math.isinf(value):
            raise CalculationError("the result is too large")
        if math.isnan(value):
            raise CalculationError("the result is not a number")
        return value
    raise CalculationError(f"unexpected value {value!r}")


def _symbol(op: ast.AST) -> str:
    return _SYMBOLS.get(type(op), type(op).__name__)


_NODE_WORDS = {
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Lambda: "lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.Compare: "a comparison",
    ast.BoolOp: "'and'/'or'",
    ast.IfExp: "'if'/'else'",
    ast.NamedExpr: "':='",
    ast.JoinedStr: "a string",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Set: "a set",
    ast.Dict: "a dict",
}


def _describe(node: ast.AST) -> str:
    return _NODE_WORDS.get(type(node), type(node).__name__)


def format_number(value: Number) -> str:
    """A value as a person would write it: whole numbers without ``.0``, floats to 15 digits."""
    if isinstance(value, int) or not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.15g}"
