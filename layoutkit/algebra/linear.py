"""The F2 (bit-linear) view of layouts, as in Triton's linear layouts.

A map over power-of-two input extents is *linear over F2* when ``L(a ^ b) == L(a) ^ L(b)``
(component-wise, on every output) for all coordinates ``a, b``.  Such a map is fully described by
the image of every input bit: ``bases[d][b]`` is the output tuple of the coordinate whose dim ``d``
is ``2**b`` and all others are 0.  Every XOR swizzle and every power-of-two split/transposition
is linear; ``i * 3`` is not.  :class:`F2Linear` is that description, with Triton's operations.

>>> import layoutkit as lk
>>> L = lk.Layout([4, 4], lambda i, j: (i, j ^ i))
>>> view = L.to_linear()
>>> view.bases
(((1, 1), (2, 2)), ((0, 1), (0, 2)))
>>> print(lk.Layout.from_linear(view))
Layout((4, 4) -> (4, 4), transform: (_i, _j) -> (_i, _i ^ _j))
>>> lk.Layout([4, 4], lambda i, j: i * 3 + j).to_linear()   # doctest: +ELLIPSIS
Traceback (most recent call last):
...
layoutkit.errors.NotLinearError: ... is not F2-linear: _i = 1, _j = 1 maps to (4,), but the XOR ...
>>> view.invert().compose(view) == F2Linear.identity_of(view.out_dims)   # L^-1, then L
True

The type and its small operations are here; the larger algorithms live beside it, one per module,
and the methods call them: reading a table (:mod:`.linear_table`), names and sizes
(:mod:`.linear_names`), products, quotients and restructuring (:mod:`.linear_ops`), solving and
inverting (:mod:`.linear_solve`), expressions from bases (:mod:`.linear_exprs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ShapeError
from .bits import XorBasis, bit_width, gf2_inverse, log2_exact, unpack_bits
from .linear_exprs import expressions_from_bases
from .linear_names import from_bases
from .linear_ops import concat_ins, concat_outs, divide_left, divide_right, product, sublayout, transpose
from .linear_solve import invert, invert_and_compose
from .linear_table import from_table

Dims = tuple[tuple[str, int], ...]
Image = tuple[int, ...]
Bases = tuple[tuple[Image, ...], ...]


@dataclass(frozen=True)
class F2Linear:
    """Bases of an F2-linear map (Triton's ``LinearLayout``).

    ``in_dims``: ``((name, size), ...)`` with power-of-two sizes; ``out_dims``: ``((name, size),
    ...)`` (power-of-two sizes, as Triton needs); ``bases[d][b]``: the output tuple of input bit ``b``
    of dim ``d`` (one value per out dim, each below that dim's size).  Names are unique per side.

    Flattened views (:meth:`matrix`, :meth:`rank`, :meth:`free_variable_masks`) order the bits dim by
    dim in the order given, low bits first.
    """

    in_dims: Dims
    out_dims: Dims
    bases: Bases

    def __post_init__(self) -> None:
        for side, dims in (("in", self.in_dims), ("out", self.out_dims)):
            names = [n for n, _ in dims]
            if len(set(names)) != len(names):
                raise ShapeError(f"F2Linear {side} dim names must be unique; found {names}")
            bad = [(n, s) for n, s in dims if log2_exact(s) is None]
            if bad:
                raise ShapeError(f"F2Linear {side} dim sizes must be powers of two; found {bad}")
        if len(self.bases) != len(self.in_dims):
            raise ShapeError(f"expected one basis list per in dim ({len(self.in_dims)}); found {len(self.bases)}")
        sizes = [s for _, s in self.out_dims]
        for (name, size), per in zip(self.in_dims, self.bases):
            if 1 << len(per) != size:
                raise ShapeError(
                    f"in dim {name!r} of size {size} needs {bit_width(size)} basis vectors; found {len(per)}"
                )
            for b, image in enumerate(per):
                if len(image) != len(sizes) or any(not 0 <= v < s for v, s in zip(image, sizes)):
                    raise ShapeError(
                        f"basis {b} of in dim {name!r} is {image}; expected {len(sizes)} values below {tuple(sizes)}"
                    )

    # ---- construction ----------------------------------------------------------------------------
    @classmethod
    def identity(cls, size: int, in_name: str = "in", out_name: str = "out") -> F2Linear:
        """Triton's ``identity1D``: ``x -> x`` on one dim of ``size`` (a power of two).

        >>> F2Linear.identity(4).bases
        (((1,), (2,)),)
        """
        return cls.identity_of(((in_name, size),), (out_name,))

    @classmethod
    def identity_of(cls, dims: Dims, out_names: Sequence[str] | None = None) -> F2Linear:
        """The identity on several dims (out dims renamed to ``out_names`` when given).

        >>> F2Linear.identity_of((("a", 2), ("b", 2))).bases
        (((1, 0),), ((0, 1),))
        """
        names = [n for n, _ in dims] if out_names is None else list(out_names)
        n = len(dims)
        bases = tuple(
            tuple(tuple((1 << b) if k == d else 0 for k in range(n)) for b in range(bit_width(s)))
            for d, (_, s) in enumerate(dims)
        )
        return cls(tuple(dims), tuple(zip(names, (s for _, s in dims))), bases)

    @classmethod
    def from_bases(
        cls,
        bases: Mapping[str, Sequence[Sequence[int]]] | Sequence[tuple[str, Sequence[Sequence[int]]]],
        out_dims: Mapping[str, int] | Sequence[str] | Sequence[tuple[str, int]],
        require_surjective: bool | None = None,
    ) -> F2Linear:
        """Triton's ``LinearLayout(bases, outDims)`` over named dims (see
        :func:`layoutkit.algebra.linear_names.from_bases`: names only infer the sizes and require a
        surjective map, explicit sizes allow any).

        >>> F2Linear.from_bases({"register": [[1], [2]], "lane": [[4]]}, ["dim0"]).out_dims
        (('dim0', 8),)
        """
        return from_bases(cls, bases, out_dims, require_surjective)

    @classmethod
    def zeros(cls, size: int, in_name: str = "in", out_name: str = "out") -> F2Linear:
        """Triton's ``zeros1D``: every input of ``size`` maps to 0 (an out dim of size 1).

        >>> F2Linear.zeros(4).bases, F2Linear.zeros(4).matrix().shape
        ((((0,), (0,)),), (0, 2))
        """
        return cls(((in_name, size),), ((out_name, 1),), (tuple((0,) for _ in range(bit_width(size))),))

    @classmethod
    def from_images(cls, images: Sequence[int], in_name: str = "in", out_name: str = "out") -> F2Linear:
        """One in dim with ``len(images)`` bits and one out dim: bit ``b`` maps to ``images[b]``.

        >>> F2Linear.from_images([3, 5]).apply([3])
        (6,)
        """
        top = max((int(v) for v in images), default=0)
        return cls(((in_name, 1 << len(images)),), ((out_name, 1 << bit_width(top + 1)),),
                   (tuple((int(v),) for v in images),))

    @classmethod
    def from_table(
        cls, table: NDArray[np.integer[Any]], in_names: Sequence[str] | None = None,
        out_names: Sequence[str] | None = None,
    ) -> F2Linear | None:
        """The map whose full table is ``table`` (shape ``in_shape + (m,)``, row-major), or None when
        an extent is not a power of two or the table is not F2-linear (a linear table with negative
        values raises :class:`~layoutkit.ShapeError`).  Out sizes are the powers of two
        just above each column's maximum.  Default names: ``in0, in1, ...`` and ``out0, out1, ...``.

        The table is predicted from the images of the row-major flat index's bits by doubling
        (``pred = [pred, pred ^ image]`` per bit, 2N work in all) and compared once.

        >>> t = np.stack(np.meshgrid(np.arange(4), np.arange(2), indexing="ij"), axis=-1)   # (i, j) -> (i, j)
        >>> F2Linear.from_table(t).bases
        (((1, 0), (2, 0)), ((0, 1),))
        >>> F2Linear.from_table(np.arange(3)[:, None]) is None
        True
        """
        return from_table(cls, table, in_names, out_names)

    # ---- shape ------------------------------------------------------------------------------------
    @property
    def in_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.in_dims)

    @property
    def out_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.out_dims)

    @property
    def in_bits(self) -> tuple[int, ...]:
        """Bits of each in dim (``log2`` of its size)."""
        return tuple(len(per) for per in self.bases)

    @property
    def out_bits(self) -> tuple[int, ...]:
        """Bits of each out dim (``log2`` of its size)."""
        return tuple(bit_width(s) for _, s in self.out_dims)

    def in_dim_size(self, name: str) -> int:
        return _lookup(self.in_dims, name, "in")

    def out_dim_size(self, name: str) -> int:
        return _lookup(self.out_dims, name, "out")

    # ---- evaluation ---------------------------------------------------------------------------------
    def apply(self, values: Sequence[int]) -> Image:
        """Image of one input (one value per in dim): the xor of the images of its set bits.

        >>> F2Linear.from_images([1, 3]).apply([2]), F2Linear.from_images([1, 3]).apply([3])
        ((3,), (2,))
        """
        if len(values) != len(self.in_dims):
            raise ShapeError(f"expected {len(self.in_dims)} input values; found {len(values)}: {tuple(values)}")
        out = [0] * len(self.out_dims)
        for (name, size), value, per in zip(self.in_dims, values, self.bases):
            if not 0 <= int(value) < size:
                raise ShapeError(f"input {name}={value} is outside range({size})")
            for b, image in enumerate(per):
                if int(value) >> b & 1:
                    out = [o ^ v for o, v in zip(out, image)]
        return tuple(out)

    def _pack(self, image: Sequence[int]) -> int:
        """One image as an int over the concatenated out bits."""
        out, shift = 0, 0
        for v, nb in zip(image, self.out_bits):
            out |= int(v) << shift
            shift += nb
        return out

    def _unpack_in(self, combo: int) -> Image:
        """An int over the concatenated in bits as one value per in dim."""
        return unpack_bits(combo, self.in_bits)

    def columns(self) -> tuple[int, ...]:
        """Every basis image packed into one int over the concatenated out bits (the matrix columns).

        >>> F2Linear.from_images([3, 5]).columns()
        (3, 5)
        """
        return tuple(self._pack(image) for per in self.bases for image in per)

    def matrix(self) -> NDArray[np.uint8]:
        """The 0/1 matrix ``[out bits, in bits]`` (output dims concatenated, low bits first).

        >>> F2Linear.from_images([3, 1]).matrix().tolist()
        [[1, 1], [1, 0]]
        """
        n_out = sum(self.out_bits)
        cols = self.columns()
        m = np.array([[(c >> r) & 1 for c in cols] for r in range(n_out)], dtype=np.uint8)
        return m.reshape(n_out, len(cols))

    def rank(self) -> int:
        """Rank over F2: the image has ``2**rank`` points.  ``rank <= min(in bits, out bits)``;
        ``rank(g.compose(f)) <= min(rank(f), rank(g))``.

        >>> F2Linear.from_images([1, 2, 3]).rank()
        2
        """
        basis = XorBasis()
        for c in self.columns():
            basis.insert(c)
        return basis.rank

    def is_injective(self) -> bool:
        """No two inputs share an image (``rank == total in bits``)."""
        return self.rank() == sum(self.in_bits)

    def is_surjective(self) -> bool:
        """Every output in the out box is reached (``rank == total out bits``)."""
        return self.rank() == sum(self.out_bits)

    def is_invertible(self) -> bool:
        return self.is_injective() and self.is_surjective()

    def free_variable_masks(self) -> dict[str, int]:
        """Triton's ``getFreeVariableMasks``: per in dim, the mask of its basis vectors that are free
        variables (no pivot: in the span of the vectors before them in flattened order).  A map is
        injective iff every mask is 0; zero (broadcast) bases are always free.

        >>> F2Linear.from_images([1, 2, 3, 0]).free_variable_masks()
        {'in': 12}
        """
        basis = XorBasis()
        masks: dict[str, int] = {}
        for name, per in zip(self.in_names, self.bases):
            mask = 0
            for b, image in enumerate(per):
                if not basis.insert(self._pack(image)):
                    mask |= 1 << b
            masks[name] = mask
        return masks

    def num_consecutive(self) -> int:
        """Triton's ``getNumConsecutiveInOut``: how many consecutive values of the first in dim map to
        consecutive values of the first out dim, no other basis touching those low out bits.

        >>> F2Linear.from_images([1, 2, 8]).num_consecutive(), F2Linear.from_images([1, 2, 8, 2]).num_consecutive()
        (4, 2)
        """
        if not self.bases or not self.out_dims:
            return 1
        first = self.bases[0]
        consec = 0
        while consec < len(first) and first[consec][0] == 1 << consec and not any(first[consec][1:]):
            consec += 1
        others = 0
        for d, per in enumerate(self.bases):
            for b, image in enumerate(per):
                if d or b >= consec:
                    others |= image[0]
        low = (others & -others).bit_length() - 1 if others else consec
        return 1 << min(consec, low)

    # ---- composition and inverses -----------------------------------------------------------------
    def compose(self, outer: F2Linear) -> F2Linear:
        """Triton's ``compose``: ``x -> outer(self(x))``.  ``self``'s out dims must be ``outer``'s in
        dims (same names, same order, sizes at most ``outer``'s).  Associative; the identity on either
        side is neutral.

        >>> f = F2Linear.from_images([1, 2], "x", "y")
        >>> f.compose(F2Linear.from_images([2, 1], "y", "z")).bases
        (((2,), (1,)),)
        """
        if self.out_names != outer.in_names or any(
            s > outer.in_dim_size(n) for n, s in self.out_dims
        ):
            raise ShapeError(f"compose: expected outer in dims covering {self.out_dims}; found {outer.in_dims}")
        bases = tuple(tuple(outer.apply(image) for image in per) for per in self.bases)
        return F2Linear(self.in_dims, outer.out_dims, bases)

    def invert_and_compose(self, outer: F2Linear) -> F2Linear:
        """Triton's ``invertAndCompose``: ``C`` from ``self``'s ins to ``outer``'s ins.

        Law: ``C.compose(outer)`` equals ``self`` as a map (``outer(C(x)) == self(x)`` for every ``x``);
        when ``outer`` is invertible ``C == self.compose(outer.invert())``.  The out dims must be the same
        names (any order), ``self``'s sizes at most ``outer``'s, and every image of ``self`` reached by
        ``outer`` (else :class:`~layoutkit.NotBijectiveError` names the unreachable image).  Where
        ``outer`` is not injective, ``C`` is Triton 3.9's choice: in dims shared with equal bases (whose
        bits no other outer dim sets) map to themselves, every other bit gets the minimum-norm solution
        (free variables 0); see
        :mod:`layoutkit.algebra.linear_solve`.

        >>> f, g = F2Linear.from_images([1, 2]), F2Linear.from_images([2, 1], "g")
        >>> c = f.invert_and_compose(g)
        >>> c.bases, c.compose(g) == f
        ((((2,), (1,)),), True)
        >>> F2Linear.from_images([1, 2]).invert_and_compose(F2Linear.from_images([1, 2, 3], "s")).bases
        (((1,), (2,)),)
        """
        return invert_and_compose(self, outer)

    def pseudo_inverse(self) -> F2Linear:
        """Triton's ``pseudoinvert``: a right inverse ``P`` (``self(P(y)) == y``) of a surjective map,
        free variables 0.  For an invertible map it is :meth:`invert`.

        >>> f = F2Linear.from_images([1, 2, 3])       # 3 bits onto 2: not injective
        >>> p = f.pseudo_inverse()
        >>> p.bases
        (((1,), (2,)),)
        >>> p.compose(f) == F2Linear.identity(4, "out", "out")
        True
        """
        return F2Linear.identity_of(self.out_dims).invert_and_compose(self)

    def invert(self) -> F2Linear:
        """The inverse of an invertible map (square, full rank): ``f.invert().compose(f)`` and
        ``f.compose(f.invert())`` are identities.  Raises :class:`~layoutkit.NotBijectiveError` with two
        colliding inputs or an unreachable output otherwise.

        >>> F2Linear.from_images([1, 3]).invert().bases
        (((1,), (3,)),)
        """
        return invert(self)

    # ---- products and their quotients ---------------------------------------------------------------
    def __mul__(self, outer: F2Linear) -> F2Linear:
        """Triton's product ``self * outer``: shared dims grow, ``self`` in the low bits and ``outer``
        above it; dims of only one side pass through.

        >>> (F2Linear.identity(2, "x", "y") * F2Linear.identity(4, "x", "y")).bases
        (((1,), (2,), (4,)),)
        """
        return product(self, outer)

    def divide_left(self, inner: F2Linear) -> F2Linear | None:
        """Triton's ``divideLeft``: ``C`` with ``inner * C == self``, or None when there is none.

        Law: ``inner * self.divide_left(inner) == self`` (as maps); ``C`` has ``self``'s dims.  A
        quotient exists iff, on every dim ``inner`` has, ``self``'s matrix is ``[[inner, 0], [0, C]]``.

        >>> whole = F2Linear.identity(8, "x", "y")
        >>> whole.divide_left(F2Linear.identity(2, "x", "y")) == F2Linear.identity(4, "x", "y")
        True
        """
        return divide_left(self, inner)

    def divide_right(self, outer: F2Linear) -> F2Linear | None:
        """Triton's ``divideRight``: ``C`` with ``C * outer == self``, or None when there is none.

        Law: ``self.divide_right(outer) * outer == self`` (as maps); ``C`` has ``self``'s dims.

        >>> F2Linear.identity(8, "x", "y").divide_right(F2Linear.identity(4, "x", "y")).bases
        (((1,),),)
        """
        return divide_right(self, outer)

    # ---- restructuring --------------------------------------------------------------------------------
    def sublayout(self, ins: Sequence[str], outs: Sequence[str]) -> F2Linear:
        """Triton's ``sublayout``: only the named in dims and out dims (kept in this map's order).

        Law: the in dims not named are fixed at 0 and the out dims not named are dropped; out sizes are
        unchanged, so ``f.sublayout(f.in_names, f.out_names) == f`` and
        ``f.concat_ins(g).sublayout(f.in_names, f.out_names) == f``.

        >>> F2Linear.identity_of((("a", 2), ("b", 2))).sublayout(["b"], ["b"]).bases
        (((1,),),)
        """
        return sublayout(self, ins, outs)

    def concat_ins(self, other: F2Linear) -> F2Linear:
        """Triton's ``concatIns``: both maps' in dims (disjoint names) on the same out dims; the image of
        ``(x, y)`` is ``self(x) ^ other(y)`` (the opposite of :meth:`sublayout`).

        >>> lanes = F2Linear.from_bases({"lane": [[1], [2]]}, {"dim0": 8})
        >>> warps = F2Linear.from_bases({"warp": [[4]]}, {"dim0": 8})
        >>> lanes.concat_ins(warps).apply([3, 1])
        (7,)
        """
        return concat_ins(self, other)

    def concat_outs(self, other: F2Linear) -> F2Linear:
        """Triton's ``concatOuts``: same in dims, both maps' out dims (disjoint names) side by side: the
        image of ``x`` is ``(self(x), other(x))``.

        >>> rows = F2Linear.from_bases({"lane": [[1], [0]]}, {"dim0": 2})
        >>> cols = F2Linear.from_bases({"lane": [[0], [1]]}, {"dim1": 2})
        >>> rows.concat_outs(cols).apply([2])
        (0, 1)
        """
        return concat_outs(self, other)

    def transpose_ins(self, order: Sequence[str]) -> F2Linear:
        """Triton's ``transposeIns``: the same map with its in dims listed in ``order`` (a permutation of
        :attr:`in_names`); ``apply`` takes the values in the new order.  Only the listing (and so
        flattened views such as :meth:`matrix`) changes.

        >>> f = F2Linear.from_bases({"lane": [[1]], "warp": [[2]]}, ["dim0"])
        >>> f.transpose_ins(["warp", "lane"]).apply([1, 0])
        (2,)
        """
        return transpose(self, order, None)

    def transpose_outs(self, order: Sequence[str]) -> F2Linear:
        """Triton's ``transposeOuts``: the same map with its out dims listed in ``order``; images list
        their values in the new order.

        >>> f = F2Linear.from_bases({"lane": [[1, 0], [0, 1]]}, ["dim0", "dim1"])
        >>> f.transpose_outs(["dim1", "dim0"]).apply([1])
        (0, 1)
        """
        return transpose(self, None, order)

    def to_triton(self) -> dict[str, dict[str, Any]]:
        """``{"bases": {in_name: [[out...], ...]}, "out_dims": {out_name: size}}`` — the data of a
        Triton ``LinearLayout(bases, out_dims)``."""
        return {
            "bases": {name: [list(v) for v in bs] for (name, _), bs in zip(self.in_dims, self.bases)},
            "out_dims": dict(self.out_dims),
        }


def _lookup(dims: Dims, name: str, side: str) -> int:
    for n, s in dims:
        if n == name:
            return s
    raise ShapeError(f"no {side} dim named {name!r}; the map has {[n for n, _ in dims]}")


def inverse_bases(view: F2Linear, out_sizes: Sequence[int]) -> Bases | None:
    """Bases of the inverse map (inputs: the forward's outputs with ``out_sizes``), or None when the
    sizes are not powers of two or the map is not invertible on them."""
    if any(log2_exact(int(s)) is None for s in out_sizes) or len(out_sizes) != len(view.out_dims):
        return None
    try:
        exact = F2Linear(view.in_dims, tuple((f"out{k}", int(s)) for k, s in enumerate(out_sizes)), view.bases)
    except ShapeError:
        return None
    if not exact.is_invertible():
        return None
    return exact.invert().bases


def bases_from_mapping(view: F2Linear | Mapping[str, Sequence[Sequence[int]]] | Sequence[Sequence[Sequence[int]]]
                       ) -> Bases:
    """Basis images from an :class:`F2Linear`, a ``{in_dim: [[out...], ...]}`` dict or per-dim lists."""
    if isinstance(view, F2Linear):
        raw: Sequence[Sequence[Sequence[int]]] = view.bases
    elif isinstance(view, Mapping):
        raw = tuple(view.values())
    else:
        raw = tuple(view)
    return tuple(tuple(tuple(int(v) for v in img) for img in per) for per in raw)


__all__ = ["F2Linear", "expressions_from_bases", "gf2_inverse", "inverse_bases", "bases_from_mapping"]
