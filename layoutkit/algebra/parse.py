"""A safe parser for index expressions written as Python text (no ``eval``).

Only integer literals, names bound in ``variables``, unary minus and the operators
``+ - * // % ^ & | << >>`` are accepted; anything else raises :class:`ExprError`.

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

from ..errors import ExprError
from .nodes import Const, Expr

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
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ExprError(f"cannot parse index expression {text!r}: {err.msg}") from None
    return _build(tree.body, variables, text)


def _build(node: ast.AST, variables: Mapping[str, Expr], text: str) -> Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return Const(node.value)
    if isinstance(node, ast.Name):
        if node.id not in variables:
            raise ExprError(f"unknown variable {node.id!r} in {text!r}; known: {sorted(variables)}")
        return variables[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _build(node.operand, variables, text)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _build(node.left, variables, text)
        right = _build(node.right, variables, text)
        out: Expr = _BINOPS[type(node.op)](left, right)
        return out
    raise ExprError(f"unsupported syntax {ast.dump(node)[:60]} in index expression {text!r}")


def parse_index_fn(text: str) -> Callable[..., Expr | tuple[Expr, ...]]:
    """Turn ``"lambda i, j: (j, i)"`` into a function of expressions, safely (no ``eval``).

    >>> from layoutkit.algebra import Var
    >>> fn = parse_index_fn("lambda i, j: (j // 2, i * 4 + j % 2)")
    >>> [str(e) for e in fn(Var("_i", 4), Var("_j", 4))]
    ['_j // 2', '_i * 4 + _j % 2']
    """
    if not isinstance(text, str):
        raise ExprError(f"expected lambda text, found {type(text).__name__}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ExprError(f"cannot parse index function {text!r}: {err.msg}") from None
    lam = tree.body
    if not isinstance(lam, ast.Lambda):
        raise ExprError(f"expected 'lambda <args>: <expressions>', found {text!r}")
    a = lam.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
        raise ExprError(f"index functions take plain positional arguments only: {text!r}")
    names = [arg.arg for arg in a.args]
    body = lam.body.elts if isinstance(lam.body, (ast.Tuple, ast.List)) else [lam.body]

    def fn(*args: Expr) -> Expr | tuple[Expr, ...]:
        if len(args) != len(names):
            raise ExprError(f"{text!r} takes {len(names)} arguments, called with {len(args)}")
        env = dict(zip(names, args))
        out = tuple(_build(node, env, text) for node in body)
        return out if isinstance(lam.body, (ast.Tuple, ast.List)) else out[0]

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    return fn
