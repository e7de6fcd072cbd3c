"""Ascend fractal layouts (TileLang 0.1.15 ``ascend_layouts.cc``, ``docs/reference.md#ascend-fractal-layouts``).

A buffer is ``[..., rows, cols]``; leading dims pass through as leading outputs (compact NZ folds them
into one ``stage`` index instead).  ``C0 = 256 / bits`` elements make one 32-byte fractal row and a
fractal is ``16 x C0`` (512 bytes); L0C fractals are ``16 x 16`` for any accumulator type.

=================================  =========================================================  ==========
constructor                        map ``(i, j) ->``                                          kind
=================================  =========================================================  ==========
``make_ascend_nz_layout``          ``[j // C0, i // 16, i % 16, j % C0]`` (== MajorK)         MAJOR_K (0)
``make_ascend_major_k_layout``     ``[j // C0, i // 16, i % 16, j % C0]``                     MAJOR_K (0)
``make_ascend_l0c_layout``         ``[j // 16, i // 16, i % 16, j % 16]``                     L0C (1)
``make_ascend_sf_layout``          ``[i // 16, j // pack, i % 16, j % pack]``, pack = 16/b    SF (2)
``make_ascend_major_mn_layout``    ``[i // C0, j // 16, j % 16, i % C0]``                     MAJOR_MN (3)
``make_ascend_compact_nz_layout``  ``[stage * (C / C0) + j // C0, i, j % C0]``                COMPACT_NZ
=================================  =========================================================  ==========

Each layout is an :class:`AscendLayout` (a :class:`~layoutkit.Layout`) that carries a frozen
:class:`FractalTag`.  :func:`fractal_info` reads kind, C0, outer extents and axis roles from that tag,
never from the map: small extents simplify different maps to the same expressions (a 16x16 fp16 NZ
and MajorMN tile differ only by which of ``_i`` / ``_j`` is last).

>>> from layoutkit.targets import ascend
>>> L = ascend.make_ascend_nz_layout((32, 32), "float16")
>>> print(L)
Layout((32, 32) -> (2, 2, 16, 16), transform: (_i, _j) -> (_j // 16, _i // 16, _i % 16, _j % 16))
>>> info = ascend.fractal_info(L)
>>> info.kind.name, info.c0, info.outer0, info.outer1, info.c0_axis, info.row16_axis
('MAJOR_K', 16, 2, 2, 1, 0)
>>> ascend.fractal_info(ascend.make_ascend_major_mn_layout((16, 16), "float32")).kind.name
'MAJOR_MN'
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ...algebra.layout import Layout
from ...algebra.nodes import Expr
from ...algebra.shapes import check_shape, placeholder
from ...dtypes import DtypeError, canonical_dtype, element_bits
from ...dtypes import c0 as _c0
from ...errors import ShapeError, UnsupportedError

ROW_FRACTAL = 16
"""Rows of one fractal (and both sides of an L0C fractal)."""

ROW_AXIS, COL_AXIS = 0, 1
"""Logical axis roles as TileLang's ``LogicalAxis``: 0 = rows (dim -2), 1 = cols (dim -1)."""


class FractalKind(enum.IntEnum):
    """TileLang's ``AscendFractalKind`` (the integer values are TileLang's); ``COMPACT_NZ`` is a
    layoutkit extension (TileLang leaves the compact UB NZ layout untagged)."""

    MAJOR_K = 0
    L0C = 1
    SF = 2
    MAJOR_MN = 3
    COMPACT_NZ = 4


NZ = FractalKind.MAJOR_K
"""CATLASS zN / FRACTAL_NZ / TileLang ``make_ascend_nz_layout`` are all MajorK."""


