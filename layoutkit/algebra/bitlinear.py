"""Structural F2 analysis: index maps that are affine over the bits of their inputs, read off the expressions.

Power-of-two extents, shifts and masks by powers of two (``* 2**k``, ``// 2**k``, ``% 2**k``), ``^``, ``&`` with
a constant and sums whose terms occupy disjoint bits are all affine over F2: every output bit is the parity
of some input bits, xor a constant bit.  :func:`bit_linear` finds that form from the expression tree alone
(no evaluation), so bijectivity (:func:`bijection_by_f2`: injective iff the bit matrix has full column rank,
as Triton's ``LinearLayout`` decides it) and the bounding box (:meth:`BitLinear.max_values`) cost a
Gaussian elimination over the input bits instead of a pass over every coordinate.

A value is kept as ``const ^ L(x)``: ``rows[p]`` is the mask of input bits whose parity is bit ``p``.  Shifts and
masks distribute over ``^``, so they act on the rows; a sum is an ``^`` when no bit position can be set in
two of its terms (each term's rows and constant bits are known), and anything else is not bit-linear.

>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 64), placeholder(1, 64)
>>> bl = bit_linear((i, (j // 8 ^ i % 8) * 8 + j % 8), (i, j), (64, 64))
>>> bl.rank(), bl.n_bits, bl.max_values()
(12, 12, (63, 63))
>>> bit_linear((i + j,), (i, j), (64, 64)) is None      # carries: not bit-linear
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from .nodes import And, Const, Expr, FloorDiv, FloorMod, Mul, Sum, Var, Xor
from .proof import Proof

__all__ = ["BitLinear", "bijection_by_f2", "bit_linear", "composes_to_identity"]

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


def _log2(c: int) -> int | None:
    return c.bit_length() - 1 if c > 0 and c & (c - 1) == 0 else None


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
            k, a = _log2(e.c), self.read(e.a)
            if k is None or a is None:
                return None
            if isinstance(e, FloorDiv):
                return _Value(a.rows[k:], a.const >> k)
            return _Value(a.rows[:k], a.const & ((1 << k) - 1))
        if isinstance(e, Mul):
            const, other = (e.a, e.b) if e.a.is_const else (e.b, e.a)
            k = _log2(int(const.hi)) if const.is_const else None
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
            k, v = _log2(coef), self.read(term)
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


@dataclass(frozen=True)
class BitLinear:
    """An index map that is affine over F2: ``outputs[d] = consts[d] ^ L_d(x)`` over the ``n_bits`` input bits
    (input dim ``k`` owns bits ``bit_offsets[k] ..``, lowest first)."""

    outputs: tuple[_Value, ...]
    input_shape: tuple[int, ...]
    bit_offsets: tuple[int, ...]
    n_bits: int

    def columns(self) -> list[int]:
        """The image of each input bit, the outputs' bits concatenated (output ``d`` shifted past the earlier
        ones), as Python-int bit vectors."""
        return list(self._columns)

    @cached_property
    def _columns(self) -> tuple[int, ...]:
        # the rank test, the maxima and the round trip all read the transposed matrix: built once per map
        cols = [0] * self.n_bits
        shift = 0
        for v, w in zip(self.outputs, self.widths()):
            for p, row in enumerate(v.rows):
                while row:
                    low = row & -row
                    cols[low.bit_length() - 1] |= 1 << (shift + p)
                    row ^= low
            shift += w
        return tuple(cols)

    def widths(self) -> tuple[int, ...]:
        """Bit positions each output may use (its slice of the concatenated column vectors)."""
        return self._widths

    @cached_property
    def _widths(self) -> tuple[int, ...]:
        return tuple(max(len(v.rows), v.const.bit_length()) for v in self.outputs)

    def contains(self, point: Sequence[int]) -> bool:
        """Whether some input maps to the output ``point`` (membership in ``const ^ span(columns)``)."""
        vec, shift = 0, 0
        for v, w, y in zip(self.outputs, self.widths(), point):
            diff = int(y) ^ v.const
            if diff >> w:
                return False
            vec |= diff << shift
            shift += w
        return _reduce(vec, self._basis) == 0

    @cached_property
    def _basis(self) -> dict[int, int]:
        """A reduced basis of the column span (leading bit -> vector), computed once per map."""
        return _span(self.columns())

    def linear_image(self, bits: int) -> tuple[int, ...]:
        """The outputs of the linear part at the input whose bits are ``bits`` (the constants left out)."""
        return tuple(sum(((row & bits).bit_count() & 1) << p for p, row in enumerate(v.rows)) for v in self.outputs)

    def bits_of(self, coord: Sequence[int]) -> int:
        """The input-bit vector of a coordinate (the inverse of :meth:`coordinate`)."""
        return sum(int(c) << off for c, off in zip(coord, self.bit_offsets))

    def rank(self) -> int:
        return _rank_and_kernel(self.columns())[0]

    def kernel_vector(self) -> int | None:
        """A nonzero input-bit vector mapped to 0 by the linear part (two inputs with one image), or None."""
        return _rank_and_kernel(self.columns())[1]

    def coordinate(self, bits: int) -> tuple[int, ...]:
        """The input coordinate whose bits are ``bits``."""
        return tuple((bits >> off) & (n - 1) for off, n in zip(self.bit_offsets, self.input_shape))

    def max_values(self) -> tuple[int, ...]:
        """The exact maximum of every output over the domain (greedy over an echelon basis of its span)."""
        out = []
        shift = 0
        for v, w in zip(self.outputs, self._widths):
            mask = (1 << w) - 1
            basis = _span([col >> shift & mask for col in self._columns])  # this output's slice of every column
            shift += w
            best = v.const
            for lead in sorted(basis, reverse=True):
                if not best >> lead & 1:
                    best ^= basis[lead]
            out.append(best)
        return tuple(out)


def _reduce(vec: int, basis: dict[int, int]) -> int:
    """``vec`` reduced while its leading bit leads a vector of ``basis`` (an echelon basis: distinct leading
    bits), so 0 exactly when ``vec`` is in the span; otherwise its leading bit leads no basis vector."""
    while vec:
        row = basis.get(vec.bit_length() - 1)
        if row is None:
            break
        vec ^= row
    return vec


def _span(cols: Sequence[int]) -> dict[int, int]:
    """An echelon basis (leading bit -> vector) of the span of ``cols`` over F2."""
    basis: dict[int, int] = {}
    for col in cols:
        col = _reduce(col, basis)
        if col:
            basis[col.bit_length() - 1] = col
    return basis


def _rank_and_kernel(cols: Sequence[int]) -> tuple[int, int | None]:
    """Rank of the columns over F2 and, when they are dependent, one nonzero combination summing to 0 (as a
    mask over the columns: the first column that depends on the earlier ones, with their unique combination)."""
    basis: dict[int, tuple[int, int]] = {}  # leading bit -> (vector, columns combined into it)
    kernel = None
    for k, col in enumerate(cols):
        combo = 1 << k
        while col:
            hit = basis.get(col.bit_length() - 1)
            if hit is None:
                break
            col, combo = col ^ hit[0], combo ^ hit[1]
        if col:
            basis[col.bit_length() - 1] = (col, combo)
        elif kernel is None:
            kernel = combo
    return len(basis), kernel


def bit_linear(exprs: Sequence[Expr], variables: Sequence[Var], input_shape: Sequence[int]) -> BitLinear | None:
    """The F2-affine form of ``exprs`` over ``variables`` (extents ``input_shape``), or None when an extent is
    not a power of two or an expression is not provably bit-linear (see the module doc)."""
    offsets: dict[Var, tuple[int, int]] = {}
    starts, base = [], 0
    for v, n in zip(variables, input_shape):
        k = _log2(int(n))
        if k is None:
            return None
        offsets[v] = (base, k)
        starts.append(base)
        base += k
    reader = _Reader(offsets)
    outs = []
    for e in exprs:
        val = reader.read(e)
        if val is None:
            return None
        outs.append(val)
    return BitLinear(tuple(outs), tuple(int(n) for n in input_shape), tuple(starts), base)


def bijection_by_f2(bl: BitLinear) -> Proof:
    """Bijective onto the output box iff the bit matrix has full column rank (injective) and the box has as many
    points as the domain; a dependent combination of input bits names two colliding coordinates."""
    claim = "bijective onto the output box"
    zero = tuple(0 for _ in bl.input_shape)
    image0 = tuple(v.const for v in bl.outputs)
    rank, kernel = _rank_and_kernel(bl._columns)
    if kernel is not None:
        return Proof(claim, False, "f2", {"collision": (zero, bl.coordinate(kernel), image0)},
                     detail=f"F2 rank {rank} < {bl.n_bits} input bits")
    size_in = math.prod(bl.input_shape)
    box = tuple(m + 1 for m in bl.max_values())
    size_out = math.prod(box)
    if size_in != size_out:
        hole = _unreached(bl, box, image0)
        witness = {"unreachable": hole} if hole is not None else {"size_mismatch": (size_in, size_out)}
        return Proof(claim, False, "f2", witness, detail="injective, but the box is larger than the domain")
    return Proof(claim, True, "f2", detail=f"F2 rank {bl.n_bits} = input bits, |domain| == |box|")


def _unreached(bl: BitLinear, box: tuple[int, ...], start: tuple[int, ...], tries: int = 256) -> tuple[int, ...] | None:
    """An output in the box no input reaches, searched along each axis through ``start`` (an image), lowest
    first; None when the first ``tries`` values of every axis are all reached."""
    for d, extent in enumerate(box):
        for v in range(min(extent, tries)):
            point = start[:d] + (v,) + start[d + 1:]
            if not bl.contains(point):
                return point
    return None


def composes_to_identity(inner: BitLinear, outer: BitLinear) -> bool | None:
    """Whether ``outer(inner(x)) == x`` for every input, decided on the bit matrices: ``M_outer M_inner = I``
    and ``c_outer ^ M_outer c_inner = 0``.  None when the two do not chain (ranks or extents differ).

    >>> from layoutkit.algebra.layout import placeholder
    >>> i, j = placeholder(0, 8), placeholder(1, 4)
    >>> a, b = placeholder(0, 4), placeholder(1, 8)
    >>> fwd = bit_linear((j, i ^ j), (i, j), (8, 4)); back = bit_linear((b ^ a, a), (a, b), (4, 8))
    >>> composes_to_identity(fwd, back), composes_to_identity(fwd, bit_linear((b, a), (a, b), (4, 8)))
    (True, False)
    """
    if len(inner.outputs) != len(outer.input_shape) or len(outer.outputs) != len(inner.input_shape):
        return None
    consts = tuple(v.const for v in inner.outputs)
    if any(v >= n for v, n in zip(consts, outer.input_shape)):
        return False
    base = outer.linear_image(outer.bits_of(consts))
    if any(c ^ v.const for c, v in zip(base, outer.outputs)):
        return False
    # M_outer M_inner = I column by column, on concatenated bit vectors: an inner output bit p of output k is
    # outer input bit offsets[k] + p (no such bit: that inner value would leave the outer domain)
    where: list[int | None] = []
    for k, w in enumerate(inner.widths()):
        own = outer.input_shape[k].bit_length() - 1
        where += [outer.bit_offsets[k] + p if p < own else None for p in range(w)]
    outer_cols, widths = outer._columns, outer._widths
    shifts = _starts(widths)
    owner = [k for k, n in enumerate(inner.input_shape) for _ in range(n.bit_length() - 1)]
    for b, col in enumerate(inner._columns):
        got = 0
        while col:
            low = col & -col
            at = where[low.bit_length() - 1]
            if at is None:
                return False
            got ^= outer_cols[at]
            col ^= low
        d = owner[b]
        p = b - inner.bit_offsets[d]
        if p >= widths[d] or got != 1 << (shifts[d] + p):
            return False
    return True


def _starts(widths: Sequence[int]) -> list[int]:
    """Where each output's slice of a concatenated bit vector begins."""
    out, acc = [], 0
    for w in widths:
        out.append(acc)
        acc += w
    return out
