"""Structural F2 analysis: index maps that are affine over the bits of their inputs, read off the expressions.

Power-of-two extents, shifts and masks by powers of two (``* 2**k``, ``// 2**k``, ``% 2**k``), ``^``, ``&`` with
a constant and sums whose terms occupy disjoint bits are all affine over F2: every output bit is the parity
of some input bits, xor a constant bit.  :func:`bit_linear` finds that form from the expression tree alone
(no evaluation), as an :class:`~layoutkit.algebra.linear.F2Linear` (the linear part, in dims named after the
variables, out dims ``dim0, dim1, ...``) and the constant xor-ed onto each output.  So bijectivity
(:func:`bijection_by_f2`: injective iff the bit matrix has full column rank, as Triton's ``LinearLayout``
decides it) and the bounding box (:meth:`F2Linear.max_values <layoutkit.algebra.linear.F2Linear.max_values>`)
cost a Gaussian elimination over the input bits instead of a pass over every coordinate.

A value is kept as ``const ^ L(x)``: ``rows[p]`` is the mask of input bits whose parity is bit ``p``.  Shifts and
masks distribute over ``^``, so they act on the rows; a sum is an ``^`` when no bit position can be set in
two of its terms (each term's rows and constant bits are known), and anything else is not bit-linear.

>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 64), placeholder(1, 64)
>>> linear, offset = bit_linear((i, (j // 8 ^ i % 8) * 8 + j % 8), (i, j), (64, 64))
>>> linear.rank(), sum(linear.in_bits), linear.max_values(offset)
(12, 12, (63, 63))
>>> bit_linear((i + j,), (i, j), (64, 64)) is None      # carries: not bit-linear
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from .bits import log2_exact
from .linear import F2Linear, Image
from .nodes import And, Const, Expr, FloorDiv, FloorMod, Mul, Sum, Var, Xor
from .proof import Proof

__all__ = ["AffineF2", "bijection_by_f2", "bit_linear", "composes_to_identity"]

AffineF2 = tuple[F2Linear, Image]
"""``(linear, offset)``: the map ``x -> offset ^ linear(x)`` (``offset``: one constant per output)."""

_MAX_BITS = 4096  # output bit positions kept per value (a larger shift is not an index map worth this test)


class _Value(NamedTuple):  # a tuple: built once per node read, and a frozen dataclass's init costs several times more
    rows: tuple[int, ...]  # bit p of the value = parity(rows[p] & x) ^ bit p of const
    const: int

    def live(self) -> int:
        """Positions that can be 1 (a bit mask over output positions)."""
        mask = self.const
        for p, r in enumerate(self.rows):
            if r:
                mask |= 1 << p
        return mask

    def shifted(self, k: int) -> _Value:
        return _Value((0,) * k + self.rows, self.const << k)

    def xor(self, other: _Value) -> _Value:
        n = max(len(self.rows), len(other.rows))
        a, b = self.rows + (0,) * (n - len(self.rows)), other.rows + (0,) * (n - len(other.rows))
        return _Value(tuple(x ^ y for x, y in zip(a, b)), self.const ^ other.const)


class _Reader:
    """Bit-linear form of each node, memoised per node (the trees share subexpressions)."""

    def __init__(self, offsets: dict[Var, tuple[int, int]]):
        self.offsets = offsets
        self.memo: dict[Expr, _Value | None] = {}

    def read(self, e: Expr) -> _Value | None:
        if e not in self.memo:
            self.memo[e] = self._read(e) if e.lo >= 0 else None
        return self.memo[e]

    def _read(self, e: Expr) -> _Value | None:
        if isinstance(e, Const):
            return _Value((), int(e.hi))
        if isinstance(e, Var):
            if e not in self.offsets:
                return None
            base, n = self.offsets[e]
            return _Value(tuple(1 << (base + b) for b in range(n)), 0)
        if isinstance(e, (FloorDiv, FloorMod)):
            k, a = log2_exact(e.c), self.read(e.a)
            if k is None or a is None:
                return None
            if isinstance(e, FloorDiv):
                return _Value(a.rows[k:], a.const >> k)
            return _Value(a.rows[:k], a.const & ((1 << k) - 1))
        if isinstance(e, Mul):
            const, other = (e.a, e.b) if e.a.is_const else (e.b, e.a)
            k = log2_exact(int(const.hi)) if const.is_const else None
            a = self.read(other)
            return None if k is None or a is None or k + len(a.rows) > _MAX_BITS else a.shifted(k)
        if isinstance(e, Sum):
            return self._sum(e)
        if isinstance(e, Xor):
            a, b = self.read(e.a), self.read(e.b)
            return None if a is None or b is None else a.xor(b)
        if isinstance(e, And):
            return self._and(e)
        return None

    def _sum(self, e: Sum) -> _Value | None:
        rows: list[int] = []
        const = live = 0  # live: positions some earlier term can set (the union, as no two terms overlap)
        parts = [(t, c) for t, c in e.terms] + [(Const(e.const), 1)] if e.const else list(e.terms)
        for term, coef in parts:
            k, v = log2_exact(coef), self.read(term)
            if k is None or v is None or k + len(v.rows) > _MAX_BITS:
                return None
            own = v.live() << k
            if live & own:  # a carry could occur: + is not ^ here
                return None
            live |= own
            rows.extend([0] * (k + len(v.rows) - len(rows)))
            for p, r in enumerate(v.rows, k):
                rows[p] ^= r
            const ^= v.const << k
        return _Value(tuple(rows), const)

    def _and(self, e: And) -> _Value | None:
        const, other = (e.a, e.b) if e.a.is_const else (e.b, e.a)
        if not const.is_const:
            return None
        a, mask = self.read(other), int(const.hi)
        if a is None:
            return None
        return _Value(tuple(r if mask >> p & 1 else 0 for p, r in enumerate(a.rows)), a.const & mask)


def bit_linear(exprs: Sequence[Expr], variables: Sequence[Var], input_shape: Sequence[int]) -> AffineF2 | None:
    """The F2-affine form ``(linear, offset)`` of ``exprs`` over ``variables`` (extents ``input_shape``), or None
    when an extent is not a power of two or an expression is not provably bit-linear (see the module doc).
    ``linear``'s out dim ``k`` has the ``2**w`` values its rows and constant can reach."""
    offsets: dict[Var, tuple[int, int]] = {}
    base = 0
    for v, n in zip(variables, input_shape):
        k = log2_exact(int(n))
        if k is None:
            return None
        offsets[v] = (base, k)
        base += k
    reader = _Reader(offsets)
    outs = []
    for e in exprs:
        val = reader.read(e)
        if val is None:
            return None
        outs.append(val)
    in_dims = tuple((v.name, int(n)) for v, n in zip(variables, input_shape))
    linear = F2Linear.from_rows(in_dims, [v.rows for v in outs], out_bits=[v.const.bit_length() for v in outs])
    return linear, tuple(v.const for v in outs)


