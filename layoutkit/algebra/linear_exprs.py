"""Readable index expressions for F2-linear maps (the way back from basis images to a Layout).

>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 4), placeholder(1, 4)
>>> print(*expressions_from_bases([[(1,), (2,)], [(4,), (8,)]], [i, j], 1))      # i + 4 * j
_j * 4 + _i
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ShapeError
from .nodes import Const, Expr, Var, bitxor, make_split, make_sum


def expressions_from_bases(
    bases: Sequence[Sequence[Sequence[int]]], variables: Sequence[Var], n_out: int
) -> tuple[Expr, ...]:
    """Readable expressions for an F2-linear map: runs of consecutive bits become digits
    ``x % 2**(b+len) // 2**b`` and overlapping contributions are xor-ed."""
    outs = []
    for k in range(n_out):
        by_bit: dict[int, set[tuple[int, int]]] = {}
        for d, per_bit in enumerate(bases):
            for b, image in enumerate(per_bit):
                value = int(image[k])
                if value < 0:
                    raise ShapeError(f"F2 bases must be non-negative, found {value} for input bit {b} of dim {d}")
                p = 0
                while value:
                    if value & 1:
                        by_bit.setdefault(p, set()).add((d, b))
                    value >>= 1
                    p += 1
        terms: dict[Expr, int] = {}
        p = 0
        top = max(by_bit, default=-1)
        while p <= top:
            group = by_bit.get(p)
            if not group:
                p += 1
                continue
            length = 1
            while by_bit.get(p + length) == {(d, b + length) for d, b in group} and all(
                b + length < len(bases[d]) for d, b in group
            ):
                length += 1
            atom: Expr = Const(0)
            for d, b in sorted(group):
                atom = bitxor(atom, make_split(variables[d], 2**b, 2 ** (b + length)))
            terms[atom] = terms.get(atom, 0) + 2**p
            p += length
        outs.append(make_sum(terms))
    return tuple(outs)


__all__ = ["expressions_from_bases"]
