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

import functools
from collections.abc import Iterable
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


def _wrap(e: Expr, min_prec: int) -> list[str | Expr]:
    return ["(", e, ")"] if precedence(e) < min_prec else [e]


def _term(atom: Expr, coeff: int) -> list[str | Expr]:
    if coeff == 1:
        return _wrap(atom, _ADD)
    return [*_wrap(atom, _MUL), f" * {int_text(coeff)}"]


def _sum_pieces(e: Sum) -> list[str | Expr]:
    # TVM order: positive terms (by scale, descending), a positive constant, then subtractions.
    out: list[str | Expr] = []
    for a, c in e.terms:
        if c > 0:
            out += [" + "] if out else []
            out += _term(a, c)
    if e.const > 0:
        out += [" + ", int_text(e.const)] if out else [int_text(e.const)]
    for a, c in e.terms:
        if c < 0:
            out += [" - ", *_term(a, -c)] if out else [*_wrap(a, _MUL), f" * {int_text(c)}"]
    if e.const < 0:
        out.append(f" - {int_text(-e.const)}")
    return out


def pieces(e: Expr) -> list[str | Expr]:
    """The text of ``e`` one level deep: literal strings and the children printed in place.

    >>> from layoutkit.algebra import Var
    >>> pieces(Var("_i", 8) % 4 * 2 + 1)
    [FloorMod(_i % 4), ' * 2', ' + ', '1']
    """
    if isinstance(e, Const):
        return [int_text(e.value)]
    if isinstance(e, Var):
        return [e.name]
    if isinstance(e, Sum):
        return _sum_pieces(e)
    if isinstance(e, FloorDiv):
        return [*_wrap(e.a, _MUL), f" // {int_text(e.c)}"]
    if isinstance(e, FloorMod):
        return [*_wrap(e.a, _MUL), f" % {int_text(e.c)}"]
    if isinstance(e, Mul):
        return [*_wrap(e.a, _MUL), " * ", *_wrap(e.b, _MUL + 1)]
    prec, sym = _BITWISE[type(e)]
    bit = cast("Xor | And | Or", e)
    return [*_wrap(bit.a, prec), f" {sym} ", *_wrap(bit.b, prec + 1)]


def to_str(e: Expr) -> str:
    """TileLang-style text of ``e`` (a sub-expression shared in the DAG is printed once and reused)."""
    memo: dict[int, str] = {}  # by identity: the nodes stay alive for the whole call

    def go(x: Expr) -> str:
        hit = memo.get(id(x))
        if hit is None:
            hit = memo[id(x)] = "".join(p if isinstance(p, str) else go(p) for p in pieces(x))
        return hit

    return go(e)


def text_prefix(e: Expr, limit: int) -> str:
    """The first ``limit`` characters of ``to_str(e)``, then ``...`` when the text is longer; reads
    only as much of the expression as it prints (for messages about huge expressions).

    >>> from layoutkit.algebra import Var
    >>> text_prefix(Var("_i", 8) * 4 + Var("_j", 4), 6)
    '_i * 4...'
    """
    out: list[str] = []
    size = 0
    stack: list[str | Expr] = [e]
    while stack:
        item = stack.pop()
        if not isinstance(item, str):
            stack.extend(reversed(pieces(item)))
            continue
        if size + len(item) > limit:
            out.append(item[: limit - size])
            return "".join(out) + "..."
        out.append(item)
        size += len(item)
    return "".join(out)


def compare_text(a: Expr, b: Expr) -> int:
    """``-1``, ``0`` or ``1`` as ``to_str(a)`` sorts before, equal to or after ``to_str(b)``, without
    printing either (see :func:`_compare`).

    >>> from layoutkit.algebra import Var
    >>> i, j = Var("_i", 8), Var("_j", 8)
    >>> compare_text(i % 4, j % 4), compare_text(i * 2, i), compare_text(i + j, i + j)
    (-1, 1, 0)
    """
    return 0 if a is b else _compare(a, b)[0]


@functools.lru_cache(maxsize=4096)
def _compare(a: Expr, b: Expr) -> tuple[int, bool]:
    """``(order, strict)``: the order of the two texts, and whether it is decided at a character
    inside both (so it holds for any text that follows either).  Both texts are read piece by piece;
    a sub-expression starting at the same place in both is skipped whole when it is the same node
    (it prints the same) and decided by this function, cached, when the pair's order is strict.  So
    the cost is that of the differing parts, not of the texts, which compose chains make
    exponentially longer than the DAG."""
    sa: list[str | Expr] = pieces(a)[::-1]
    sb: list[str | Expr] = pieces(b)[::-1]
    ta = tb = ""
    while True:
        if not ta and not tb and sa and sb:
            x, y = sa[-1], sb[-1]
            if not isinstance(x, str) and not isinstance(y, str):
                order, strict = (0, False) if x is y else _compare(x, y)
                if strict:
                    return order, True
                if x is y or order == 0 and x == y:
                    sa.pop()
                    sb.pop()
                    continue
        if not ta:
            if not sa:
                return (0 if not tb and not sb else -1), False
            x = sa.pop()
            if isinstance(x, str):
                ta = x
            else:
                sa.extend(reversed(pieces(x)))
            continue
        if not tb:
            if not sb:
                return 1, False
            y = sb.pop()
            if isinstance(y, str):
                tb = y
            else:
                sb.extend(reversed(pieces(y)))
            continue
        m = min(len(ta), len(tb))
        ha, hb = ta[:m], tb[:m]
        if ha != hb:
            return (-1 if ha < hb else 1), True
        ta, tb = ta[m:], tb[m:]


def tuple_text(items: Iterable[object]) -> str:
    """Python tuple syntax, as TileLang prints shapes and index tuples: ``(a, b)``, ``(a,)``.

    >>> tuple_text([16, 16]), tuple_text([8]), tuple_text([])
    ('(16, 16)', '(8,)', '()')
    """
    parts = [str(x) for x in items]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
