"""Which digits of each variable an expression uses, and what is left over.

A *digit* of a variable ``x`` with extent ``E`` is ``x % upper // lower`` (``upper=None``: up to
``E``).  TileLang derives a fragment's register index from the digits its thread map leaves
unused, flattened row-major (input dims in order, high digits first):

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 16), Var("_j", 16)
>>> print(flatten_digits(unused_digits(i % 8 * 4 + j % 8 // 2, (i, j))))
_i // 8 * 4 + _j // 8 * 2 + _j % 2

A sum read through ``%`` / ``//`` is a *fused* iterator of its own (extent ``max + 1``), whose
unused digits follow those of the input variables (TileLang's ``DivideUnusedIterators``):

>>> i, j = Var("_i", 48), Var("_j", 24)
>>> print(flatten_digits(unused_digits((j * 12 + i // 4) % 32, (i, j))))
_i % 4 * 9 + (_j * 12 + _i // 4) // 32
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..algebra.nodes import Const, Expr, Sum, Var, add, free_vars, make_split, scale, split_view, walk

Digit = tuple[Expr, int, int]  # (variable or fused sum, lower, upper) with upper <= extent


def _extent(base: Expr) -> int | None:
    """Extent of a digit's base: a variable's own, a fused sum's ``max + 1``."""
    return base.extent if isinstance(base, Var) else int(base.hi) + 1


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


def fused_digits(expr: Expr, variables: Sequence[Var]) -> dict[Expr, list[tuple[int, int]]]:
    """``{sum: [(lower, upper), ...]}``: the digits ``expr`` reads of each sum it reads through
    ``%`` / ``//`` (a fused iterator), sums in order of first appearance.

    Sums over anything but ``variables`` are left out (they are no iterators of the index; a
    fragment sets its replica ``_rep`` to 0 first, as TileLang does).  Digits of sums nested
    inside a fused sum's digit are not iterators of their own either.
    """
    wanted = set(variables)

    def is_sum_digit(e: Expr) -> bool:
        base = split_view(e)[0]
        return base is not e and isinstance(base, Sum)

    used: dict[Expr, list[tuple[int, int]]] = {}
    for e in walk(expr, prune=is_sum_digit):
        if not is_sum_digit(e):
            continue
        base, lower, upper = split_view(e)
        if not set(free_vars(base)) <= wanted:
            continue
        used.setdefault(base, []).append((lower, _upper_of(base, upper)))
    return used


def _upper_of(base: Expr, upper: int | None) -> int:
    ext = _extent(base)
    if ext is None:
        return -1 if upper is None else upper
    return ext if upper is None else min(upper, ext)


def _gaps(base: Expr, cuts: list[tuple[int, int]]) -> list[Digit]:
    """The digits of ``base`` no cut covers, high digits first."""
    ext = _extent(base)
    if ext is None or ext == 1:
        return []
    gaps: list[Digit] = []
    cur = 1
    for lo, up in sorted(cuts):
        if lo > cur:
            gaps.append((base, cur, lo))
        cur = max(cur, up)
    if cur < ext:
        gaps.append((base, cur, ext))
    return gaps[::-1]


def unused_digits(expr: Expr, variables: Sequence[Var]) -> list[Digit]:
    """Digits that ``expr`` does not read, in row-major order: those of ``variables`` (dims in
    order, high digits first), then those of the fused sums it reads (see :func:`fused_digits`)."""
    used = used_digits(expr, variables)
    out: list[Digit] = [d for var in variables for d in _gaps(var, used[var])]
    for base, cuts in fused_digits(expr, variables).items():
        out.extend(_gaps(base, cuts))
    return out


def digit_extent(digit: Digit) -> int:
    _, lower, upper = digit
    return -(-upper // lower)


def digit_expr(digit: Digit) -> Expr:
    base, lower, upper = digit
    return make_split(base, lower, None if upper >= (_extent(base) or 0) else upper)


def flatten_digits(digits: Iterable[Digit]) -> Expr:
    """Row-major flattening of digits (the last one fastest)."""
    total: Expr = Const(0)
    stride = 1
    for d in reversed(list(digits)):
        total = add(total, scale(digit_expr(d), stride))
        stride *= digit_extent(d)
    return total