@dataclass(frozen=True)
class FractalTag:
    """What the constructor built: ``kind``, the full ``buffer_shape``, the ``dtype`` (``None`` for
    L0C, whose fractal does not depend on it) and its width in bits."""

    kind: FractalKind
    buffer_shape: tuple[int, ...]
    dtype: str | None
    element_bits: int | None
    role: ClassVar[str] = "fractal"  # read by Layout.fractal

    def expanded(self, buffer_shape: tuple[int, ...]) -> FractalTag | None:
        """The tag of the layout with pass-through leading dims (``buffer_shape`` is its input shape);
        None for COMPACT_NZ, whose stages fold into its first output."""
        return None if self.kind is FractalKind.COMPACT_NZ else replace(self, buffer_shape=buffer_shape)


@dataclass(frozen=True)
class FractalInfo:
    """TileLang's ``AscendFractalLayoutInfo`` (plus the leading dims).

    ``c0``: C0 (16 for L0C, ``pack`` for SF); ``row_frac``: 16; ``rows``/``cols``: the logical dims
    -2/-1; ``outer0``: full extent of the C0-axis outer (the row16-axis outer for SF); ``outer1``:
    the row16-axis outer (the C0-axis outer for SF); ``c0_axis``/``row16_axis``: 0 = rows, 1 = cols.
    For COMPACT_NZ: ``row_frac`` is 1 (rows are not grouped), ``outer0 = stages * cols / C0`` and
    ``outer1 = rows``.
    """

    kind: FractalKind
    c0: int
    row_frac: int
    rows: int
    cols: int
    outer0: int
    outer1: int
    c0_axis: int
    row16_axis: int
    leading_shape: tuple[int, ...] = ()

    def as_record(self) -> dict:
        """The ``fractal_info`` dict of the TileLang conformance records."""
        return {
            "kind": int(self.kind), "c0": self.c0, "row_frac": self.row_frac, "rows": self.rows, "cols": self.cols,
            "outer0": self.outer0, "outer1": self.outer1, "c0_axis": self.c0_axis, "row16_axis": self.row16_axis,
        }

    @property
    def storage_shape(self) -> tuple[int, ...]:
        """The padded canonical storage ``leading + [outer0, outer1, 16, C0]`` (whole fractals)."""
        if self.kind is FractalKind.COMPACT_NZ:
            return (self.outer0, self.rows, self.c0)
        return self.leading_shape + (self.outer0, self.outer1, self.row_frac, self.c0)


AscendLayout = Layout
"""What the constructors below return: a :class:`~layoutkit.Layout` whose ``tag`` (also ``.fractal``) is
the :class:`FractalTag` that built it; :meth:`~layoutkit.Layout.expand` keeps the tag (as TileLang's
``AscendFractalLayoutNode::Expand`` does), see :meth:`FractalTag.expanded`.  Kept as a name for
annotations; it is the Layout class itself, so equality and hashing are the Layout's.

>>> L = make_ascend_l0c_layout((16, 32)).expand([2])
>>> L.input_shape, fractal_info(L).kind.name, fractal_info(L).leading_shape
((2, 16, 32), 'L0C', (2,))
"""


def _tagged(shape: Sequence[int], exprs: Sequence[Expr], tag: FractalTag | None) -> Layout:
    return Layout.from_exprs(shape, exprs).with_tag(tag)


# ---- helpers -----------------------------------------------------------------------------------


def c0(dtype: object) -> int:
    """Ascend ``C0 = 256 / bits``: the elements of one 32-byte fractal row.

    >>> c0("float32"), c0("bfloat16"), c0("int8"), c0("float4_e2m1fn")
    (8, 16, 32, 64)
    """
    return _c0(dtype)


def _dtype(dtype: object, what: str) -> tuple[str, int]:
    name = canonical_dtype(dtype)
    bits = element_bits(name)
    if bits <= 0 or 256 % bits:
        raise DtypeError(f"{what}: expected an element width dividing 256 bits; found {name} with {bits} bits")
    return name, bits


