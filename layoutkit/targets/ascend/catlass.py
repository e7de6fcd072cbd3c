"""CATLASS TLA <-> TileLang Ascend layouts: the tag names and their exact equivalence.

The naming trap: CATLASS ``zN`` == Ascend ``FRACTAL_NZ`` == TileLang :func:`make_ascend_nz_layout`
(MajorK: ``z``-ordered rows inside a fractal, fractals stacked ``N``-wise, i.e. down the columns), while
CATLASS ``nZ`` is TileLang's **MajorMN** (not "NZ").  ``L0C`` is ``L0C`` in both.  TileLang's 4-D output
flattened row-major over the *padded canonical storage* ``[outer0, outer1, 16, C0]`` (whole fractals,
:func:`~layoutkit.targets.ascend.layouts.storage_offset_table`) equals the CATLASS offset exactly; over
TileLang's bounding-box ``output_shape`` it does only when rows and cols fill whole fractals.

>>> from layoutkit.targets import ascend
>>> L = ascend.make_ascend_nz_layout((20, 40), "float16")
>>> ascend.catlass_tag(L)
'zN'
>>> ascend.catlass_equivalent(L)
True
>>> ascend.ascend_layout_from_tag("nZ", (20, 40), "float32").fractal.kind.name
'MAJOR_MN'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import tla
from ...algebra.layout import Layout
from ...algebra.shapes import check_shape
from ...errors import LayoutError, ShapeError, UnsupportedError
from .layouts import (
    FractalKind,
    fractal_info,
    make_ascend_l0c_layout,
    make_ascend_major_k_layout,
    make_ascend_major_mn_layout,
    storage_offset_table,
)

TAG_OF_KIND = {FractalKind.MAJOR_K: "zN", FractalKind.MAJOR_MN: "nZ", FractalKind.L0C: "L0C"}
"""The CATLASS tag of each TileLang fractal kind that has one."""

KIND_OF_TAG = {tag: kind for kind, tag in TAG_OF_KIND.items()}

_NO_TILELANG = {
    "zZ": "zZ (fractals stacked along rows) has no TileLang constructor",
    "nN": "nN (column-major fractals stacked along columns) has no TileLang constructor",
    "RowMajor": "RowMajor is the ND (GM/UB) layout; TileLang keeps it as the identity, not a fractal",
    "ColumnMajor": "ColumnMajor is an ND layout; TileLang keeps it as the identity, not a fractal",
    "VectorLayout": "VectorLayout is a 1-D ND layout, not a fractal",
}


class CatlassMismatchError(LayoutError):
    """A TileLang-style layout and its CATLASS tag disagree; ``witness`` = (coord, ours, catlass)."""

    def __init__(self, message: str, witness: tuple | None = None):
        super().__init__(message)
        self.witness = witness


def catlass_tag(layout: Layout) -> str:
    """The CATLASS tag of a tagged TileLang Ascend layout: MajorK/NZ -> ``"zN"``, MajorMN -> ``"nZ"``,
    L0C -> ``"L0C"``.  SF and compact NZ have none (:class:`~layoutkit.errors.UnsupportedError`).

    >>> from layoutkit.targets import ascend
    >>> ascend.catlass_tag(ascend.make_ascend_major_mn_layout((32, 32), "float16"))
    'nZ'
    """
    info = fractal_info(layout)
    if info.kind not in TAG_OF_KIND:
        raise UnsupportedError(
            f"catlass_tag: expected a MAJOR_K, MAJOR_MN or L0C layout; found {info.kind.name}, which has no CATLASS tag"
        )
    return TAG_OF_KIND[info.kind]


def ascend_layout_from_tag(tag: str, shape: Sequence[int], dtype: object = "float16") -> Layout:
    """The reverse: the TileLang Ascend layout a CATLASS tag names (``zN`` -> MajorK, ``nZ`` -> MajorMN,
    ``L0C`` -> L0C).

    >>> print(ascend_layout_from_tag("L0C", (16, 16)))
    Layout((16, 16) -> (1, 1, 16, 16), transform: (_i, _j) -> (0, 0, _i, _j))
    >>> try:
    ...     ascend_layout_from_tag("zZ", (16, 16))
    ... except UnsupportedError as err:
    ...     print(str(err).split(": ", 2)[2])
    zZ (fractals stacked along rows) has no TileLang constructor
    """
    if tag == "zN":
        return make_ascend_major_k_layout(shape, dtype)
    if tag == "nZ":
        return make_ascend_major_mn_layout(shape, dtype)
    if tag == "L0C":
        return make_ascend_l0c_layout(shape)
    why = _NO_TILELANG.get(tag, "unknown tag")
    raise UnsupportedError(f"ascend_layout_from_tag: expected one of zN, nZ, L0C; found {tag!r}: {why}")


def tla_layout(layout: Layout) -> tla.Layout:
    """The CATLASS TLA layout (``MakeLayoutFromTag``) of the trailing ``rows x cols`` of ``layout``.

    >>> from layoutkit.targets import ascend
    >>> print(ascend.tla_layout(ascend.make_ascend_nz_layout((32, 32), "float16")))
    ((_16,2),(_16,2)):((_16,_256),(_1,512))
    """
    info = fractal_info(layout)
    tag = catlass_tag(layout)
    dtype = layout.fractal.dtype or "float32"  # type: ignore[attr-defined]
    return tla.make_layout_from_tag(tag, dtype, info.rows, info.cols)


def catlass_equivalent(layout: Layout) -> bool:
    """Check over the whole domain that the padded canonical storage offsets of ``layout`` equal the
    CATLASS offsets (leading dims: slice ``s`` starts at ``s * fractal storage size``).  Returns True or
    raises :class:`CatlassMismatchError` with a witness coordinate."""
    info = fractal_info(layout)
    ours = storage_offset_table(layout)
    theirs = np.asarray(tla_layout(layout).offset_table(), dtype=np.int64)
    lead = info.leading_shape
    if lead:
        per_slice = int(np.prod(info.storage_shape[len(lead):]))
        slices = np.arange(int(np.prod(lead)), dtype=np.int64).reshape(lead + (1, 1)) * per_slice
        theirs = theirs + slices
    bad = np.argwhere(ours != theirs)
    if bad.size:
        at = tuple(int(x) for x in bad[0])
        raise CatlassMismatchError(
            f"{layout}: expected the CATLASS {catlass_tag(layout)} offset at every coordinate; found "
            f"{len(bad)} differences, first at {at}: ours {int(ours[at])}, CATLASS {int(theirs[at])}",
            (at, int(ours[at]), int(theirs[at])),
        )
    return True


def tags_of_tla(layout: tla.Layout, dtype: object, rows: int | None = None, cols: int | None = None) -> tuple:
    """Name the CATLASS tags of a TLA layout: every tag (``RowMajor``, ``ColumnMajor``, ``zN``, ``zZ``,
    ``nZ``, ``nN``, ``L0C``) whose layout for its ``origin_shape`` has the same offsets.  Several can match:
    for a 16-bit type (C0 = 16) ``L0C`` and ``zN`` are the same map.

    >>> from layoutkit import tla
    >>> tags_of_tla(tla.make_layout_from_tag("nZ", "float32", 32, 48), "float32")
    ('nZ',)
    >>> tags_of_tla(tla.make_layout_from_tag("L0C", "float16", 32, 48), "float16")
    ('zN', 'L0C')
    """
    origin = check_shape(tuple(int(x) for x in np.atleast_1d(layout.origin_shape)), "origin_shape")
    if len(origin) != 2:
        raise ShapeError(f"tags_of_tla expects a rank-2 origin shape; found {origin}")
    r, c = origin if rows is None or cols is None else (rows, cols)
    table = np.asarray(layout.offset_table())
    found = tuple(
        tag
        for tag in ("RowMajor", "ColumnMajor", "zN", "zZ", "nZ", "nN", "L0C")
        if np.array_equal(np.asarray(tla.make_layout_from_tag(tag, dtype, r, c).offset_table()), table)
    )
    if not found:
        raise UnsupportedError(f"tags_of_tla: expected a layout equal to a CATLASS tag for {r}x{c}; found {layout}")
    return found


__all__ = [
    "TAG_OF_KIND",
    "KIND_OF_TAG",
    "CatlassMismatchError",
    "catlass_tag",
    "ascend_layout_from_tag",
    "tla_layout",
    "catlass_equivalent",
    "tags_of_tla",
]
