"""Print expressions the way TileLang prints them (Python syntax, minimal parentheses).

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 32), Var("_j", 32)
>>> print(j // 16 * 64 + i % 8 * 4 + j % 8 // 2)
_j // 16 * 64 + _i % 8 * 4 + _j % 8 // 2
>>> print(((j // 8) ^ (i % 8)) * 8 + j % 8)
(_j // 8 ^ _i % 8) * 8 + _j % 8

The output is valid Python and reads back to the same expression through
:func:`layoutkit.algebra.parse_expr`.
"""

from __future__ import annotations

from typing import cast

from .nodes import And, Const, Expr, FloorDiv, FloorMod, Mul, Or, Sum, Var, Xor, int_text

# Python operator precedence, loosest first.
_OR, _XOR, _AND, _ADD, _MUL, _ATOM = 1, 2, 3, 5, 6, 9
_BITWISE: dict[type[Expr], tuple[int, str]] = {Xor: (_XOR, "^"), And: (_AND, "&"), Or: (_OR, "|")}


def precedence(e: Expr) -> int:
    if isinstance(e, Sum):
        return _MUL if len(e.terms) == 1 and e.const == 0 else _ADD
    if isinstance(e, (Mul, FloorDiv, FloorMod)):
        return _MUL
    if isinstance(e, Const) and e.value < 0:
        return _ADD
    for cls, (prec, _) in _BITWISE.items():
        if isinstance(e, cls):
            return prec
    return _ATOM


def _wrap(e: Expr, min_prec: int) -> str:
    s = to_str(e)
    return f"({s})" if precedence(e) < min_prec else s


def _term(atom: Expr, coeff: int) -> str:
    if coeff == 1:
        return _wrap(atom, _ADD)
    return f"{_wrap(atom, _MUL)} * {int_text(coeff)}"


def _sum_str(e: Sum) -> str:
    # TVM order: positive terms (by scale, descending), a positive constant, then subtractions.
    pos = [(a, c) for a, c in e.terms if c > 0]
    neg = [(a, -c) for a, c in e.terms if c < 0]
    parts = [_term(a, c) for a, c in pos]
    if e.const > 0:
        parts.append(int_text(e.const))
    text = " + ".join(parts)
    for a, c in neg:
        text = f"{text} - {_term(a, c)}" if text else f"{_wrap(a, _MUL)} * {int_text(-c)}"
    if e.const < 0:
        text = f"{text} - {int_text(-e.const)}"
    return text


def to_str(e: Expr) -> str:
    """TileLang-style text of ``e``."""
    if isinstance(e, Const):
        return int_text(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Sum):
        return _sum_str(e)
    if isinstance(e, FloorDiv):
        return f"{_wrap(e.a, _MUL)} // {int_text(e.c)}"
    if isinstance(e, FloorMod):
        return f"{_wrap(e.a, _MUL)} % {int_text(e.c)}"
    if isinstance(e, Mul):
        return f"{_wrap(e.a, _MUL)} * {_wrap(e.b, _MUL + 1)}"
    prec, sym = _BITWISE[type(e)]
    bit = cast("Xor | And | Or", e)
    return f"{_wrap(bit.a, prec)} {sym} {_wrap(bit.b, prec + 1)}"