def _buffer(shape: object, what: str) -> tuple[int, ...]:
    dims = check_shape(shape, f"{what} buffer shape")
    if len(dims) < 2:
        raise ShapeError(f"{what} expects a buffer of rank >= 2 ([..., rows, cols]); found shape {dims}")
    return dims


def _k_align(shape: object, k_align: object, k_dim: int, what: str) -> None:
    """TileLang ``CheckStaticDivisible``: ``k_align > 1`` needs a static K extent that is a multiple."""
    if isinstance(k_align, bool) or not isinstance(k_align, (int, np.integer)) or k_align < 1:
        raise ShapeError(f"{what}: k_align must be a positive integer; found {k_align!r}")
    if k_align == 1:
        return
    try:
        k = tuple(shape)[k_dim]  # type: ignore[arg-type]
    except (TypeError, IndexError):
        return  # the shape check reports it
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise UnsupportedError(
            f"{what}: k_align={k_align} requires a static K extent (dim {k_dim}) to verify divisibility; found {k!r}"
        )
    if k > 0 and k % k_align:
        raise ShapeError(
            f"{what}: k_align={k_align} requires the K extent (dim {k_dim}) to be a multiple of {k_align}; "
            f"found {k} (witness: {k} % {k_align} = {k % k_align})"
        )


def _build(shape: tuple[int, ...], fn2d: Callable, tag: FractalTag) -> AscendLayout:
    variables = [placeholder(d, e) for d, e in enumerate(shape)]
    *lead, i, j = variables
    return _tagged(shape, tuple(lead) + tuple(fn2d(i, j)), tag)


# ---- constructors ------------------------------------------------------------------------------


