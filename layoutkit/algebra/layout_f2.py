"""The bridge between :class:`~layoutkit.Layout` and its F2 view
:class:`~layoutkit.algebra.linear.F2Linear`: the view of a layout (``Layout.to_linear``, or the reason
there is none) and the expressions of a view (``Layout.from_linear``).

Separate from :mod:`.layout` (which imports it on first use) so that the layout module does not load
the F2 machinery, and from :mod:`.linear` because these functions read layouts, which the map type
knows nothing of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ShapeError
from .f2_reasons import not_linear_reason
from .linear import F2Linear, bases_from_mapping, expressions_from_bases
from .nodes import Expr
from .shapes import check_shape, placeholder

if TYPE_CHECKING:
    from .layout import Layout


def linear_view(layout: Layout) -> tuple[F2Linear | None, tuple[str, tuple[int, ...] | None]]:
    """``(view, ("", None))``, or ``(None, (reason, witness))`` when ``layout`` is not F2-linear."""
    names = [v.name for v in layout.forward_vars]
    if any(e & (e - 1) for e in layout.input_shape):  # before building a table that cannot be linear
        # a broadcast view: the reason reads only the shape, so no table of the whole domain is built
        shape_only = np.broadcast_to(np.zeros(1, dtype=np.int64), layout.input_shape + (1,))
        return None, not_linear_reason(shape_only, names)
    table = layout.table()
    try:
        view = F2Linear.from_table(table, names, [f"dim{k}" for k in range(len(layout.forward_index))])
    except ShapeError:
        layout.output_shape  # noqa: B018 - negative images: raise the error that names a witness
        raise
    return (view, ("", None)) if view is not None else (None, not_linear_reason(table, names))


def exprs_from_linear(
    view: F2Linear | Mapping[str, Sequence[Sequence[int]]] | Sequence[Sequence[Sequence[int]]],
    input_shape: Sequence[int] | None = None,
) -> tuple[tuple[int, ...], tuple[Expr, ...]]:
    """The input shape and the output expressions of the layout with F2 bases ``view`` (an
    :class:`F2Linear`, ``{in_dim: [[out...], ...]}`` or per-dim basis lists); see ``Layout.from_linear``."""
    bases = bases_from_mapping(view)
    n_out = {len(img) for per in bases for img in per}
    if isinstance(view, F2Linear):
        # the view names its outputs even when no input bit has a basis image (every extent 1)
        n_out.add(len(view.out_dims))
    if len(n_out) > 1:
        raise ShapeError(f"F2 bases must all have the same number of outputs; found {sorted(n_out)}")
    shape = tuple(2 ** len(per) for per in bases) if input_shape is None else check_shape(input_shape)
    if input_shape is not None and any(2 ** len(per) != e for per, e in zip(bases, shape)):
        raise ShapeError(f"input shape {shape} does not match {[len(p) for p in bases]} basis bits per dim")
    variables = tuple(placeholder(d, e) for d, e in enumerate(shape))
    return shape, expressions_from_bases(bases, variables, n_out.pop() if n_out else 1)


__all__ = ["exprs_from_linear", "linear_view"]
