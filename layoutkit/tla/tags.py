"""CATLASS layout tags as TLA layouts, and predicates that recognise them.

``make_layout_from_tag(tag, dtype, rows, cols)`` for ``(rows, cols)`` logical elements (``RU`` =
round up, ``C0 = 256 / bits``, a fractal is ``16 x C0``; L0C fractals are 16 x 16 for any type):

========== ======================================= ================================================
tag        shape                                   stride
========== ======================================= ================================================
RowMajor   ``(r, c)``                              ``(c, 1)``
ColumnMajor ``(r, c)``                             ``(1, r)``
VectorLayout ``(c,)`` (rows ignored)               ``(1,)``
zN         ``((16, ceil(r/16)), (C0, ceil(c/C0)))`` ``((C0, 16*C0), (1, RU(r,16)*C0))``
zZ         same as zN                              ``((C0, RU(c,C0)*16), (1, 16*C0))``
nZ         ``((C0, ceil(r/C0)), (16, ceil(c/16)))`` ``((1, RU(c,16)*C0), (C0, 16*C0))``
nN         same as nZ                              ``((1, 16*C0), (C0, RU(r,C0)*16))``
L0C        ``((16, ceil(r/16)), (16, ceil(c/16)))`` ``((16, 256), (1, RU(r,16)*16))``
========== ======================================= ================================================

Naming trap: CATLASS zN == Ascend FRACTAL_NZ == TileLang ``make_ascend_nz_layout`` (MajorK);
CATLASS nZ == TileLang MajorMN.

>>> from layoutkit import tla
>>> zn = tla.make_layout_from_tag("zN", "float16", 100, 100)
>>> str(zn), zn.origin_shape, tla.is_zN(zn), tla.is_nZ(zn)
('((_16,7),(_16,7)):((_16,_256),(_1,1792))', (100, 100), True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ..dtypes import c0 as c0_of
from ..errors import ShapeError
from .int_tuple_arith import ceil_div, round_up
from .int_tuple_check import as_int_tuple
from .layout import Layout
from .static_int import Int

FRACTAL_ROWS = 16
"""Rows of a fractal (``C0_NUM_PER_FRACTAL``)."""

TAGS = ("RowMajor", "ColumnMajor", "VectorLayout", "zN", "zZ", "nZ", "nN", "L0C")
_CANONICAL = {t.lower(): t for t in TAGS}
_CANONICAL.update({"row_major": "RowMajor", "column_major": "ColumnMajor", "col_major": "ColumnMajor",
                   "vector": "VectorLayout", "vector_layout": "VectorLayout"})


def canonical_tag(tag: str) -> str:
    """The CATLASS spelling of a tag name (case-insensitive: ``"zn" -> "zN"``).

    >>> canonical_tag("rowmajor"), canonical_tag("NZ"), canonical_tag("l0c")
    ('RowMajor', 'nZ', 'L0C')
    """
    if isinstance(tag, str):
        hit = _CANONICAL.get(tag.strip().lower()) or _CANONICAL.get(tag.strip())
        if hit is not None:
            return hit
    raise ShapeError(f"unknown layout tag {tag!r}; expected one of {', '.join(TAGS)}")


def make_layout_from_tag(tag: str, dtype: object, rows: int, cols: int) -> Layout:
    """The TLA layout of a CATLASS tag for a ``rows x cols`` matrix of ``dtype`` (CATLASS
    ``MakeLayout<Element, LayoutTag>(rows, cols)``); ``origin_shape = (rows, cols)`` (``(cols,)``
    for VectorLayout).

    >>> print(make_layout_from_tag("nZ", "float32", 20, 40))
    ((_8,3),(_16,3)):((_1,384),(_8,_128))
    >>> print(make_layout_from_tag("L0C", "float32", 20, 40))
    ((_16,2),(_16,3)):((_16,_256),(_1,512))
    """
    name = canonical_tag(tag)
    c0 = Int(c0_of(dtype))
    r = as_int_tuple(rows, "rows", minimum=1)
    c = as_int_tuple(cols, "cols", minimum=1)
    if type(r) is tuple or type(c) is tuple:
        raise ShapeError(f"make_layout_from_tag: rows and cols must be integers; found {rows!r}, {cols!r}")
    r, c = int(cast(int, r)), int(cast(int, c))
    one, f16 = Int(1), Int(FRACTAL_ROWS)
    frac = f16 * c0
    if name == "RowMajor":
        return Layout.from_modes((r, c), (c, one), (r, c))
    if name == "ColumnMajor":
        return Layout.from_modes((r, c), (one, r), (r, c))
    if name == "VectorLayout":
        return Layout.from_modes((c,), (one,), (c,))
    if name in ("zN", "zZ"):
        shape = ((f16, ceil_div(r, 16)), (c0, ceil_div(c, int(c0))))
        if name == "zN":
            stride = ((c0, frac), (one, round_up(r, 16) * int(c0)))
        else:
            stride = ((c0, round_up(c, int(c0)) * 16), (one, frac))
        return Layout.from_modes(shape, stride, (r, c))
    if name in ("nZ", "nN"):
        shape = ((c0, ceil_div(r, int(c0))), (f16, ceil_div(c, 16)))
        if name == "nZ":
            stride = ((one, round_up(c, 16) * int(c0)), (c0, frac))
        else:
            stride = ((one, frac), (c0, round_up(r, int(c0)) * 16))
        return Layout.from_modes(shape, stride, (r, c))
    # L0C: 16 x 16 fractals whatever the accumulator type
    shape = ((f16, ceil_div(r, 16)), (f16, ceil_div(c, 16)))
    stride = ((f16, Int(256)), (one, round_up(r, 16) * 16))
    return Layout.from_modes(shape, stride, (r, c))


MakeLayoutFromTag = make_layout_from_tag


# ---- predicates ------------------------------------------------------------------------------------


def _fractal_modes(layout: object) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """``((s00, s01), (s10, s11)), ((d00, d01), (d10, d11))`` for a rank-2, depth-2 layout whose
    two modes are pairs of integers, else None."""
    if not isinstance(layout, Layout):
        return None
    s, d = layout.shape, layout.stride
    if type(s) is not tuple or len(s) != 2:
        return None
    for m in s:
        if type(m) is not tuple or len(m) != 2 or any(type(v) is tuple for v in m):
            return None
    return s, cast("tuple[Any, ...]", d)


def _c0_matches(value: int, dtype: object) -> bool:
    if dtype is None:
        return value in (4, 8, 16, 32, 64)
    return value == c0_of(dtype)


def is_vector(layout: object) -> bool:
    """Rank 1, depth 1, unit stride (CATLASS ``isVector``).

    >>> is_vector(make_layout_from_tag("VectorLayout", "float16", 1, 64))
    True
    """
    if not isinstance(layout, Layout):
        return False
    s, d = layout.shape, layout.stride
    return type(s) is tuple and len(s) == 1 and type(s[0]) is not tuple and cast("tuple[Any, ...]", d)[0] == 1


def is_row_major(layout: object) -> bool:
    """Rank 2, depth 1, unit stride on the columns (CATLASS ``isRowMajor``).

    >>> is_row_major(make_layout_from_tag("RowMajor", "int8", 4, 8))
    True
    """
    return _flat2(layout) and cast("tuple[Any, ...]", cast(Layout, layout).stride)[1] == 1


def is_column_major(layout: object) -> bool:
    """Rank 2, depth 1, unit stride on the rows (CATLASS ``isColumnMajor``).

    >>> is_column_major(make_layout_from_tag("ColumnMajor", "int8", 4, 8))
    True
    """
    return _flat2(layout) and cast("tuple[Any, ...]", cast(Layout, layout).stride)[0] == 1


def _flat2(layout: object) -> bool:
    if not isinstance(layout, Layout):
        return False
    s = layout.shape
    return type(s) is tuple and len(s) == 2 and all(type(v) is not tuple for v in s)


def is_zN(layout: object, dtype: object = None) -> bool:  # noqa: N802 - CATLASS name
    """Fractal zN: shape ``((16, *), (C0, *))``, stride ``((C0, 16*C0), (1, *))``.

    ``C0`` is taken from ``dtype`` when given, else read from the shape.  The starred extents and
    strides are free (a tile keeps its parent's strides).  A zN with at most 16 rows is also zZ --
    the two maps coincide there.

    >>> is_zN(make_layout_from_tag("zN", "bfloat16", 64, 64), "bfloat16")
    True
    >>> is_zN(make_layout_from_tag("zN", "bfloat16", 64, 64), "float32")
    False
    """
    m = _fractal_modes(layout)
    if m is None:
        return False
    (s0, s1), (d0, d1) = m
    c0 = s1[0]
    return s0[0] == FRACTAL_ROWS and _c0_matches(c0, dtype) and d0 == (c0, FRACTAL_ROWS * c0) and d1[0] == 1


def is_zZ(layout: object, dtype: object = None) -> bool:  # noqa: N802 - CATLASS name
    """Fractal zZ: shape ``((16, *), (C0, *))``, stride ``((C0, *), (1, 16*C0))``.

    >>> is_zZ(make_layout_from_tag("zZ", "int8", 64, 64))
    True
    """
    m = _fractal_modes(layout)
    if m is None:
        return False
    (s0, s1), (d0, d1) = m
    c0 = s1[0]
    return s0[0] == FRACTAL_ROWS and _c0_matches(c0, dtype) and d0[0] == c0 and d1 == (1, FRACTAL_ROWS * c0)


def is_nZ(layout: object, dtype: object = None) -> bool:  # noqa: N802 - CATLASS name
    """Fractal nZ: shape ``((C0, *), (16, *))``, stride ``((1, *), (C0, 16*C0))``.

    >>> is_nZ(make_layout_from_tag("nZ", "float32", 64, 64))
    True
    """
    m = _fractal_modes(layout)
    if m is None:
        return False
    (s0, s1), (d0, d1) = m
    c0 = s0[0]
    return s1[0] == FRACTAL_ROWS and _c0_matches(c0, dtype) and d0[0] == 1 and d1 == (c0, FRACTAL_ROWS * c0)


def is_nN(layout: object, dtype: object = None) -> bool:  # noqa: N802 - CATLASS name
    """Fractal nN: shape ``((C0, *), (16, *))``, stride ``((1, 16*C0), (C0, *))``.

    >>> is_nN(make_layout_from_tag("nN", "float16", 64, 64)), is_nN(make_layout_from_tag("nZ", "float16", 64, 64))
    (True, False)
    """
    m = _fractal_modes(layout)
    if m is None:
        return False
    (s0, s1), (d0, d1) = m
    c0 = s0[0]
    return s1[0] == FRACTAL_ROWS and _c0_matches(c0, dtype) and d0 == (1, FRACTAL_ROWS * c0) and d1[0] == c0


def is_L0C(layout: object) -> bool:  # noqa: N802 - CATLASS name
    """L0C: shape ``((16, *), (16, *))``, stride ``((16, 256), (1, *))`` (the zN map of a 16-bit
    type, so a 16-bit zN is also L0C).

    >>> is_L0C(make_layout_from_tag("L0C", "float32", 48, 32))
    True
    """
    m = _fractal_modes(layout)
    if m is None:
        return False
    (s0, s1), (d0, d1) = m
    return bool(s0[0] == FRACTAL_ROWS and s1[0] == FRACTAL_ROWS and d0 == (16, 256) and d1[0] == 1)


is_l0c = is_L0C


def layout_tags(layout: object, dtype: object = None) -> tuple[str, ...]:
    """Every tag whose predicate accepts ``layout`` (a layout can match more than one).

    >>> layout_tags(make_layout_from_tag("zN", "float16", 16, 64))
    ('zN', 'zZ', 'L0C')
    """
    tests: tuple[tuple[str, Callable[[], bool]], ...] = (
        ("RowMajor", lambda: is_row_major(layout)),
        ("ColumnMajor", lambda: is_column_major(layout)),
        ("VectorLayout", lambda: is_vector(layout)),
        ("zN", lambda: is_zN(layout, dtype)),
        ("zZ", lambda: is_zZ(layout, dtype)),
        ("nZ", lambda: is_nZ(layout, dtype)),
        ("nN", lambda: is_nN(layout, dtype)),
        ("L0C", lambda: is_L0C(layout)),
    )
    return tuple(name for name, test in tests if test())


__all__ = [
    "TAGS",
    "FRACTAL_ROWS",
    "canonical_tag",
    "make_layout_from_tag",
    "MakeLayoutFromTag",
    "is_vector",
    "is_row_major",
    "is_column_major",
    "is_zN",
    "is_zZ",
    "is_nZ",
    "is_nN",
    "is_L0C",
    "is_l0c",
    "layout_tags",
]