def make_ascend_major_k_layout(shape: Sequence[int], dtype: object, k_align: int = 1) -> AscendLayout:
    """MajorK (== FRACTAL_NZ == CATLASS zN): ``[j // C0, i // 16, i % 16, j % C0]``; cols are K.

    >>> print(make_ascend_major_k_layout((16, 32), "float16", k_align=32))
    Layout((16, 32) -> (2, 1, 16, 16), transform: (_i, _j) -> (_j // 16, 0, _i, _j % 16))
    """
    what = "make_ascend_major_k_layout"
    _k_align(shape, k_align, -1, what)
    dims = _buffer(shape, what)
    name, bits = _dtype(dtype, what)
    k0 = 256 // bits
    return _build(
        dims,
        lambda i, j: (j // k0, i // ROW_FRACTAL, i % ROW_FRACTAL, j % k0),
        FractalTag(FractalKind.MAJOR_K, dims, name, bits),
    )


def make_ascend_nz_layout(shape: Sequence[int], dtype: object) -> AscendLayout:
    """The legacy NZ name: exactly :func:`make_ascend_major_k_layout` with ``k_align=1``.

    >>> make_ascend_nz_layout((48, 32), "bfloat16") == make_ascend_major_k_layout((48, 32), "bfloat16")
    True
    """
    return make_ascend_major_k_layout(shape, dtype)


def make_ascend_major_mn_layout(shape: Sequence[int], dtype: object, k_align: int = 1) -> AscendLayout:
    """MajorMN (== CATLASS nZ): ``[i // C0, j // 16, j % 16, i % C0]``; rows are K (grouped by C0).

    >>> print(make_ascend_major_mn_layout((32, 8), "uint8"))
    Layout((32, 8) -> (1, 1, 8, 32), transform: (_i, _j) -> (0, 0, _j, _i))
    """
    what = "make_ascend_major_mn_layout"
    _k_align(shape, k_align, -2, what)
    dims = _buffer(shape, what)
    name, bits = _dtype(dtype, what)
    k0 = 256 // bits
    return _build(
        dims,
        lambda i, j: (i // k0, j // ROW_FRACTAL, j % ROW_FRACTAL, i % k0),
        FractalTag(FractalKind.MAJOR_MN, dims, name, bits),
    )


def make_ascend_l0c_layout(shape: Sequence[int]) -> AscendLayout:
    """The L0C accumulator: ``[j // 16, i // 16, i % 16, j % 16]`` (16x16 fractals for any type).

    >>> print(make_ascend_l0c_layout((32, 16)))
    Layout((32, 16) -> (1, 2, 16, 16), transform: (_i, _j) -> (0, _i // 16, _i % 16, _j))
    """
    dims = _buffer(shape, "make_ascend_l0c_layout")
    f = ROW_FRACTAL
    return _build(dims, lambda i, j: (j // f, i // f, i % f, j % f), FractalTag(FractalKind.L0C, dims, None, None))


def make_ascend_sf_layout(shape: Sequence[int], dtype: object) -> AscendLayout:
    """MX scale factors ``[..., MN, K]``: ``[i // 16, j // pack, i % 16, j % pack]``, ``pack = 16 / b``.

    The element width must divide 16; below 16 bits K must fill whole 2-byte words (``K * b % 16 == 0``).

    >>> print(make_ascend_sf_layout((16, 4), "float8_e8m0fnu"))
    Layout((16, 4) -> (1, 2, 16, 2), transform: (_i, _j) -> (0, _j // 2, _i, _j % 2))
    """
    what = "make_ascend_sf_layout"
    dims = _buffer(shape, what)
    name = canonical_dtype(dtype)
    bits = element_bits(name)
    if 16 % bits:
        raise DtypeError(f"{what}: expected a storage dtype whose bit width divides 16; found {name} with {bits} bits")
    k = dims[-1]
    if (k * bits) % 16:
        raise ShapeError(
            f"{what}({dims}, {name}): the K extent must be 2-byte aligned (K * {bits} % 16 == 0); found K = {k} "
            f"(pad K with the identity e8m0 scale 127)"
        )
    pack = 16 // bits
    f = ROW_FRACTAL
    return _build(
        dims, lambda i, j: (i // f, j // pack, i % f, j % pack), FractalTag(FractalKind.SF, dims, name, bits)
    )


def make_ascend_compact_nz_layout(shape: Sequence[int], dtype: object) -> AscendLayout:
    """UB compact NZ: ``[stage * (C / C0) + j // C0, i, j % C0]`` with ``stage`` the row-major index of
    the leading dims; no row padding.  ``C % C0 == 0`` is required.

    >>> print(make_ascend_compact_nz_layout((2, 4, 32), "float16"))
    Layout((2, 4, 32) -> (4, 4, 16), transform: (_i, _j, _k) -> (_i * 2 + _k // 16, _j, _k % 16))
    """
    what = "make_ascend_compact_nz_layout"
    dims = _buffer(shape, what)
    name, bits = _dtype(dtype, what)
    k0 = 256 // bits
    cols = dims[-1]
    if cols % k0:
        raise ShapeError(
            f"{what}({dims}, {name}): columns must be a multiple of C0 = {k0}; found {cols} "
            f"(witness: {cols} % {k0} = {cols % k0})"
        )
    variables = [placeholder(d, e) for d, e in enumerate(dims)]
    *lead, i, j = variables
    stage: Expr | int = 0
    for v, e in zip(lead, dims[:-2]):
        stage = stage * e + v
    groups = cols // k0
    first = stage * groups + j // k0 if lead else j // k0
    return _tagged(dims, (first, i, j % k0), FractalTag(FractalKind.COMPACT_NZ, dims, name, bits))


def make_ascend_operand_layout(
    operand: str, shape: Sequence[int], dtype: object, transposed: bool = False, k_align: int = 1
) -> AscendLayout:
    """The GEMM (MAD) rule: A not transposed -> MajorK, transposed -> MajorMN; B transposed -> MajorK,
    not transposed -> MajorMN.  The reduce-K axis always lands on the C0 axis.

    >>> make_ascend_operand_layout("B", (64, 32), "float16").fractal.kind.name      # B is K x N
    'MAJOR_MN'
    >>> make_ascend_operand_layout("A", (64, 32), "float16", transposed=True).fractal.kind.name
    'MAJOR_MN'
    """
    if operand not in ("A", "B"):
        raise ShapeError(f"make_ascend_operand_layout: operand must be 'A' or 'B'; found {operand!r}")
    major_k = (operand == "A") != bool(transposed)
    make = make_ascend_major_k_layout if major_k else make_ascend_major_mn_layout
    return make(shape, dtype, k_align=k_align)


# ---- analysis ----------------------------------------------------------------------------------


def fractal_info(layout: Layout) -> FractalInfo:
    """Kind, C0, row fractal, outer extents and axis roles, read from the layout's tag.

    An untagged layout is rejected (as TileLang's ``TryExtractAscendFractalLayout`` does): the map alone
    is ambiguous.

    >>> fractal_info(make_ascend_sf_layout((32, 8), "float8_e8m0fnu")).as_record()["outer1"]
    4
    >>> import layoutkit as lk
    >>> try:
    ...     fractal_info(lk.Layout([16, 16], lambda i, j: (0, 0, i, j)))
    ... except lk.LayoutError as err:
    ...     print(type(err).__name__, "untagged" in str(err))
    UnsupportedError True
    """
    tag = getattr(layout, "fractal", None)
    if not isinstance(tag, FractalTag):
        raise UnsupportedError(
            "fractal_info expects a tagged Ascend fractal layout (built by an ascend.make_ascend_*_layout "
            f"constructor); found an untagged {layout}"
        )
    *lead, rows, cols = tag.buffer_shape
    kind = tag.kind
    if kind is FractalKind.COMPACT_NZ:
        k0 = 256 // tag.element_bits  # type: ignore[operator]
        return FractalInfo(kind, k0, 1, rows, cols, math.prod(lead) * cols // k0, rows, COL_AXIS, ROW_AXIS, tuple(lead))
    if kind is FractalKind.L0C:
        k0 = ROW_FRACTAL
    elif kind is FractalKind.SF:
        k0 = 16 // tag.element_bits  # type: ignore[operator]
    else:
        k0 = 256 // tag.element_bits  # type: ignore[operator]
    c0_axis, row16_axis = (ROW_AXIS, COL_AXIS) if kind is FractalKind.MAJOR_MN else (COL_AXIS, ROW_AXIS)
    extent = (rows, cols)
    c0_outer = -(-extent[c0_axis] // k0)
    row_outer = -(-extent[row16_axis] // ROW_FRACTAL)
    outer0, outer1 = (row_outer, c0_outer) if kind is FractalKind.SF else (c0_outer, row_outer)
    return FractalInfo(kind, k0, ROW_FRACTAL, rows, cols, outer0, outer1, c0_axis, row16_axis, tuple(lead))


def storage_offset_table(layout: Layout) -> np.ndarray:
    """Element offsets in the padded canonical storage (whole fractals), for every input coordinate:
    the 4-D (or compact 3-D) output flattened row-major over :attr:`FractalInfo.storage_shape`, not over
    TileLang's bounding-box ``output_shape``.

    >>> int(storage_offset_table(make_ascend_nz_layout((20, 16), "float16"))[17, 3])
    275
    """
    info = fractal_info(layout)
    table = layout.table()
    return np.ravel_multi_index(tuple(np.moveaxis(table, -1, 0)), info.storage_shape)


__all__ = [
    "ROW_FRACTAL",
    "FractalKind",
    "FractalTag",
    "FractalInfo",
    "AscendLayout",
    "c0",
    "make_ascend_nz_layout",
    "make_ascend_major_k_layout",
    "make_ascend_major_mn_layout",
    "make_ascend_l0c_layout",
    "make_ascend_sf_layout",
    "make_ascend_compact_nz_layout",
    "make_ascend_operand_layout",
    "fractal_info",
    "storage_offset_table",
]
