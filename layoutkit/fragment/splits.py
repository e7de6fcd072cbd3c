"""Which digits of each variable an expression uses, and what is left over.

A *digit* of a variable ``x`` with extent ``E`` is ``x % upper // lower`` (``upper=None``: up to
``E``).  TileLang derives a fragment's register index from the digits its thread map leaves
unused, flattened row-major (input dims in order, high digits first):

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 16), Var("_j", 16)
>>> print(flatten_digits(unused_digits(i % 8 * 4 + j % 8 // 2, (i, j))))
_i // 8 * 4 + _j // 8 * 2 + _j % 2
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..algebra.nodes import Const, Expr, Var, walk
from ..algebra.simplify import add, make_split, scale, split_view

Digit = tuple[Var, int, int]  # (variable, lower, upper) with upper <= extent


def _upper(var: Var, upper: int | None) -> int:
    ext = var.extent
    if upper is None or (ext is not None and upper >= ext):
        return ext if ext is not None else -1
    return upper


def used_digits(expr: Expr, variables: Sequence[Var]) -> dict[Var, list[tuple[int, int]]]:
    """``{var: [(lower, upper), ...]}``: the digits of each variable that ``expr`` reads.

    A variable read other than through a digit (inside a product, or the base of a digit of a sum
    such as ``(i + j) % 4``) counts as wholly used.
    """
    wanted = set(variables)
    used: dict[Var, list[tuple[int, int]]] = {v: [] for v in variables}

    def is_digit(e: Expr) -> bool:
        return isinstance(split_view(e)[0], Var)

    for e in walk(expr, prune=is_digit):
        base, lower, upper = split_view(e)
        if isinstance(base, Var) and base in wanted:
            used[base].append((lower, _upper(base, upper)))
    return used


def unused_digits(expr: Expr, variables: Sequence[Var]) -> list[Digit]:
    """Digits of ``variables`` that ``expr`` does not read, in row-major order (dims in order,
    high digits first)."""
    used = used_digits(expr, variables)
    out: list[Digit] = []
    for var in variables:
        ext = var.extent
        if ext is None or ext == 1:
            continue
        cuts = sorted(used[var])
        gaps: list[Digit] = []
        cur = 1
        for lo, up in cuts:
            if lo > cur:
                gaps.append((var, cur, lo))
            cur = max(cur, up)
        if cur < ext:
            gaps.append((var, cur, ext))
        out.extend(reversed(gaps))
    return out


def digit_extent(digit: Digit) -> int:
    var, lower, upper = digit
    return -(-upper // lower)


def digit_expr(digit: Digit) -> Expr:
    var, lower, upper = digit
    return make_split(var, lower, None if upper >= (var.extent or 0) else upper)


def flatten_digits(digits: Iterable[Digit]) -> Expr:
    """Row-major flattening of digits (the last one fastest)."""
    total: Expr = Const(0)
    stride = 1
    for d in reversed(list(digits)):
        total = add(total, scale(digit_expr(d), stride))
        stride *= digit_extent(d)
    return total
