"""Proofs that an index map is a bijection onto its output box.

Three methods, which must agree (the test-suite checks it on random layouts):

* ``enumerate``: evaluate the map on every coordinate (vectorised) and count images;
* ``isl``: translate the map into an integer relation (:mod:`layoutkit.algebra.isl`) and ask
  islpy whether it is injective and whether its range is the whole box.  This never enumerates;
  it is fast on quasi-affine maps, slow once bitwise operators add existential variables;
* ``f2``: a map affine over the input bits is a bit matrix; its rank decides (:mod:`.bitlinear`).

:func:`choose_method` picks one from the structure of the map (``prove_bijective("auto")``).

Both return a :class:`Proof` whose witness names two colliding coordinates or an unreachable
output when the verdict is negative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ProofError, UnsupportedError
from .nodes import Const, Expr, FloorDiv, FloorMod, Sum, Var, walk


@dataclass(frozen=True)
class Proof:
    """Outcome of a proof: ``verdict`` (bool), ``method`` (the one that decided: "enumerate", "isl"
    or "f2", whatever was asked for; ``detail`` says why when they differ), ``claim`` and a
    ``witness`` dict when the verdict is False (``collision``: ``(x, y, image)``; ``unreachable``:
    an output coordinate).  ``bool(proof)`` is the verdict."""

    claim: str
    verdict: bool
    method: str
    witness: dict[str, Any] | None = None
    detail: str = field(default="", compare=False)

    def __bool__(self) -> bool:
        return self.verdict

    def __str__(self) -> str:
        head = f"{self.claim}: {'proved' if self.verdict else 'refuted'} by {self.method}"
        if self.witness:
            head += f"; witness {describe_witness(self.witness)}"
        return head + (f" ({self.detail})" if self.detail else "")


def describe_witness(witness: dict[str, Any]) -> str:
    if "collision" in witness:
        x, y, image = witness["collision"]
        return f"{x} and {y} both map to {image}"
    if "unreachable" in witness:
        return f"output {witness['unreachable']} is not reached by any input"
    if "outside" in witness:
        return f"output {witness['outside']} lies outside the output box"
    if "size_mismatch" in witness:
        n_in, n_out = witness["size_mismatch"]
        return f"{n_in} inputs cannot cover {n_out} outputs"
    return str(witness)


def quasi_affine(exprs: Sequence[Expr]) -> bool:
    """Whether ``exprs`` use only ``+``, constant ``*``, ``//`` and ``%`` (islpy's fast class: no
    bitwise operator, whose bits become existential variables, and no product of two variables).

    >>> from layoutkit.algebra import Var
    >>> i, j = Var("_i", 6), Var("_j", 6)
    >>> quasi_affine([(i * 6 + j) % 4, i // 2]), quasi_affine([i ^ j]), quasi_affine([i * j])
    (True, False, False)
    """
    return all(isinstance(e, (Const, Var, Sum, FloorDiv, FloorMod)) for e in walk(list(exprs)))


def choose_method(exprs: Sequence[Expr], size: int, bit_linear: bool, enumeration_limit: int) -> str:
    """The method ``prove_bijective("auto")`` uses, by structure first: ``f2`` for a map affine over the
    input bits; ``isl`` for a quasi-affine map too large to enumerate cheaply; else ``enumerate`` (a
    bitwise map on non-power-of-two extents: islpy's bit encoding costs far more than evaluating it),
    which refuses past the table limit instead of guessing.

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 3 << 22)
    >>> choose_method([i], 3 << 22, False, 1 << 22), choose_method([i ^ 5], 3 << 22, False, 1 << 22)
    ('isl', 'enumerate')
    """
    if bit_linear:
        return "f2"
    if size > enumeration_limit and quasi_affine(exprs):
        return "isl"
    return "enumerate"


BOX_COUNT_LIMIT = 2**26
"""Largest output box enumeration counts hits in; past it (and past the domain size) the box cannot be
covered, and only a collision is looked for."""


def _collision_or_mismatch(table: NDArray[np.integer[Any]], input_shape: tuple[int, ...],
                           output_shape: Sequence[int], claim: str) -> Proof:
    """Refutation for an output box larger than the domain: two inputs with one image (found by sorting
    the images, without allocating the box), else the size mismatch."""
    rows = table.reshape(-1, table.shape[-1])
    order = np.lexsort(rows.T[::-1])
    ranked = rows[order]
    dup = np.flatnonzero(np.all(ranked[1:] == ranked[:-1], axis=1))
    if dup.size:
        a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        x = tuple(int(v) for v in np.unravel_index(a, input_shape))
        y = tuple(int(v) for v in np.unravel_index(b, input_shape))
        return Proof(claim, False, "enumerate", {"collision": (x, y, tuple(int(v) for v in rows[a]))})
    return Proof(claim, False, "enumerate", {"size_mismatch": (len(rows), math.prod(output_shape))})


def bijection_by_enumeration(table: NDArray[np.integer[Any]], output_shape: Sequence[int]) -> Proof:
    """Decide bijectivity from a full table ``input_shape + (m,)`` of images."""
    input_shape = table.shape[:-1]
    claim = "bijective onto the output box"
    size_in = int(np.prod(input_shape))
    if math.prod(output_shape) > max(size_in, BOX_COUNT_LIMIT):
        return _collision_or_mismatch(table, input_shape, output_shape, claim)
    flat_out = np.ravel_multi_index(tuple(np.moveaxis(table.reshape(size_in, -1), -1, 0)), tuple(output_shape))
    size_out = int(np.prod(output_shape))
    counts = np.bincount(flat_out, minlength=size_out)
    if counts.max(initial=0) > 1:
        order = np.argsort(flat_out, kind="stable")
        dup = np.flatnonzero(flat_out[order][1:] == flat_out[order][:-1])[0]
        a, b = int(order[dup]), int(order[dup + 1])
        x = tuple(int(v) for v in np.unravel_index(a, input_shape))
        y = tuple(int(v) for v in np.unravel_index(b, input_shape))
        image = tuple(int(v) for v in table.reshape(size_in, -1)[a])
        return Proof(claim, False, "enumerate", {"collision": (x, y, image)})
    if size_out != size_in:
        missing = int(np.flatnonzero(counts == 0)[0])
        out = tuple(int(v) for v in np.unravel_index(missing, tuple(output_shape)))
        return Proof(claim, False, "enumerate", {"unreachable": out})
    return Proof(claim, True, "enumerate", detail=f"{size_in} coordinates")


def bijection_by_isl(
    exprs: Sequence[Expr], variables: Sequence[Var], input_shape: Sequence[int], output_shape: Sequence[int]
) -> Proof:
    """Decide bijectivity symbolically with islpy (no enumeration)."""
    from .isl import box_set, point_coords, to_isl_map

    claim = "bijective onto the output box"
    try:
        m = to_isl_map(exprs, variables, input_shape)
    except UnsupportedError as err:
        raise ProofError(f"islpy cannot decide this map: {err}") from None
    n_in, n_out = len(input_shape), len(output_shape)
    if not m.is_injective():
        import islpy as isl

        same_image = m.apply_range(m.reverse())
        ident = isl.Map.identity(same_image.get_space())
        pairs = same_image.subtract(ident)
        pt = pairs.wrap().sample_point()
        coords = point_coords(pt, 2 * n_in)
        x, y = coords[:n_in], coords[n_in:]
        image = point_coords(m.intersect_domain(_point_set(x)).range().sample_point(), n_out)
        return Proof(claim, False, "isl", {"collision": (x, y, image)})
    box = box_set(output_shape)
    rng = m.range()
    if not rng.is_subset(box):
        outside = point_coords(rng.subtract(box).sample_point(), n_out)
        return Proof(claim, False, "isl", {"outside": outside})
    # Injective into the box: onto it exactly when both have the same number of points.  Counting
    # the box and the domain is free; subtracting the range from the box is what islpy finds
    # expensive once xor adds existential variables, so it is only done to name a witness.
    size_in, size_out = math.prod(input_shape), math.prod(output_shape)
    if size_in == size_out:
        return Proof(claim, True, "isl", detail="injective into the box, and |domain| == |box|")
    witness = _hole(m, box, rng, exprs, variables, input_shape, output_shape)
    return Proof(claim, False, "isl", witness, detail=f"|domain| = {size_in} < |box| = {size_out}")


def _hole(m: Any, box: Any, rng: Any, exprs: Sequence[Expr], variables: Sequence[Var], input_shape: Sequence[int],
          output_shape: Sequence[int]) -> dict[str, Any]:
    from .isl import point_coords

    # islpy has already decided; naming a hole by subtraction can take islpy minutes, so small
    # domains find it by enumeration and only large quasi-affine ones ask islpy.
    if math.prod(input_shape) > (1 << 22) and "exists" not in str(m):
        return {"unreachable": point_coords(box.subtract(rng).sample_point(), len(output_shape))}
    if math.prod(input_shape) <= (1 << 22):
        from .evaluate import compile_numpy, grid

        outs = compile_numpy(tuple(exprs), tuple(variables))(*grid(input_shape))
        flat = np.ravel_multi_index(tuple(np.broadcast_to(o, tuple(input_shape)).ravel() for o in outs), output_shape)
        seen = np.zeros(math.prod(output_shape), dtype=bool)
        seen[flat] = True
        first = int(np.argmin(seen))
        return {"unreachable": tuple(int(v) for v in np.unravel_index(first, tuple(output_shape)))}
    return {"size_mismatch": (math.prod(input_shape), math.prod(output_shape))}


def _point_set(x: Sequence[int]) -> Any:
    import islpy as isl

    names = ", ".join(f"x{d}" for d in range(len(x)))
    cons = " and ".join(f"x{d} = {v}" for d, v in enumerate(x))
    return isl.Set(f"{{ [{names}] : {cons} }}")
