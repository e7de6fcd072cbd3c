"""Bridges between TLA/CuTe layouts, ``lk.Layout`` and the F2 (linear) view, exact both ways.

* :meth:`tla.Layout.to_layout` gives the ``lk.Layout`` of the offset over the logical ``origin_shape``;
  :func:`from_layout` is its inverse on affine layouts (one output, ``offset = sum(c_d * x_d)``; an
  ``lk.Layout`` maps into non-negative coordinates, so the strides are non-negative).
* :func:`to_linear` / :func:`from_linear`: the F2 view of a layout whose extents and strides are powers
  of two (or 0), through ``lk.Layout.to_linear``; an F2 map goes back to a ``tla.Layout`` when every
  input bit moves the offset by one power of two and the bits of a dim move it by doubling strides.

>>> from layoutkit import tla
>>> A = tla.make_layout((4, 8), (8, 1))
>>> from_layout(A.to_layout()) == A
True
>>> view = to_linear(A)
>>> view.bases
(((8,), (16,)), ((1,), (2,), (4,)))
>>> from_linear(view) == A
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import UnsupportedError
from .layout import Layout

if TYPE_CHECKING:
    from ..algebra.layout import Layout as LkLayout
    from ..algebra.linear import F2Linear


def from_layout(layout: LkLayout) -> Layout:
    """The ``tla.Layout`` (one mode per input dim, a tuple of dynamic ints) of an affine one-output
    ``lk.Layout``.

    Raises :class:`~layoutkit.errors.UnsupportedError` with a witness coordinate when the layout is not
    ``offset = sum(stride_d * x_d)``.
    """
    shape = tuple(int(e) for e in layout.input_shape)
    if len(layout.output_shape) != 1:
        raise UnsupportedError(f"from_layout: {layout} has {len(layout.output_shape)} outputs; a tla.Layout has one")
    table = np.asarray(layout.table()).reshape(shape)
    if table.flat[0] != 0:
        raise UnsupportedError(f"from_layout: {layout} maps the origin to {int(table.flat[0])}, not 0")
    strides = []
    for d, e in enumerate(shape):
        idx = [0] * len(shape)
        if e > 1:
            idx[d] = 1
        strides.append(int(table[tuple(idx)]) if e > 1 else 0)
    want = sum(np.arange(e).reshape([-1 if k == d else 1 for k in range(len(shape))]) * s
               for d, (e, s) in enumerate(zip(shape, strides)))
    diff = np.argwhere(np.broadcast_to(want, shape) != table)
    if diff.size:
        c = tuple(int(v) for v in diff[0])
        raise UnsupportedError(f"from_layout: {layout} is not affine: at {c} it gives {int(table[c])} but strides "
                               f"{tuple(strides)} give {int(np.broadcast_to(want, shape)[c])}")
    return Layout(shape, tuple(strides))


def to_linear(layout: Layout) -> F2Linear:
    """The F2 view ``(dim0, dim1, ...) -> offset`` of a layout over power-of-two extents whose offsets
    are bit-linear (powers-of-two strides on disjoint bits, or any xor-free map ``lk.Layout.to_linear``
    accepts)."""
    view = layout.to_layout().to_linear()
    if view is None:
        raise UnsupportedError(f"to_linear: {layout} is not F2-linear (extents and strides must be powers of two "
                               "on disjoint bits)")
    return view


def from_linear(view: F2Linear) -> Layout:
    """The ``tla.Layout`` (one mode per in dim) of a one-output F2 map whose every dim is a strided run
    (bit ``b`` of dim ``d`` maps to ``stride_d * 2**b``, 0 for a broadcast dim) on bits no other image
    sets, so that xor is addition."""
    if len(view.out_dims) != 1:
        raise UnsupportedError(f"from_linear: expected one out dim (the offset); found {view.out_dims}")
    strides = []
    for (name, _), per in zip(view.in_dims, view.bases):
        first = per[0][0] if per else 0
        if any(im[0] != first << b for b, im in enumerate(per)):
            raise UnsupportedError(f"from_linear: the bits of in dim {name!r} map to {[im[0] for im in per]}, not a "
                                   "strided run (no stride represents them)")
        strides.append(first)
    images = [im[0] for per in view.bases for im in per if im[0]]
    union = 0
    for v in images:
        if union & v:
            raise UnsupportedError(f"from_linear: the images {images} share bits, so their xor is not their sum (no "
                                   "stride layout adds to it)")
        union |= v
    return Layout(tuple(s for _, s in view.in_dims), tuple(strides))


__all__ = ["from_layout", "to_linear", "from_linear"]
