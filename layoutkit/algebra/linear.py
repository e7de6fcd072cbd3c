"""The F2 (bit-linear) view of layouts, as in Triton's linear layouts.

A map over power-of-two input extents is *linear over F2* when ``L(a ^ b) == L(a) ^ L(b)``
(component-wise, on every output) for all coordinates ``a, b``.  Such a map is fully described by
the image of every input bit: ``bases[d][b]`` is the output tuple of the coordinate whose dim ``d``
is ``2**b`` and all others are 0.  Every XOR swizzle and every power-of-two split/transposition
is linear; ``i * 3`` is not.  :class:`F2Linear` is that description, with Triton's operations: named
dims, products and their quotients, restructuring, solving (``invert_and_compose``) and inverting.  It
is also the bit matrix the structural proofs of :mod:`.bitlinear` decide on (:meth:`F2Linear.kernel`,
:meth:`F2Linear.max_values`, :meth:`F2Linear.contains`).

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

Named dims: Triton names the hardware input dims ``register``, ``lane``, ``warp`` and ``block`` and the
tensor output dims ``dim0``, ``dim1``, ... (dim 0 outermost, as Triton's tensors index them).  Every op
matches dims by these names, so a layout over ``(register, lane, warp)`` composes with one over
``(dim0, dim1)`` exactly as in Triton.

>>> f = F2Linear.from_bases({REGISTER: [[0, 1]], LANE: [[0, 2], [1, 0]]}, dim_names(2))   # sizes inferred
>>> f.in_dims, f.out_dims
((('register', 2), ('lane', 4)), (('dim0', 2), ('dim1', 4)))
>>> f.apply([1, 3])
(1, 3)

Laws of the structural operations (tested): ``(a * b).divide_left(a) == b`` and
``(a * b).divide_right(b) == a`` when the quotient's dims are those of the product;
``f.transpose_ins(order)`` is the same map read in another dim order;
``f.concat_ins(g).sublayout(f.in_names, f.out_names) == f``.

>>> a, b = F2Linear.identity(2, "x", "y"), F2Linear.from_images([2, 1], "x", "y")
>>> (a * b).bases
(((1,), (4,), (2,)),)
>>> (a * b).divide_left(a) == b, (a * b).divide_right(b) == a
(True, True)

How :meth:`F2Linear.invert_and_compose` chooses ``C`` (with ``outer(C(x)) == self(x)`` for every ``x``)
where ``outer`` is not injective (Triton 3.9's rule, reproduced exactly):

* an in dim that both maps have under the same name, with the same bases (the same sub-map onto the
  out dims), and whose image bits no other in dim of ``outer`` sets, maps to itself (``C`` is the
  identity there: nothing has to move across it);
* every other bit of ``self`` is solved against the columns of ``outer``'s other in dims, flattened in
  order, low bits first: the solution uses only *pivot* columns (those not in the span of the columns
  before them) and leaves every free column at 0 -- the minimum-norm solution of the reduced row
  echelon form.  So a broadcast (zero) basis of ``self`` maps to 0;
* where the other dims need the shared dims' columns (Triton asserts there), every dim is solved
  that way.

>>> A = F2Linear.from_bases({"register": [[1], [2]]}, {"dim0": 4})
>>> B = F2Linear.from_bases({"offset": [[1], [2], [3]]}, {"dim0": 4})     # 3 bits onto 2: not injective
>>> A.invert_and_compose(B).bases      # free column (offset bit 2) stays 0
(((1,), (2,)),)
>>> W = F2Linear.from_bases({"lane": [[1]], "warp": [[0]]}, {"dim0": 2})
>>> W.invert_and_compose(W).bases      # lane and warp are shared and equal: both map to themselves
(((1, 0),), ((0, 1),))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ..errors import NotBijectiveError, ShapeError
from .bits import XorBasis, bit_width, log2_exact, unpack_bits

Dims = tuple[tuple[str, int], ...]
Image = tuple[int, ...]
Bases = tuple[tuple[Image, ...], ...]

REGISTER = "register"
LANE = "lane"
WARP = "warp"
BLOCK = "block"
HARDWARE_DIMS = (REGISTER, LANE, WARP, BLOCK)
"""Triton's distributed-layout input dims, minor to major."""


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
            if not isinstance(dims, (tuple, list)) or not all(
                    isinstance(d, (tuple, list)) and len(d) == 2 and isinstance(d[0], str)
                    and isinstance(d[1], (int, np.integer)) and not isinstance(d[1], bool) for d in dims):
                raise ShapeError(f"F2Linear {side}_dims: expected ((name, size), ...) with string names and integer "
                                 f"sizes; found {dims!r:.80}")
            object.__setattr__(self, f"{side}_dims", tuple((str(n), int(e)) for n, e in dims))
        object.__setattr__(self, "bases", bases_from_mapping(self.bases) if not isinstance(self.bases, F2Linear)
                           else self.bases.bases)
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
        # per out dim, the least and the largest value over every image (builtins: every map the proofs
        # read is checked here); only a failure looks for the image to name
        images = [image for per in self.bases for image in per]
        lengths_ok = all(len(image) == len(sizes) for image in images)
        if not lengths_ok or any(col and (min(col) < 0 or max(col) >= s) for col, s in zip(zip(*images), sizes)):
            for (name, _), per in zip(self.in_dims, self.bases):
                for b, image in enumerate(per):
                    if len(image) != len(sizes) or any(not 0 <= v < s for v, s in zip(image, sizes)):
                        raise ShapeError(f"basis {b} of in dim {name!r} is {image}; expected {len(sizes)} values "
                                         f"below {tuple(sizes)}")

    def __str__(self) -> str:
        """Triton's ``LinearLayout::toString``: a leading newline, one `` - `` bullet per in dim listing
        the image of each of its bits (`` - in=1 -> (...)`` then ``   in=2 -> ...``; a size-1 dim says
        so), then the out dims with their sizes.

        >>> print(F2Linear.from_bases({"register": [[0, 1], [1, 0]], "lane": []}, {"dim0": 2, "dim1": 2}))
        <BLANKLINE>
         - register=1 -> (0, 1)
           register=2 -> (1, 0)
         - lane is a size 1 dimension
        where out dims are: [dim0 (size 2), dim1 (size 2)]
        """
        outs = "[" + ", ".join(f"{name} (size {size})" for name, size in self.out_dims) + "]"
        if not self.in_dims:
            return "\n(empty layout)" if not self.out_dims else f"\n(empty layout with out-dims {outs})"
        text = "\n"
        for (name, _), per in zip(self.in_dims, self.bases):
            if not per:
                text += f" - {name} is a size 1 dimension\n"
                continue
            text += " - " + "\n   ".join(f"{name}={1 << b} -> ({', '.join(map(str, image))})"
                                         for b, image in enumerate(per)) + "\n"
        return text + f"where out dims are: {outs}"

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
        names only infer the sizes and require a surjective map, explicit
        sizes allow any).

        >>> F2Linear.from_bases({"register": [[1], [2]], "lane": [[4]]}, ["dim0"]).out_dims
        (('dim0', 8),)
        """
        return _from_bases(cls, bases, out_dims, require_surjective)

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
    def from_rows(
        cls, in_dims: Dims, rows: Sequence[Sequence[int]], out_names: Sequence[str] | None = None,
        out_bits: Sequence[int] | None = None,
    ) -> F2Linear:
        """The map given by the rows of its matrix: bit ``p`` of output ``k`` is the parity of the input bits
        in the mask ``rows[k][p]`` (input bits flattened dim by dim, low bits first).  Out dim ``k`` has
        ``2**max(len(rows[k]), out_bits[k])`` values (``out_bits``: 0 each when None); names default to
        ``dim0, dim1, ...``.  Valid by construction, so the per-image checks of the constructor are not run
        (the structural F2 reader builds one of these for every layout it proves).

        >>> F2Linear.from_rows((("x", 4),), [[0b01, 0b11]]).bases       # out = (x0 ^ 0) | (x0 ^ x1) << 1
        (((3,), (2,)),)
        """
        if any(log2_exact(s) is None for _, s in in_dims):
            raise ShapeError(f"from_rows: in dim sizes must be powers of two; found {in_dims}")
        n_bits = sum(s.bit_length() - 1 for _, s in in_dims)
        if max((r for per in rows for r in per), default=0) >> n_bits:
            raise ShapeError(f"from_rows: rows {rows} read bits past the {n_bits} input bits of {in_dims}")
        names = [f"dim{k}" for k in range(len(rows))] if out_names is None else list(out_names)
        widths = [max(len(per), w) for per, w in zip(rows, [0] * len(rows) if out_bits is None else out_bits)]
        columns = [0] * n_bits  # the packed columns (the proofs read them first) and each output's images
        per_out = [[0] * n_bits for _ in rows]
        shift = 0
        for k, per in enumerate(rows):
            images = per_out[k]
            for p, row in enumerate(per):
                while row:
                    low = row & -row
                    g = low.bit_length() - 1
                    images[g] |= 1 << p
                    columns[g] |= 1 << (shift + p)
                    row ^= low
            shift += widths[k]
        flat = list(zip(*per_out)) if rows else [() for _ in range(n_bits)]  # the image of every input bit
        bases, start = [], 0
        for _, s in in_dims:
            n = s.bit_length() - 1
            bases.append(tuple(flat[start:start + n]))
            start += n
        out_dims = tuple((n, 1 << w) for n, w in zip(names, widths))
        if len(set(names)) != len(names) or len({n for n, _ in in_dims}) != len(in_dims):
            raise ShapeError(f"from_rows: dim names must be unique; found {[n for n, _ in in_dims]} and {names}")
        out = object.__new__(cls)
        for field, value in (("in_dims", tuple(in_dims)), ("out_dims", out_dims), ("bases", tuple(bases))):
            object.__setattr__(out, field, value)  # frozen: set once here, as the dataclass init would
        out.__dict__["_columns"] = tuple(columns)  # the cached property, filled by the same pass
        return out

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
        return _from_table(cls, table, in_names, out_names)

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

    @cached_property
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

    def pack(self, image: Sequence[int]) -> int:
        """One image as an int over the concatenated out bits (out dim ``k`` at bit ``sum(out_bits[:k])``).

        >>> F2Linear.identity_of((("a", 4), ("b", 2))).pack([3, 1])
        7
        """
        out, shift = 0, 0
        for v, nb in zip(image, self.out_bits):
            out |= int(v) << shift
            shift += nb
        return out

    def unpack_in(self, combo: int) -> Image:
        """An int over the concatenated in bits as one value per in dim (the inverse of packing inputs).

        >>> F2Linear.identity_of((("a", 4), ("b", 2))).unpack_in(7)
        (3, 1)
        """
        return unpack_bits(combo, self.in_bits)

    def columns(self) -> tuple[int, ...]:
        """Every basis image packed into one int over the concatenated out bits (the matrix columns).

        >>> F2Linear.from_images([3, 5]).columns()
        (3, 5)
        """
        return self._columns

    @cached_property
    def _columns(self) -> tuple[int, ...]:
        # the rank, kernel, span and round-trip tests all read the packed columns: built once per map
        starts, acc = [], 0
        for nb in self.out_bits:
            starts.append(acc)
            acc += nb
        return tuple(sum(v << sh for v, sh in zip(image, starts)) for per in self.bases for image in per)

    @cached_property
    def _span(self) -> XorBasis:
        # an echelon basis of the columns, built once per map (never inserted into after)
        return XorBasis(self._columns, combos=False)

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
        return self._span.rank

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
                if not basis.insert(self.pack(image)):
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

    def kernel(self) -> Image | None:
        """A nonzero input (one value per in dim) that the map sends to 0, or None when it is injective:
        the first input bit, in flattened order, whose image is the xor of earlier ones, with those ones.
        Law: ``f.apply(f.kernel()) == (0, ...)``; ``f.kernel() is None`` iff ``f.is_injective()``.

        >>> F2Linear.from_images([1, 2, 3]).kernel(), F2Linear.from_images([1, 2]).kernel() is None
        ((7,), True)
        """
        if self._span.rank == len(self._columns):
            return None
        return self.kernel_basis()[0]

    def kernel_basis(self) -> list[Image]:
        """A basis of the inputs the map sends to 0: one vector per free variable (an input bit whose image
        is the xor of earlier ones, in flattened order), that bit with those ones.

        >>> F2Linear.from_images([1, 2, 3, 0]).kernel_basis()
        [(7,), (8,)]
        """
        basis = XorBasis()
        out = []
        for k, col in enumerate(self._columns):
            if not basis.insert(col):
                out.append(self.unpack_in(int(basis.solve(col) or 0) | 1 << k))
        return out

    def max_values(self, offset: Sequence[int] | None = None) -> Image:
        """The exact maximum of every output of ``x -> offset ^ self(x)`` over all inputs (``offset``: one
        value per out dim, 0 when None): greedy over an echelon basis of that output's images, highest
        leading bit first.  Law: ``max_values()[k] == max(apply(x)[k] for every x)``.

        >>> F2Linear.from_images([1, 6]).max_values(), F2Linear.from_images([1, 6]).max_values([2])
        ((7,), (5,))
        >>> F2Linear.from_images([3, 6]).max_values()
        (6,)
        """
        starts = (0,) * len(self.out_dims) if offset is None else tuple(int(v) for v in offset)
        out = []
        for k, start in enumerate(starts):
            values = {image[k] for per in self.bases for image in per}  # distinct values: most repeat or are 0
            values.discard(0)
            out.append(XorBasis(values, combos=False).maximize(start))
        return tuple(out)

    def contains(self, point: Sequence[int], offset: Sequence[int] | None = None) -> bool:
        """Whether some input maps to ``point`` under ``x -> offset ^ self(x)`` (membership of
        ``point ^ offset`` in the span of the columns; a value past an out dim's size is never reached).

        >>> F2Linear.from_images([3, 6]).contains([5]), F2Linear.from_images([3, 6]).contains([4])
        (True, False)
        """
        starts = (0,) * len(self.out_dims) if offset is None else offset
        diff = [int(y) ^ int(c) for y, c in zip(point, starts)]
        if any(v >> nb for v, nb in zip(diff, self.out_bits)):
            return False
        return self._span.reduce(self.pack(diff))[0] == 0

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
        (free variables 0); see the module doc.

        >>> f, g = F2Linear.from_images([1, 2]), F2Linear.from_images([2, 1], "g")
        >>> c = f.invert_and_compose(g)
        >>> c.bases, c.compose(g) == f
        ((((2,), (1,)),), True)
        >>> F2Linear.from_images([1, 2]).invert_and_compose(F2Linear.from_images([1, 2, 3], "s")).bases
        (((1,), (2,)),)
        """
        return _invert_and_compose(self, outer)

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
        return _invert(self)

    # ---- products and their quotients ---------------------------------------------------------------
    def __mul__(self, outer: F2Linear) -> F2Linear:
        """Triton's product ``self * outer``: shared dims grow, ``self`` in the low bits and ``outer``
        above it; dims of only one side pass through.

        >>> (F2Linear.identity(2, "x", "y") * F2Linear.identity(4, "x", "y")).bases
        (((1,), (2,), (4,)),)
        """
        return _product(self, outer)

    def divide_left(self, inner: F2Linear) -> F2Linear | None:
        """Triton's ``divideLeft``: ``C`` with ``inner * C == self``, or None when there is none.

        Law: ``inner * self.divide_left(inner) == self`` (as maps); ``C`` has ``self``'s dims.  A
        quotient exists iff, on every dim ``inner`` has, ``self``'s matrix is ``[[inner, 0], [0, C]]``.

        >>> whole = F2Linear.identity(8, "x", "y")
        >>> whole.divide_left(F2Linear.identity(2, "x", "y")) == F2Linear.identity(4, "x", "y")
        True
        """
        return _divide_left(self, inner)

    def divide_right(self, outer: F2Linear) -> F2Linear | None:
        """Triton's ``divideRight``: ``C`` with ``C * outer == self``, or None when there is none.

        Law: ``self.divide_right(outer) * outer == self`` (as maps); ``C`` has ``self``'s dims.

        >>> F2Linear.identity(8, "x", "y").divide_right(F2Linear.identity(4, "x", "y")).bases
        (((1,),),)
        """
        return _divide_right(self, outer)

    # ---- restructuring --------------------------------------------------------------------------------
    def sublayout(self, ins: Sequence[str], outs: Sequence[str]) -> F2Linear:
        """Triton's ``sublayout``: only the named in dims and out dims (kept in this map's order).

        Law: the in dims not named are fixed at 0 and the out dims not named are dropped; out sizes are
        unchanged, so ``f.sublayout(f.in_names, f.out_names) == f`` and
        ``f.concat_ins(g).sublayout(f.in_names, f.out_names) == f``.

        >>> F2Linear.identity_of((("a", 2), ("b", 2))).sublayout(["b"], ["b"]).bases
        (((1,),),)
        """
        return _sublayout(self, ins, outs)

    def concat_ins(self, other: F2Linear) -> F2Linear:
        """Triton's ``concatIns``: both maps' in dims (disjoint names) on the same out dims; the image of
        ``(x, y)`` is ``self(x) ^ other(y)`` (the opposite of :meth:`sublayout`).

        >>> lanes = F2Linear.from_bases({"lane": [[1], [2]]}, {"dim0": 8})
        >>> warps = F2Linear.from_bases({"warp": [[4]]}, {"dim0": 8})
        >>> lanes.concat_ins(warps).apply([3, 1])
        (7,)
        """
        return _concat_ins(self, other)

    def concat_outs(self, other: F2Linear) -> F2Linear:
        """Triton's ``concatOuts``: same in dims, both maps' out dims (disjoint names) side by side: the
        image of ``x`` is ``(self(x), other(x))``.

        >>> rows = F2Linear.from_bases({"lane": [[1], [0]]}, {"dim0": 2})
        >>> cols = F2Linear.from_bases({"lane": [[0], [1]]}, {"dim1": 2})
        >>> rows.concat_outs(cols).apply([2])
        (0, 1)
        """
        return _concat_outs(self, other)

    def transpose_ins(self, order: Sequence[str]) -> F2Linear:
        """Triton's ``transposeIns``: the same map with its in dims listed in ``order`` (a permutation of
        :attr:`in_names`); ``apply`` takes the values in the new order.  Only the listing (and so
        flattened views such as :meth:`matrix`) changes.

        >>> f = F2Linear.from_bases({"lane": [[1]], "warp": [[2]]}, ["dim0"])
        >>> f.transpose_ins(["warp", "lane"]).apply([1, 0])
        (2,)
        """
        return _transpose(self, order, None)

    def transpose_outs(self, order: Sequence[str]) -> F2Linear:
        """Triton's ``transposeOuts``: the same map with its out dims listed in ``order``; images list
        their values in the new order.

        >>> f = F2Linear.from_bases({"lane": [[1, 0], [0, 1]]}, ["dim0", "dim1"])
        >>> f.transpose_outs(["dim1", "dim0"]).apply([1])
        (0, 1)
        """
        return _transpose(self, None, order)

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
    """Basis images from an :class:`F2Linear`, a ``{in_dim: [[out...], ...]}`` dict or per-dim lists; anything
    else (``None``, a basis that is no list of non-negative integers) raises
    :class:`~layoutkit.errors.ShapeError` naming what was found.

    >>> bases_from_mapping({"dim0": [[1], [2]]})
    (((1,), (2,)),)
    >>> bases_from_mapping(None)
    Traceback (most recent call last):
    ...
    layoutkit.errors.ShapeError: F2 bases: expected an F2Linear, a {in_dim: [[out, ...], ...]} mapping or \
per-dim lists of basis images; found NoneType None
    """
    if isinstance(view, F2Linear):
        raw: Sequence[Sequence[Sequence[int]]] = view.bases
    elif isinstance(view, Mapping):
        raw = tuple(view.values())
    elif isinstance(view, (list, tuple)):
        raw = tuple(view)
    else:
        raise ShapeError("F2 bases: expected an F2Linear, a {in_dim: [[out, ...], ...]} mapping or per-dim lists "
                         f"of basis images; found {type(view).__name__} {view!r:.60}")
    out = []
    for d, per in enumerate(raw):
        if not isinstance(per, (list, tuple)):
            raise ShapeError(f"F2 bases: input dim {d} needs a list of basis images; found {type(per).__name__} "
                             f"{per!r:.60}")
        for k, img in enumerate(per):
            if not isinstance(img, (list, tuple)) or any(
                    isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in img):
                raise ShapeError(f"F2 bases: basis {k} of input dim {d} must be a list of non-negative integers; "
                                 f"found {img!r:.60}")
        out.append(tuple(tuple(int(v) for v in img) for img in per))
    return tuple(out)




def dim_names(rank: int) -> tuple[str, ...]:
    """Triton's tensor dim names ``dim0 .. dim{rank-1}``.

    >>> dim_names(3)
    ('dim0', 'dim1', 'dim2')
    """
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ShapeError(f"dim_names: expected a non-negative int rank; found {rank!r}")
    return tuple(f"dim{k}" for k in range(rank))


def _next_pow2_above(v: int) -> int:
    """``llvm::NextPowerOf2``: the smallest power of two strictly greater than ``v`` (1 for 0)."""
    return 1 << int(v).bit_length()


def _from_bases(
    cls: type[F2Linear],
    bases: Mapping[str, Sequence[Sequence[int]]] | Sequence[tuple[str, Sequence[Sequence[int]]]],
    out_dims: Mapping[str, int] | Sequence[str] | Sequence[tuple[str, int]],
    require_surjective: bool | None = None,
) -> F2Linear:
    """Triton's ``LinearLayout(bases, outDims)``: ``bases[in_dim][b]`` is the image of bit ``b``.

    With out dim *names* only, each size is the power of two just above the largest basis value on it
    and the map must be surjective (Triton's rule); with ``{name: size}`` (or pairs) the sizes are taken
    as given and surjectivity is required only if ``require_surjective`` is True.
    """
    items = list(bases.items()) if isinstance(bases, Mapping) else [(n, b) for n, b in bases]
    raw = [(str(n), [[int(v) for v in im] for im in per]) for n, per in items]
    if isinstance(out_dims, Mapping):
        outs = [(str(n), int(s)) for n, s in out_dims.items()]
        inferred = False
    elif all(isinstance(o, str) for o in out_dims):
        names = [str(o) for o in out_dims]
        sizes = [1] * len(names)
        for _, per in raw:
            for im in per:
                if len(im) != len(names):
                    raise ShapeError(f"from_bases: basis {im} has {len(im)} values for out dims {names}")
                sizes = [max(s, _next_pow2_above(v)) for s, v in zip(sizes, im)]
        outs, inferred = list(zip(names, sizes)), True
    else:
        outs = [(str(pair[0]), int(pair[1])) for pair in cast("Sequence[tuple[str, int]]", out_dims)]
        inferred = False
    f = cls(tuple((n, 1 << len(per)) for n, per in raw), tuple(outs),
            tuple(tuple(tuple(im) for im in per) for _, per in raw))
    if (inferred if require_surjective is None else require_surjective) and not f.is_surjective():
        raise ShapeError(f"from_bases: the map is not surjective onto {f.out_dims} (rank {f.rank()} < "
                         f"{sum(f.out_bits)} out bits); give the out dim sizes to allow that")
    return f


def _from_table(
    cls: type[F2Linear], table: NDArray[np.integer[Any]], in_names: Sequence[str] | None = None,
    out_names: Sequence[str] | None = None,
) -> F2Linear | None:
    """``cls`` (an :class:`~layoutkit.algebra.linear.F2Linear` type) with the full table ``table``
    (shape ``in_shape + (m,)``, row-major), or None when an extent is not a power of two or the table is
    not F2-linear; see :meth:`F2Linear.from_table <layoutkit.algebra.linear.F2Linear.from_table>`."""
    try:
        arr = np.asarray(table)
    except (TypeError, ValueError) as err:  # ragged nesting
        raise ShapeError(f"F2Linear.from_table: expected an integer array of shape in_shape + (m,); found "
                         f"{type(table).__name__} ({err})") from None
    if arr.ndim < 1 or arr.dtype.kind not in "iu" or arr.size == 0:
        raise ShapeError(f"F2Linear.from_table: expected a non-empty integer array of shape in_shape + (m,); found "
                         f"{type(table).__name__} of dtype {arr.dtype} and shape {arr.shape}")
    for what, names, count in (("in_names", in_names, arr.ndim - 1), ("out_names", out_names, arr.shape[-1])):
        if names is not None and (isinstance(names, (str, bytes)) or not isinstance(names, Sequence)
                                  or len(names) != count or not all(isinstance(n, str) for n in names)):
            raise ShapeError(f"F2Linear.from_table: {what} must be {count} strings; found {names!r:.80}")
    shape, m = arr.shape[:-1], arr.shape[-1]
    bits = [log2_exact(int(e)) for e in shape]
    if any(b is None for b in bits):
        return None
    flat = arr.reshape(-1, m)
    if np.any(flat[0] != 0):
        return None
    widths = [int(b) for b in bits if b is not None]
    images = [flat[1 << k] for k in range(sum(widths))]  # bit k of the row-major flat index
    pred = np.zeros((1, m), dtype=flat.dtype)
    for image in images:
        pred = np.concatenate([pred, pred ^ image])
    if not np.array_equal(pred, flat):
        return None
    if flat.size and int(flat.min()) < 0:
        raise ShapeError(f"F2 images must be non-negative; found {int(flat.min())}")
    bases: list[tuple[Image, ...]] = []
    low = sum(widths)
    for b in widths:  # the first dim holds the highest flat bits
        low -= b
        bases.append(tuple(tuple(int(v) for v in img) for img in images[low:low + b]))
    ins = [f"in{d}" for d in range(len(shape))] if in_names is None else list(in_names)
    outs = [f"out{k}" for k in range(m)] if out_names is None else list(out_names)
    tops = flat.max(axis=0) if flat.size else np.zeros(m, dtype=np.int64)
    return cls(tuple(zip(ins, (int(e) for e in shape))),
               tuple(zip(outs, (1 << bit_width(int(t) + 1) for t in tops))), tuple(bases))


_Named = tuple[dict[str, int], dict[str, int], dict[str, list[dict[str, int]]]]


def _named(f: F2Linear) -> _Named:
    """The map keyed by dim names, so that dim order does not matter."""
    outs = f.out_names
    return (dict(f.in_dims), dict(f.out_dims),
            {n: [dict(zip(outs, im)) for im in per] for n, per in zip(f.in_names, f.bases)})


def same_map(a: F2Linear, b: F2Linear) -> bool:
    """Equal up to the order in which dims are listed."""
    return _named(a) == _named(b)


def supremum(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """The shortest list holding both name lists as subsequences, ``a``'s names first where either could
    come next (Triton's dim order for ``*``); dims the two share must be in the same relative order.

    >>> supremum(["a", "b"], ["a", "c"]), supremum(["a", "b"], ["b", "c"])
    (['a', 'b', 'c'], ['a', 'b', 'c'])
    >>> supremum(["register", "warp"], ["register", "lane", "warp"])
    ['register', 'lane', 'warp']
    """
    out: list[str] = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            out.append(a[i])
            i, j = i + 1, j + 1
        elif a[i] not in b[j:]:
            out.append(a[i])
            i += 1
        elif b[j] not in a[i:]:
            out.append(b[j])
            j += 1
        else:
            raise ShapeError(f"product: the dims {list(a)} and {list(b)} share {a[i]!r} and {b[j]!r} in opposite "
                             "orders (no dim order holds both)")
    return out + list(a[i:]) + list(b[j:])


def _product(inner: F2Linear, outer: F2Linear) -> F2Linear:
    """``inner * outer`` (see :meth:`F2Linear.__mul__`)."""
    in_names = supremum(inner.in_names, outer.in_names)
    out_names = supremum(inner.out_names, outer.out_names)
    inner_out, outer_out = dict(inner.out_dims), dict(outer.out_dims)
    shift = {n: bit_width(inner_out.get(n, 1)) for n in out_names}

    def embed(f: F2Linear, image: tuple[int, ...], shifted: bool) -> tuple[int, ...]:
        values = dict(zip(f.out_names, image))
        return tuple(values.get(n, 0) << (shift[n] if shifted else 0) for n in out_names)

    inner_b, outer_b = dict(zip(inner.in_names, inner.bases)), dict(zip(outer.in_names, outer.bases))
    bases = tuple(
        tuple(embed(inner, im, False) for im in inner_b.get(n, ())) + tuple(embed(outer, im, True)
                                                                          for im in outer_b.get(n, ()))
        for n in in_names
    )
    out_sizes = tuple(inner_out.get(n, 1) * outer_out.get(n, 1) for n in out_names)
    return type(inner)(tuple((n, 1 << len(b)) for n, b in zip(in_names, bases)), tuple(zip(out_names, out_sizes)),
                       bases)


def _quotient_sizes(whole: F2Linear, part: F2Linear) -> tuple[tuple[str, int], ...] | None:
    if not set(part.in_names) <= set(whole.in_names) or not set(part.out_names) <= set(whole.out_names):
        return None
    part_out = dict(part.out_dims)
    sizes = []
    for n, s in whole.out_dims:
        k = part_out.get(n, 1)
        if s % k:
            return None
        sizes.append((n, s // k))
    return tuple(sizes)


def _divide_left(whole: F2Linear, inner: F2Linear) -> F2Linear | None:
    """``C`` with ``inner * C == whole`` (dims in ``whole``'s order), or None."""
    sizes = _quotient_sizes(whole, inner)
    if sizes is None:
        return None
    inner_out, inner_bits = dict(inner.out_dims), dict(zip(inner.in_names, inner.in_bits))
    shift = [bit_width(inner_out.get(n, 1)) for n in whole.out_names]
    bases = []
    for n, per in zip(whole.in_names, whole.bases):
        rest = per[inner_bits.get(n, 0):]
        if inner_bits.get(n, 0) > len(per) or any(v & ((1 << sh) - 1) for im in rest for v, sh in zip(im, shift)):
            return None
        bases.append(tuple(tuple(v >> sh for v, sh in zip(im, shift)) for im in rest))
    c = type(whole)(tuple((n, 1 << len(b)) for n, b in zip(whole.in_names, bases)), sizes, tuple(bases))
    return c if same_map(_product(inner, c), whole) else None


def _divide_right(whole: F2Linear, outer: F2Linear) -> F2Linear | None:
    """``C`` with ``C * outer == whole`` (dims in ``whole``'s order), or None."""
    sizes = _quotient_sizes(whole, outer)
    if sizes is None:
        return None
    outer_bits = dict(zip(outer.in_names, outer.in_bits))
    bases = []
    for n, per in zip(whole.in_names, whole.bases):
        keep = len(per) - outer_bits.get(n, 0)
        if keep < 0 or any(v >= s for im in per[:keep] for v, (_, s) in zip(im, sizes)):
            return None
        bases.append(per[:keep])
    c = type(whole)(tuple((n, 1 << len(b)) for n, b in zip(whole.in_names, bases)), sizes, tuple(bases))
    return c if same_map(_product(c, outer), whole) else None


def _check_names(have: Sequence[str], want: Sequence[str], side: str, what: str) -> None:
    unknown = [n for n in want if n not in have]
    if unknown:
        raise ShapeError(f"{what}: no {side} dim named {unknown[0]!r}; the map has {list(have)}")


def _sublayout(f: F2Linear, ins: Sequence[str], outs: Sequence[str]) -> F2Linear:
    """The named in and out dims only (see :meth:`F2Linear.sublayout`)."""
    _check_names(f.in_names, ins, "in", "sublayout")
    _check_names(f.out_names, outs, "out", "sublayout")
    keep_in = [d for d, n in enumerate(f.in_names) if n in ins]
    keep_out = [k for k, n in enumerate(f.out_names) if n in outs]
    bases = tuple(tuple(tuple(im[k] for k in keep_out) for im in f.bases[d]) for d in keep_in)
    return type(f)(tuple(f.in_dims[d] for d in keep_in), tuple(f.out_dims[k] for k in keep_out), bases)


def _concat_ins(a: F2Linear, b: F2Linear) -> F2Linear:
    """``(x, y) -> a(x) ^ b(y)`` (see :meth:`F2Linear.concat_ins`)."""
    if a.out_dims != b.out_dims:
        raise ShapeError(f"concat_ins: expected the same out dims; found {a.out_dims} and {b.out_dims}")
    clash = set(a.in_names) & set(b.in_names)
    if clash:
        raise ShapeError(f"concat_ins: in dim names must be disjoint; both have {sorted(clash)}")
    return type(a)(a.in_dims + b.in_dims, a.out_dims, a.bases + b.bases)


def _concat_outs(a: F2Linear, b: F2Linear) -> F2Linear:
    """``x -> (a(x), b(x))`` (see :meth:`F2Linear.concat_outs`)."""
    if a.in_dims != b.in_dims:
        raise ShapeError(f"concat_outs: expected the same in dims; found {a.in_dims} and {b.in_dims}")
    clash = set(a.out_names) & set(b.out_names)
    if clash:
        raise ShapeError(f"concat_outs: out dim names must be disjoint; both have {sorted(clash)}")
    bases = tuple(tuple(x + y for x, y in zip(pa, pb)) for pa, pb in zip(a.bases, b.bases))
    return type(a)(a.in_dims, a.out_dims + b.out_dims, bases)


def _permutation(have: Sequence[str], order: Sequence[str], what: str) -> list[int]:
    if sorted(order) != sorted(have) or len(set(order)) != len(order):
        raise ShapeError(f"{what}: expected a permutation of {list(have)}; found {list(order)}")
    return [list(have).index(n) for n in order]


def _transpose(f: F2Linear, ins: Sequence[str] | None, outs: Sequence[str] | None) -> F2Linear:
    """Relist the in dims in order ``ins`` and/or the out dims in order ``outs``."""
    pi = list(range(len(f.in_dims))) if ins is None else _permutation(f.in_names, ins, "transpose_ins")
    po = list(range(len(f.out_dims))) if outs is None else _permutation(f.out_names, outs, "transpose_outs")
    bases = tuple(tuple(tuple(im[k] for k in po) for im in f.bases[d]) for d in pi)
    return type(f)(tuple(f.in_dims[d] for d in pi), tuple(f.out_dims[k] for k in po), bases)


def identity_dims(this: F2Linear, outer: F2Linear, outs: tuple[str, ...]) -> set[str]:
    """Outer's in dims that ``this`` has under the same name with the same sub-map onto ``outs``, and
    whose image bits no other in dim of ``outer`` sets (so mapping them to themselves moves nothing)."""
    def bits(name: str) -> int:
        per = outer.bases[outer.in_names.index(name)]
        out = 0
        for image in per:
            out |= outer.pack(image)
        return out

    shared = [n for n in outer.in_names if n in this.in_names]
    same = {n for n in shared if _sublayout(this, [n], outs) == _sublayout(outer, [n], outs)}
    return {n for n in same if not any(bits(n) & bits(m) for m in outer.in_names if m != n)}


def _invert_and_compose(this: F2Linear, outer: F2Linear) -> F2Linear:
    """``C`` with ``outer(C(x)) == this(x)`` (see the module docstring for the choice of ``C``)."""
    if sorted(this.out_names) != sorted(outer.out_names):
        raise ShapeError(
            f"invert_and_compose: expected the same out dims (in any order); found {this.out_dims} and "
            f"{outer.out_dims}"
        )
    A = _transpose(outer, None, this.out_names)
    small = [(n, s) for (n, s), (_, t) in zip(this.out_dims, A.out_dims) if s > t]
    if small:
        raise ShapeError(f"invert_and_compose: out dims {small} of the map are larger than the outer map's "
                         f"{A.out_dims}")
    same = identity_dims(this, A, this.out_names)
    try:
        return _solve(this, A, same)
    except NotBijectiveError:
        if not same:
            raise
    # the other dims need the shared ones' columns too (Triton asserts here): solve against all of them
    return _solve(this, A, set())


def _solve(this: F2Linear, A: F2Linear, same: set[str]) -> F2Linear:
    """The solution with the dims in ``same`` mapped to themselves and the rest minimum-norm."""
    columns: list[tuple[int, int]] = []  # (outer in dim, bit) of each column solved against
    basis = XorBasis()
    for d, (name, per) in enumerate(zip(A.in_names, A.bases)):
        if name in same:
            continue
        for b, image in enumerate(per):
            columns.append((d, b))
            basis.insert(A.pack(image))
    bases = []
    for name, per in zip(this.in_names, this.bases):
        if name in same:
            k = A.in_names.index(name)
            n_in = len(A.in_dims)
            bases.append(tuple(tuple((1 << b) if d == k else 0 for d in range(n_in)) for b in range(len(per))))
            continue
        row = []
        for b, image in enumerate(per):
            combo = basis.solve(A.pack(image))
            if combo is None:
                raise NotBijectiveError(
                    f"invert_and_compose: bit {b} of in dim {name!r} maps to {image}, which the outer map never "
                    "reaches", {"unreachable": image},
                )
            out = [0] * len(A.in_dims)
            for j in range(len(columns)):
                if combo >> j & 1:
                    d, bit = columns[j]
                    out[d] |= 1 << bit
            row.append(tuple(out))
        bases.append(tuple(row))
    return type(this)(this.in_dims, A.in_dims, tuple(bases))


def _invert(this: F2Linear) -> F2Linear:
    """The inverse of an invertible map (:meth:`F2Linear.invert <layoutkit.algebra.linear.F2Linear.invert>`):
    :class:`~layoutkit.NotBijectiveError` with two colliding inputs or an unreachable output otherwise."""
    kernel = this.kernel()
    if kernel is not None:
        # the first dependent input bit and the earlier bits whose images xor to its image
        d = max(k for k, v in enumerate(kernel) if v)
        x = [0] * len(this.in_dims)
        x[d] = 1 << (kernel[d].bit_length() - 1)
        other = tuple(v ^ u for v, u in zip(kernel, x))
        raise NotBijectiveError(
            f"F2 map is not injective: {other} and {tuple(x)} collide",
            {"collision": (other, tuple(x), this.apply(x))},
        )
    if not this.is_surjective():
        raise NotBijectiveError(
            f"F2 map is not surjective: rank {this.rank()} < {sum(this.out_bits)} out bits",
            {"unreachable": unreached_output(this)},
        )
    return this.pseudo_inverse()


def unreached_output(this: F2Linear) -> tuple[int, ...]:
    """An output the map does not reach: the first unit vector outside its span."""
    basis = XorBasis()
    for c in this.columns():
        basis.insert(c)
    for k in range(sum(this.out_bits)):
        if basis.solve(1 << k) is None:
            return unpack_bits(1 << k, this.out_bits)
    return tuple(0 for _ in this.out_dims)


__all__ = [
    "F2Linear", "REGISTER", "LANE", "WARP", "BLOCK", "HARDWARE_DIMS", "dim_names", "supremum", "same_map",
    "identity_dims", "inverse_bases", "bases_from_mapping",
]
