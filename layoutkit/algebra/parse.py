"""A safe parser for index expressions written as Python text (no ``eval``).

Only integer literals, names bound in ``variables``, unary minus and the operators
``+ - * // % ^ & | << >>`` are accepted; anything else raises :class:`ExprError` (the printed form of a
table lookup, ``table#<id>[...]``, included: it names the table, it does not hold it).

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 16), Var("_j", 16)
>>> print(parse_expr("_j // 8 * 4 + _i % 8", {"_i": i, "_j": j}))
_j // 8 * 4 + _i % 8
"""

from __future__ import annotations

import ast
import inspect
import operator
from collections.abc import Callable, Mapping

from ..errors import ExprError, LimitError
from .nodes import Const, Expr

MAX_TEXT = 100_000
"""Longest expression or lambda text, in characters."""
MAX_PARSE_DEPTH = 400
"""Deepest syntax tree accepted (a chain ``a + b + c ...`` nests one level per operator)."""

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}


def parse_expr(text: str, variables: Mapping[str, Expr]) -> Expr:
    """Parse ``text`` into an expression over ``variables`` (name -> Var)."""
    if not isinstance(text, str):
        raise ExprError(f"expected expression text, found {type(text).__name__}")
    if not isinstance(variables, Mapping) or not all(
            isinstance(k, str) and isinstance(v, Expr) for k, v in variables.items()):
        raise ExprError(f"parse_expr: expected the variables as a mapping of names to expressions; found "
                        f"{type(variables).__name__} {variables!r:.60}")
    if "table#" in text:  # Python would read the rest of the line as a comment
        raise ExprError(f"cannot parse index expression {_excerpt(text)}: a table lookup prints as table#<id>[...], "
                        "naming its table by a digest of its entries, and has no text to read back")
    tree = _parse(text, "index expression")
    return _build(tree.body, variables, text)


def _parse(text: str, what: str) -> ast.Expression:
    """``ast.parse`` within :data:`MAX_TEXT` characters; a tree too deep for the parser is a LimitError."""
    if len(text) > MAX_TEXT:
        raise LimitError(f"{what} text longer than {MAX_TEXT} characters (found {len(text)})", MAX_TEXT, len(text))
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ExprError(f"cannot parse {what} {_excerpt(text)}: {err.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack: nesting far past MAX_PARSE_DEPTH
        raise LimitError(f"{what} {_excerpt(text)} nests deeper than the parser allows "
                         f"(at most {MAX_PARSE_DEPTH} levels are accepted)", MAX_PARSE_DEPTH) from None


def _excerpt(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def _build(node: ast.AST, variables: Mapping[str, Expr], text: str, depth: int = 0) -> Expr:
    if depth > MAX_PARSE_DEPTH:
        raise LimitError(f"index expression {_excerpt(text)} nests deeper than {MAX_PARSE_DEPTH} levels",
                         MAX_PARSE_DEPTH, depth)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return Const(node.value)
    if isinstance(node, ast.Name):
        if node.id not in variables:
            raise ExprError(f"unknown variable {node.id!r} in {text!r}; known: {sorted(variables)}")
        return variables[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _build(node.operand, variables, text, depth + 1)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _build(node.left, variables, text, depth + 1)
        right = _build(node.right, variables, text, depth + 1)
        out: Expr = _BINOPS[type(node.op)](left, right)
        return out
    raise ExprError(f"unsupported syntax {_describe_node(node)} in index expression {_excerpt(text)}; "
                    f"expected integers, the lambda's variables and + - * // % ^ & | << >>")


def _describe_node(node: ast.AST) -> str:
    """What the user wrote, as they wrote it (a function call, a float, ``/``), short and on one line.

    >>> _describe_node(ast.parse("foo(i)", mode="eval").body), _describe_node(ast.parse("i / 2", mode="eval").body)
    ("'foo(i)' (a function call)", "'i / 2' (operator /)")
    """
    kinds = {ast.Call: "a function call", ast.Attribute: "an attribute", ast.Subscript: "an index",
             ast.Compare: "a comparison", ast.IfExp: "a conditional", ast.Constant: "a non-integer constant",
             ast.BoolOp: "a boolean operator", ast.Lambda: "a nested lambda"}
    if isinstance(node, ast.BinOp):
        symbols = {ast.Div: "/", ast.Pow: "**", ast.MatMult: "@"}
        kind = f"operator {symbols.get(type(node.op), type(node.op).__name__)}"
    else:
        kind = kinds.get(type(node), type(node).__name__)
    try:
        source = " ".join(ast.unparse(node).split())
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a tree ast.parse built
        source = type(node).__name__
    source = source if len(source) <= 40 else source[:37] + "..."
    return f"{source!r} ({kind})"


def parse_index_fn(text: str) -> Callable[..., Expr | tuple[Expr, ...]]:
    """Turn ``"lambda i, j: (j, i)"`` into a function of expressions, safely (no ``eval``).

    >>> from layoutkit.algebra import Var
    >>> fn = parse_index_fn("lambda i, j: (j // 2, i * 4 + j % 2)")
    >>> [str(e) for e in fn(Var("_i", 4), Var("_j", 4))]
    ['_j // 2', '_i * 4 + _j % 2']
    """
    if not isinstance(text, str):
        raise ExprError(f"expected lambda text, found {type(text).__name__}")
    lam = _parse(text, "index function").body
    if not isinstance(lam, ast.Lambda):
        raise ExprError(f"expected 'lambda <args>: <expressions>', found {text!r}")
    a = lam.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
        raise ExprError(f"index functions take plain positional arguments only: {text!r}")
    names = [arg.arg for arg in a.args]
    if len(set(names)) != len(names):
        raise ExprError(f"index function arguments must be distinct; found {names} in {_excerpt(text)}")
    body = lam.body.elts if isinstance(lam.body, (ast.Tuple, ast.List)) else [lam.body]

    def fn(*args: Expr) -> Expr | tuple[Expr, ...]:
        if len(args) != len(names):
            raise ExprError(f"{text!r} takes {len(names)} arguments, called with {len(args)}")
        env = dict(zip(names, args))
        out = tuple(_build(node, env, text, 1) for node in body)
        return out if isinstance(lam.body, (ast.Tuple, ast.List)) else out[0]

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    return fn
