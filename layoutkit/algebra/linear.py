"""The F2 (bit-linear) view of layouts, as in Triton's linear layouts.

A map over power-of-two input extents is *linear over F2* when ``L(a ^ b) == L(a) ^ L(b)``
(component-wise, on every output) for all coordinates ``a, b``.  Such a map is fully described by
the image of every input bit: ``bases[d][b]`` is the output tuple of the coordinate whose dim ``d``
is ``2**b`` and all others are 0.  Every XOR swizzle and every power-of-two split/transposition
is linear; ``i * 3`` is not.

>>> import layoutkit as lk
>>> L = lk.Layout([4, 4], lambda i, j: (i, j ^ i))
>>> view = L.to_linear()
>>> view.bases
(((1, 1), (2, 2)), ((0, 1), (0, 2)))
>>> print(lk.Layout.from_linear(view))
Layout((4, 4) -> (4, 4), (_i, _j) -> (_i, _i ^ _j))
>>> lk.Layout([4, 4], lambda i, j: i * 3 + j).to_linear() is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from .nodes import Const, Expr, Var
from .simplify import bitxor, make_split, make_sum


def _log2(n: int) -> int | None:
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


@dataclass(frozen=True)
class F2Linear:
    """Bases of an F2-linear map.

    ``in_dims``: ``((name, size), ...)`` with power-of-two sizes; ``out_dims``: ``((name, size),
    ...)`` (sizes rounded up to powers of two, as Triton needs); ``bases[d][b]``: the output tuple
    of input bit ``b`` of dim ``d``.
    """

    in_dims: tuple[tuple[str, int], ...]
    out_dims: tuple[tuple[str, int], ...]
    bases: tuple[tuple[tuple[int, ...], ...], ...]

    def to_triton(self) -> dict:
        """``{"bases": {in_name: [[out...], ...]}, "out_dims": {out_name: size}}`` — the data of a
        Triton ``LinearLayout(bases, out_dims)``."""
        return {
            "bases": {name: [list(v) for v in bs] for (name, _), bs in zip(self.in_dims, self.bases)},
            "out_dims": dict(self.out_dims),
        }

    def matrix(self) -> np.ndarray:
        """The 0/1 matrix ``[out bits, in bits]`` (output dims concatenated, low bits first)."""
        out_bits = [_log2(s) for _, s in self.out_dims]
        cols = []
        for bs in self.bases:
            for image in bs:
                col = []
                for value, nb in zip(image, out_bits):
                    col.extend((value >> k) & 1 for k in range(nb))
                cols.append(col)
        return np.array(cols, dtype=np.uint8).T.reshape(sum(out_bits), -1)


def bases_of(table: np.ndarray, input_shape: Sequence[int]) -> tuple | None:
    """Basis images read off a full table, or None if the map is not F2-linear."""
    n = len(input_shape)
    bits = [_log2(e) for e in input_shape]
    if any(b is None for b in bits):
        return None
    if np.any(table[(0,) * n] != 0):
        return None
    bases = []
    predicted = np.zeros_like(table)
    coords = np.indices(tuple(input_shape), dtype=np.int64)
    for d in range(n):
        per_bit = []
        for b in range(bits[d]):
            idx = [0] * n
            idx[d] = 1 << b
            image = table[tuple(idx)]
            per_bit.append(tuple(int(v) for v in image))
            mask = ((coords[d] >> b) & 1)[..., None]
            predicted ^= mask * image
        bases.append(tuple(per_bit))
    if not np.array_equal(predicted, table):
        return None
    return tuple(bases)


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
            value: Expr = Const(0)
            for d, b in sorted(group):
                value = bitxor(value, make_split(variables[d], 2**b, 2 ** (b + length)))
            terms[value] = terms.get(value, 0) + 2**p
            p += length
        outs.append(make_sum(terms))
    return tuple(outs)


def gf2_inverse(m: np.ndarray) -> np.ndarray | None:
    """Inverse of a square 0/1 matrix over GF(2) by Gauss-Jordan elimination, or None."""
    n = m.shape[0]
    if m.ndim != 2 or m.shape[1] != n:
        return None
    a = np.concatenate([m.astype(np.uint8) & 1, np.eye(n, dtype=np.uint8)], axis=1)
    for col in range(n):
        rows = np.flatnonzero(a[col:, col]) + col
        if rows.size == 0:
            return None
        a[[col, rows[0]]] = a[[rows[0], col]]
        hit = np.flatnonzero(a[:, col])
        hit = hit[hit != col]
        a[hit] ^= a[col]
    return a[:, n:]


def inverse_bases(view: F2Linear, out_sizes: Sequence[int]) -> tuple | None:
    """Bases of the inverse map (inputs: the forward's outputs with ``out_sizes``)."""
    out_bits = [_log2(s) for s in out_sizes]
    in_bits = [_log2(s) for _, s in view.in_dims]
    if any(b is None for b in out_bits) or sum(out_bits) != sum(in_bits):
        return None
    exact = F2Linear(view.in_dims, tuple(("", s) for s in out_sizes), view.bases)
    inv = gf2_inverse(exact.matrix())
    if inv is None:
        return None
    bases = []
    row = 0
    for nb in out_bits:
        per_bit = []
        for _ in range(nb):
            col = inv[:, row]
            image, pos = [], 0
            for b in in_bits:
                image.append(sum(int(col[pos + k]) << k for k in range(b)))
                pos += b
            per_bit.append(tuple(image))
            row += 1
        bases.append(tuple(per_bit))
    return tuple(bases)
