"""Reading an :class:`~layoutkit.algebra.linear.F2Linear` off the full table of a map
(:meth:`F2Linear.from_table <layoutkit.algebra.linear.F2Linear.from_table>`, which ``Layout.to_linear`` uses).

The table is predicted from the images of the row-major flat index's bits by doubling
(``pred = [pred, pred ^ image]`` per bit, 2N work in all) and compared once; separate from the map
type because it is the one place that works on a whole numpy table rather than on bases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ShapeError
from .bits import bit_width, log2_exact

if TYPE_CHECKING:
    from .linear import F2Linear, Image


def from_table(
    cls: type[F2Linear], table: NDArray[np.integer[Any]], in_names: Sequence[str] | None = None,
    out_names: Sequence[str] | None = None,
) -> F2Linear | None:
    """``cls`` (an :class:`~layoutkit.algebra.linear.F2Linear` type) with the full table ``table``
    (shape ``in_shape + (m,)``, row-major), or None when an extent is not a power of two or the table is
    not F2-linear; see :meth:`F2Linear.from_table <layoutkit.algebra.linear.F2Linear.from_table>`."""
    arr = np.asarray(table)
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


__all__ = ["from_table"]