def bijection_by_f2(affine: AffineF2) -> Proof:
    """Bijective onto the output box iff the bit matrix has full column rank (injective) and the box has as many
    points as the domain; a nonzero input the linear part sends to 0 collides with the zero coordinate."""
    linear, offset = affine
    claim = "bijective onto the output box"
    zero = tuple(0 for _ in linear.in_dims)
    kernel = linear.kernel()
    n_bits = sum(linear.in_bits)
    if kernel is not None:
        return Proof(claim, False, "f2", {"collision": (zero, kernel, offset)},
                     detail=f"F2 rank {linear.rank()} < {n_bits} input bits")
    size_in = 1 << n_bits
    box = tuple(m + 1 for m in linear.max_values(offset))
    size_out = math.prod(box)
    if size_in != size_out:
        hole = _unreached(affine, box)
        witness = {"unreachable": hole} if hole is not None else {"size_mismatch": (size_in, size_out)}
        return Proof(claim, False, "f2", witness, detail="injective, but the box is larger than the domain")
    return Proof(claim, True, "f2", detail=f"F2 rank {n_bits} = input bits, |domain| == |box|")


def _unreached(affine: AffineF2, box: tuple[int, ...], tries: int = 256) -> tuple[int, ...] | None:
    """An output in the box no input reaches, searched along each axis through the image of 0, lowest first;
    None when the first ``tries`` values of every axis are all reached."""
    linear, start = affine
    for d, extent in enumerate(box):
        for v in range(min(extent, tries)):
            point = start[:d] + (v,) + start[d + 1:]
            if not linear.contains(point, start):
                return point
    return None


def composes_to_identity(inner: AffineF2, outer: AffineF2) -> bool | None:
    """Whether ``outer(inner(x)) == x`` for every input, decided on the bit matrices: ``M_outer M_inner = I``
    and ``c_outer ^ M_outer c_inner = 0``.  None when the two do not chain (ranks differ).

    >>> from layoutkit.algebra.layout import placeholder
    >>> i, j = placeholder(0, 8), placeholder(1, 4)
    >>> a, b = placeholder(0, 4), placeholder(1, 8)
    >>> fwd = bit_linear((j, i ^ j), (i, j), (8, 4)); back = bit_linear((b ^ a, a), (a, b), (4, 8))
    >>> composes_to_identity(fwd, back), composes_to_identity(fwd, bit_linear((b, a), (a, b), (4, 8)))
    (True, False)
    """
    (f, c_inner), (g, c_outer) = inner, outer
    if len(f.out_dims) != len(g.in_dims) or len(g.out_dims) != len(f.in_dims):
        return None
    cols, in_starts, out_starts = g.columns(), _starts(g.in_bits), _starts(g.out_bits)

    def image(values: Sequence[int]) -> int | None:
        """g's linear part at an inner value, packed over g's out bits; None outside g's domain."""
        got = 0
        for v, start, nb in zip(values, in_starts, g.in_bits):
            if v >> nb:
                return None
            while v:
                low = v & -v
                got ^= cols[start + low.bit_length() - 1]
                v ^= low
        return got

    if image(c_inner) != sum(c << start for c, start in zip(c_outer, out_starts)):
        return False  # c_outer ^ M_outer c_inner must be 0 (packed: equal; a constant past its width differs)
    for d, per in enumerate(f.bases):
        if len(per) > g.out_bits[d]:
            return False
        for b, col in enumerate(per):
            if image(col) != 1 << (out_starts[d] + b):
                return False
    return True


def _starts(widths: Sequence[int]) -> list[int]:
    """Where each dim's slice of a concatenated bit vector begins."""
    out, acc = [], 0
    for w in widths:
        out.append(acc)
        acc += w
    return out
