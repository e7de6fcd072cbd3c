"""CATLASS TLA layouts and the CuTe layout algebra on one nested ``shape:stride`` type.

* IntTuples with static (``tla.Int(3)``, ``tla._3``) and dynamic (plain int) integers:
  :mod:`~layoutkit.tla.int_tuple`.
* :class:`Layout` ``(shape, stride, origin_shape)``, ``crd2offset``, ``get_tile_layout``, tags
  (RowMajor ColumnMajor VectorLayout zN zZ nZ nN L0C) and their predicates, ``to_layout()`` into an
  ``lk.Layout``.
* The CuTe algebra with C++ semantics: coalesce, filter, composition, complement, right/left
  inverse, divides, products, ``Swizzle`` and composed layouts -- exact or a typed error, never a
  silently wrong layout.
* ``tv_fragment`` / ``fragment_tv``: a CuTe thread-value layout as an ``lk.Fragment`` and back; ``from_cute_dsl`` /
  ``to_cute_dsl``: the bridge to CuTe DSL (the optional ``cute`` extra, imported only when called).

Flat (1-D) indices are colexicographic, as in CuTe; TLA logical coordinates ``(row, col)`` are one
integer per top-level mode.  CATLASS names are exported too (``MakeLayout``, ``MakeShape``,
``MakeStride``, ``MakeCoord``, ``GetTileLayout``).

>>> from layoutkit import tla
>>> tla.crd2offset((1, 5), ((4, 2), (4, 3)), ((4, 16), (1, 32)))
37
>>> a = tla.MakeLayout(tla.MakeShape(tla.MakeShape(4, 2), tla.MakeShape(4, 3)),
...                    tla.MakeStride(tla.MakeStride(4, 16), tla.MakeStride(1, 32)), tla.MakeShape(8, 12))
>>> tla.GetTileLayout(a, tla.MakeShape(4, 4), tla.MakeCoord(6, 10)).origin_shape
(2, 2)
>>> print(tla.make_layout(tla.make_shape(tla._2, 4), tla.make_stride(tla._12, tla._1)))
(_2,4):(_12,_1)
"""

from __future__ import annotations

import re as _re

from ..dtypes import c0, element_bits
from .bridges import from_layout, from_linear, to_linear
from .coalesce import coalesce, coalesce_shape, filter, filter_zeros
from .composition import complement, composition, make_swizzle
from .cute_dsl import from_cute_dsl, to_cute_dsl
from .int_tuple import make_coord, make_shape, make_stride
from .int_tuple_arith import (
    ceil_div,
    compact_col_major,
    compact_row_major,
    inner_product,
    make_dynamic,
    make_static,
    round_up,
)
from .int_tuple_check import to_str
from .int_tuple_structure import (
    compatible,
    congruent,
    depth,
    flatten,
    get,
    product,
    product_each,
    rank,
    unflatten,
    weakly_congruent,
)
from .inverses import left_inverse, max_common_vector, nullspace, right_inverse
from .layout import (
    Layout,
    cosize,
    crd2crd,
    crd2idx,
    crd2offset,
    get_tile_layout,
    idx2crd,
    is_layout,
    make_layout,
    origin_shape,
    shape,
    stride,
)
from .layout import size as size
from .static_int import Int, is_int, is_static, is_tuple, static
from .swizzle import ComposedLayout, Swizzle, make_composed_layout
from .tags import (
    TAGS,
    is_column_major,
    is_L0C,
    is_l0c,
    is_nN,
    is_nZ,
    is_row_major,
    is_vector,
    is_zN,
    is_zZ,
    layout_tags,
    make_layout_from_tag,
)
from .tiling import (
    blocked_product,
    flat_divide,
    flat_product,
    logical_divide,
    logical_product,
    raked_product,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from .tv import fragment_tv, tv_fragment

# CATLASS spellings
MakeLayout = make_layout
MakeShape = make_shape
MakeStride = make_stride
MakeCoord = make_coord
GetTileLayout = get_tile_layout
MakeLayoutFromTag = make_layout_from_tag

_STATIC_NAME = _re.compile(r"_(0|[1-9][0-9]*)")


def __getattr__(name: str) -> object:
    """``tla._N`` is the static integer ``Int(N)`` (CuTe's ``_N``) for any ``N >= 0``;
    ``tla.ParametricTlaLayout`` is imported on first use (it needs sympy, which nothing else here does)."""
    if _STATIC_NAME.fullmatch(name):
        return Int(int(name[1:]))
    if name == "ParametricTlaLayout":
        from .parametric import ParametricTlaLayout

        return ParametricTlaLayout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ParametricTlaLayout",
    "from_layout",
    "from_cute_dsl",
    "to_cute_dsl",
    "tv_fragment",
    "fragment_tv",
    "from_linear",
    "to_linear",
    "make_swizzle",
    "Int",
    "static",
    "is_int",
    "is_tuple",
    "is_static",
    "rank",
    "depth",
    "get",
    "product",
    "product_each",
    "size",
    "cosize",
    "flatten",
    "unflatten",
    "congruent",
    "weakly_congruent",
    "compatible",
    "ceil_div",
    "round_up",
    "inner_product",
    "compact_col_major",
    "compact_row_major",
    "make_shape",
    "make_stride",
    "make_coord",
    "make_static",
    "make_dynamic",
    "to_str",
    "Layout",
    "is_layout",
    "make_layout",
    "shape",
    "stride",
    "origin_shape",
    "crd2offset",
    "crd2idx",
    "idx2crd",
    "crd2crd",
    "get_tile_layout",
    "element_bits",
    "c0",
    "TAGS",
    "make_layout_from_tag",
    "layout_tags",
    "is_vector",
    "is_row_major",
    "is_column_major",
    "is_zN",
    "is_zZ",
    "is_nZ",
    "is_nN",
    "is_L0C",
    "is_l0c",
    "coalesce",
    "coalesce_shape",
    "filter",
    "filter_zeros",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "nullspace",
    "max_common_vector",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "Swizzle",
    "ComposedLayout",
    "make_composed_layout",
    "MakeLayout",
    "MakeShape",
    "MakeStride",
    "MakeCoord",
    "GetTileLayout",
    "MakeLayoutFromTag",
]
