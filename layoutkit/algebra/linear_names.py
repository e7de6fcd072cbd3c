"""Named dimensions of F2 (linear) layouts, and Triton's ways of building one from named bases.

Triton names the hardware input dims ``register``, ``lane``, ``warp`` and ``block`` and the tensor output
dims ``dim0``, ``dim1``, ... (dim 0 outermost, as Triton's tensors index them).  Every op on
:class:`~layoutkit.algebra.linear.F2Linear` matches dims by these names, so a layout over
``(register, lane, warp)`` composes with one over ``(dim0, dim1)`` exactly as in Triton.

>>> from layoutkit.algebra.linear import F2Linear
>>> f = F2Linear.from_bases({REGISTER: [[0, 1]], LANE: [[0, 2], [1, 0]]}, dim_names(2))   # sizes inferred
>>> f.in_dims, f.out_dims
((('register', 2), ('lane', 4)), (('dim0', 2), ('dim1', 4)))
>>> f.apply([1, 3])
(1, 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from ..errors import ShapeError

if TYPE_CHECKING:
    from .linear import F2Linear

REGISTER = "register"
LANE = "lane"
WARP = "warp"
BLOCK = "block"
HARDWARE_DIMS = (REGISTER, LANE, WARP, BLOCK)
"""Triton's distributed-layout input dims, minor to major."""


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


def from_bases(
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


__all__ = ["REGISTER", "LANE", "WARP", "BLOCK", "HARDWARE_DIMS", "dim_names", "from_bases"]
