"""Bit vectors over F2 held as Python ints: an echelon basis that remembers how each of its vectors
was made (the one GF(2) elimination of layoutkit: ranks, kernels, spans and inverses all use it).

Bit ``k`` of an int is coordinate ``k`` of the vector, so xor is vector addition.

>>> basis = XorBasis()
>>> [basis.insert(v) for v in (0b011, 0b110, 0b101)]      # the third is the sum of the first two
[True, True, False]
>>> basis.rank
2
>>> basis.solve(0b101)                                    # 0b101 = v0 ^ v1: the mask of inserted vectors
0b11
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import UnsupportedError


def log2_exact(n: int) -> int | None:
    """``k`` when ``n == 2**k``, else None.

    >>> log2_exact(8), log2_exact(1), log2_exact(6), log2_exact(0)
    (3, 0, None, None)
    """
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def bit_width(n: int) -> int:
    """Bits needed to write every value in ``range(n)``: ``ceil(log2(n))`` (0 for ``n <= 1``).

    >>> bit_width(1), bit_width(2), bit_width(5), bit_width(8)
    (0, 1, 3, 3)
    """
    return max(0, (n - 1).bit_length())


def unpack_bits(value: int, widths: Sequence[int]) -> tuple[int, ...]:
    """Split ``value`` into consecutive bit fields of ``widths`` (low field first).

    >>> unpack_bits(0b110_01, [2, 3])
    (1, 6)
    """
    out = []
    for nb in widths:
        out.append(value & ((1 << nb) - 1))
        value >>= nb
    return tuple(out)


class Combo(int):
    """A mask of inserted-vector indices, printed in binary (bit ``j``: the ``j``-th inserted vector)."""

    def __repr__(self) -> str:
        return bin(self)


class XorBasis:
    """Echelon basis of the span of the vectors inserted so far.

    Each kept vector ``b_k`` has a leading (highest) bit that no other kept vector leads with, and carries
    ``combo_k``: the mask of inserted vectors whose xor it is.  Reducing a vector by the kept vector that
    leads with its highest bit, while there is one, ends at 0 iff the vector lies in the span (every
    nonzero vector of the span has a kept leading bit as its highest bit).
    Laws: ``rank <= number inserted``; ``insert(v)`` is True iff ``v`` is not in the span so far;
    for ``v`` in the span, the xor of the inserted vectors named by ``solve(v)`` is ``v``.
    """

    __slots__ = ("_kept", "_count", "_combos")

    def __init__(self, vectors: Iterable[int] = (), *, combos: bool = True) -> None:
        """The basis of ``vectors`` inserted in order (none by default).  ``combos=False`` keeps no record of
        how each vector was made (``solve`` is refused): about a third faster where only the span matters
        (ranks, membership, maxima)."""
        self._kept: dict[int, tuple[int, int]] = {}  # leading bit -> (vector, combo)
        self._count = 0
        self._combos = combos
        kept = self._kept
        if not combos:
            for v in vectors:  # the span only: reduce by leading bits, keep what is left
                while v:
                    lead = v.bit_length() - 1
                    hit = kept.get(lead)
                    if hit is None:
                        kept[lead] = (v, 0)
                        break
                    v ^= hit[0]
                self._count += 1
            return
        for index, v in enumerate(vectors):  # insert(v), inlined: every F2 proof builds its spans here
            combo = 1 << index
            while v:
                hit = kept.get(v.bit_length() - 1)
                if hit is None:
                    kept[v.bit_length() - 1] = (v, combo)
                    break
                v ^= hit[0]
                combo ^= hit[1]
            self._count = index + 1

    @property
    def rank(self) -> int:
        """Dimension of the span."""
        return len(self._kept)

    def reduce(self, v: int) -> tuple[int, int]:
        """``(residual, combo)``: ``v == residual ^ xor of the inserted vectors named by combo``;
        ``residual`` is 0 iff ``v`` lies in the span (else its leading bit leads no kept vector)."""
        combo = 0
        kept = self._kept
        while v:
            hit = kept.get(v.bit_length() - 1)
            if hit is None:
                break
            v ^= hit[0]
            combo ^= hit[1]
        return v, combo

    def insert(self, v: int) -> bool:
        """Add vector number ``count`` (the next index); True iff it enlarged the span."""
        combo = 0
        kept = self._kept
        while v:  # reduce(v), inlined: the rank and span tests of every F2 proof insert here
            hit = kept.get(v.bit_length() - 1)
            if hit is None:
                break
            v ^= hit[0]
            combo ^= hit[1]
        residual = v
        index = self._count
        self._count += 1
        if residual == 0:
            return False
        self._kept[residual.bit_length() - 1] = (residual, combo ^ (1 << index))
        return True

    def maximize(self, v: int) -> int:
        """The largest ``v ^ s`` over the vectors ``s`` of the span: the kept vectors have distinct leading
        bits, so taking each, highest first, when it raises the value is optimal.

        >>> basis = XorBasis(); _ = [basis.insert(v) for v in (0b011, 0b110)]
        >>> basis.maximize(0), basis.maximize(0b010)
        (6, 7)
        """
        for lead in sorted(self._kept, reverse=True):
            if not v >> lead & 1:
                v ^= self._kept[lead][0]
        return v

    def solve(self, v: int) -> Combo | None:
        """Mask of inserted vectors whose xor is ``v``, or None when ``v`` is outside the span."""
        if not self._combos:
            raise UnsupportedError("XorBasis(combos=False) keeps no combinations to solve with")
        residual, combo = self.reduce(v)
        return Combo(combo) if residual == 0 else None


def rank_of(vectors: list[int]) -> int:
    """Dimension of the span of ``vectors``.

    >>> rank_of([1, 2, 3]), rank_of([0, 0]), rank_of([4, 1, 5, 2])
    (2, 0, 3)
    """
    basis = XorBasis()
    for v in vectors:
        basis.insert(v)
    return basis.rank


def gf2_inverse(m: NDArray[np.integer]) -> NDArray[np.uint8] | None:
    """Inverse of a square 0/1 matrix over GF(2) by Gauss-Jordan elimination, or None.

    >>> gf2_inverse(np.array([[1, 1], [0, 1]])).tolist()
    [[1, 1], [0, 1]]
    >>> gf2_inverse(np.array([[1, 1], [1, 1]])) is None
    True
    """
    n = m.shape[0]
    if m.ndim != 2 or m.shape[1] != n:
        return None
    bits = m.astype(np.uint8) & 1
    basis = XorBasis(int(sum(int(bits[r, c]) << r for r in range(n))) for c in range(n))  # the columns
    if basis.rank < n:
        return None
    out = np.zeros((n, n), dtype=np.uint8)
    for i in range(n):  # column i of the inverse: the columns of m whose xor is the unit vector e_i
        combo = int(basis.solve(1 << i) or 0)
        out[:, i] = [(combo >> c) & 1 for c in range(n)]
    return out
