"""Triton's ``invertAndCompose`` on :class:`~layoutkit.algebra.linear.F2Linear` maps: the least-squares
(minimum-norm) solution ``C`` of ``outer(C(x)) == self(x)``, with Triton's broadcasting heuristic; and
``invert`` with the witnesses of a map that has no inverse (two colliding inputs, an unreached output).

Law: for every input ``x`` of ``self``, ``outer.apply(C.apply(x)) == self.apply(x)``.

How ``C`` is chosen where ``outer`` is not injective (Triton 3.9's rule, reproduced exactly):

* an in dim that both maps have under the same name, with the same bases (the same sub-map onto the
  out dims), and whose image bits no other in dim of ``outer`` sets, maps to itself (``C`` is the
  identity there: nothing has to move across it);
* every other bit of ``self`` is solved against the columns of ``outer``'s other in dims, flattened in
  order, low bits first: the solution uses only *pivot* columns (those not in the span of the columns
  before them) and leaves every free column at 0 -- the minimum-norm solution of the reduced row
  echelon form.  So a broadcast (zero) basis of ``self`` maps to 0;
* where the other dims need the shared dims' columns (Triton asserts there), every dim is solved
  that way.

>>> from layoutkit.algebra.linear import F2Linear
>>> A = F2Linear.from_bases({"register": [[1], [2]]}, {"dim0": 4})
>>> B = F2Linear.from_bases({"offset": [[1], [2], [3]]}, {"dim0": 4})     # 3 bits onto 2: not injective
>>> A.invert_and_compose(B).bases      # free column (offset bit 2) stays 0
(((1,), (2,)),)
>>> W = F2Linear.from_bases({"lane": [[1]], "warp": [[0]]}, {"dim0": 2})
>>> W.invert_and_compose(W).bases      # lane and warp are shared and equal: both map to themselves
(((1, 0),), ((0, 1),))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import NotBijectiveError, ShapeError
from .bits import XorBasis, unpack_bits

if TYPE_CHECKING:
    from .linear import F2Linear


def identity_dims(this: F2Linear, outer: F2Linear, outs: tuple[str, ...]) -> set[str]:
    """Outer's in dims that ``this`` has under the same name with the same sub-map onto ``outs``, and
    whose image bits no other in dim of ``outer`` sets (so mapping them to themselves moves nothing)."""
    from .linear_ops import sublayout

    def bits(name: str) -> int:
        per = outer.bases[outer.in_names.index(name)]
        out = 0
        for image in per:
            out |= outer._pack(image)
        return out

    shared = [n for n in outer.in_names if n in this.in_names]
    same = {n for n in shared if sublayout(this, [n], outs) == sublayout(outer, [n], outs)}
    return {n for n in same if not any(bits(n) & bits(m) for m in outer.in_names if m != n)}


def invert_and_compose(this: F2Linear, outer: F2Linear) -> F2Linear:
    """``C`` with ``outer(C(x)) == this(x)`` (see the module docstring for the choice of ``C``)."""
    from .linear_ops import transpose

    if sorted(this.out_names) != sorted(outer.out_names):
        raise ShapeError(
            f"invert_and_compose: expected the same out dims (in any order); found {this.out_dims} and "
            f"{outer.out_dims}"
        )
    A = transpose(outer, None, this.out_names)
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
            basis.insert(A._pack(image))
    bases = []
    for name, per in zip(this.in_names, this.bases):
        if name in same:
            k = A.in_names.index(name)
            n_in = len(A.in_dims)
            bases.append(tuple(tuple((1 << b) if d == k else 0 for d in range(n_in)) for b in range(len(per))))
            continue
        row = []
        for b, image in enumerate(per):
            combo = basis.solve(A._pack(image))
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


def invert(this: F2Linear) -> F2Linear:
    """The inverse of an invertible map (:meth:`F2Linear.invert <layoutkit.algebra.linear.F2Linear.invert>`):
    :class:`~layoutkit.NotBijectiveError` with two colliding inputs or an unreachable output otherwise."""
    masks = this.free_variable_masks()
    free = next(((d, m) for d, (_, m) in enumerate(masks.items()) if m), None)
    if free is not None:
        d, mask = free
        b = (mask & -mask).bit_length() - 1
        x = [0] * len(this.in_dims)
        x[d] = 1 << b
        kernel = kernel_vector(this, d, b)
        raise NotBijectiveError(
            f"F2 map is not injective: {tuple(kernel)} and {tuple(x)} collide",
            {"collision": (tuple(kernel), tuple(x), this.apply(x))},
        )
    if not this.is_surjective():
        raise NotBijectiveError(
            f"F2 map is not surjective: rank {this.rank()} < {sum(this.out_bits)} out bits",
            {"unreachable": unreached_output(this)},
        )
    return this.pseudo_inverse()


def kernel_vector(this: F2Linear, d: int, b: int) -> list[int]:
    """Earlier input bits whose images xor to the image of bit ``b`` of dim ``d`` (a colliding input)."""
    basis = XorBasis()
    for image in [im for per in this.bases[:d] for im in per] + list(this.bases[d][:b]):
        basis.insert(this._pack(image))
    return list(this._unpack_in(int(basis.solve(this._pack(this.bases[d][b])) or 0)))


def unreached_output(this: F2Linear) -> tuple[int, ...]:
    """An output the map does not reach: the first unit vector outside its span."""
    basis = XorBasis()
    for c in this.columns():
        basis.insert(c)
    for k in range(sum(this.out_bits)):
        if basis.solve(1 << k) is None:
            return unpack_bits(1 << k, this.out_bits)
    return tuple(0 for _ in this.out_dims)


__all__ = ["invert_and_compose", "identity_dims", "invert", "kernel_vector", "unreached_output"]
