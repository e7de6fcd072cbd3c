"""Out-of-bounds padding of Ascend tiles (``docs/reference.md#out-of-bounds-padding``): the fills a tail
tile needs, the clamped valid extents, the sentinel an unwritten element holds, and :func:`load_tile`, the
exact on-chip image of a (tail) tile built on the movement models of :mod:`.movement`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...algebra.layout import Layout
from ...dtypes import DtypeError
from ...errors import CoordinateError, ShapeError, UnsupportedError
from .layouts import ROW_FRACTAL, FractalKind, fractal_info
from .movement import element_bits_of, from_storage, padded_extents, to_storage  # noqa: F401  (from_storage: doctest)

# ---- out-of-bounds padding ----------------------------------------------------------------------


@dataclass(frozen=True)
class Fill:
    """A padding fill over ``rows = [row_min, row_min + row_extent)`` x ``cols = [col_min, col_min +
    col_extent)`` of the destination's logical (padded) coordinates."""

    row_min: int
    col_min: int
    row_extent: int
    col_extent: int
    value: float = 0

    def region(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return ((self.row_min, self.row_extent), (self.col_min, self.col_extent))


def clamp_valid(extent: int, src_shape: int, src_min: int, dst_shape: int, dst_min: int) -> int:
    """``AscendInsertOOBPadding``: ``min(extent, max(src_shape - src_min, 0), max(dst_shape - dst_min, 0))``.

    >>> clamp_valid(16, 10, 0, 16, 0), clamp_valid(32, 100, 96, 32, 0)
    (10, 4)
    """
    return int(min(extent, max(src_shape - src_min, 0), max(dst_shape - dst_min, 0)))


def oob_padding_fills(
    valid: Sequence[int], dst_shape: Sequence[int], layout: Layout, pad_value: float = 0
) -> list[Fill]:
    """The fills added for a clamped GM -> L1 copy of a ``valid`` block into ``dst_shape``: the C0-axis
    tail ``[ceil(valid_c0/C0)*C0, ceil(dst_c0/C0)*C0)`` over all padded 16-axis positions, and the
    16-axis tail ``[valid_16, dst_16)`` over all padded C0-axis positions (MajorK: the C0 axis is cols;
    MajorMN: rows).  No fill when nothing was clamped.

    >>> from layoutkit.targets import ascend
    >>> L = ascend.make_ascend_nz_layout((16, 32), "bfloat16")
    >>> [f.region() for f in oob_padding_fills((10, 8), (16, 32), L)]
    [((0, 16), (16, 16)), ((10, 6), (0, 32))]
    """
    info = fractal_info(layout)
    if info.kind not in (FractalKind.MAJOR_K, FractalKind.MAJOR_MN):
        raise UnsupportedError(f"oob_padding_fills expects a MAJOR_K or MAJOR_MN L1 layout; found {info.kind.name}")
    vr, vc = (int(x) for x in valid)
    dr, dc = (int(x) for x in dst_shape[-2:])
    if vr >= dr and vc >= dc:
        return []
    k = info.c0
    fills: list[Fill] = []
    if info.kind is FractalKind.MAJOR_K:
        pr = -(-dr // ROW_FRACTAL) * ROW_FRACTAL
        lo, hi = -(-vc // k) * k, -(-dc // k) * k
        if hi > lo:
            fills.append(Fill(0, lo, pr, hi - lo, pad_value))
        if dr > vr:
            fills.append(Fill(vr, 0, dr - vr, hi, pad_value))
    else:
        pc = -(-dc // ROW_FRACTAL) * ROW_FRACTAL
        lo, hi = -(-vr // k) * k, -(-dr // k) * k
        if hi > lo:
            fills.append(Fill(lo, 0, hi - lo, pc, pad_value))
        if dc > vc:
            fills.append(Fill(0, vc, hi, dc - vc, pad_value))
    return fills


def default_sentinel(dtype: np.dtype) -> object:
    """The marker of uninitialised padding: NaN for floats, the most negative value for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.nan
    if dt.kind in "iu":
        return np.iinfo(dt).min
    raise DtypeError(f"default_sentinel: expected a float or integer dtype; found {dt}")


def load_tile(
    gm_array: np.ndarray,
    layout: Layout,
    tile_shape: Sequence[int],
    coord: Sequence[int],
    pad_value: float = 0,
    sentinel: object = None,
    dtype: object = None,
) -> np.ndarray:
    """The exact L1 image (canonical storage of ``layout``) after copying the ``tile_shape`` tile at
    element ``coord`` of the 2-D ``gm_array`` with out-of-bounds padding:

    * the ND2NZ DMA writes the valid block (clamped by :func:`clamp_valid`) and zeros up to the end of
      the last partial 32-byte block along the C0 axis;
    * when a side was clamped, :func:`oob_padding_fills` write ``pad_value``;
    * everything else (padding the hardware never initialises) holds ``sentinel`` (default
      :func:`default_sentinel`).

    ``layout`` is a MajorK (NZ) or MajorMN layout of ``tile_shape``.

    >>> import numpy as np
    >>> from layoutkit.targets import ascend
    >>> gm = np.arange(1, 10 * 8 + 1, dtype=np.float32).reshape(10, 8)
    >>> L = ascend.make_ascend_nz_layout((16, 16), "float32")
    >>> img = from_storage(load_tile(gm, L, (16, 16), (0, 0)), ascend.fractal_info(L))
    >>> img[9, 7], img[9, 8], img[10, 0], img[0, 15]
    (np.float32(80.0), np.float32(0.0), np.float32(0.0), np.float32(0.0))
    """
    if gm_array.ndim != 2:
        raise ShapeError(f"load_tile expects a 2-D GM matrix; found shape {gm_array.shape}")
    info = fractal_info(layout)
    if info.kind not in (FractalKind.MAJOR_K, FractalKind.MAJOR_MN):
        raise UnsupportedError(f"load_tile expects a MAJOR_K or MAJOR_MN L1 layout; found {info.kind.name}")
    tr, tc = (int(x) for x in tile_shape)
    if (tr, tc) != (info.rows, info.cols) or info.leading_shape:
        raise ShapeError(
            f"load_tile: expected a 2-D layout of the tile shape {(tr, tc)}; found a layout of {layout.input_shape}"
        )
    if dtype is not None:
        element_bits_of(gm_array, dtype)
    r0, c0 = (int(x) for x in coord)
    if r0 < 0 or c0 < 0:
        raise CoordinateError(f"load_tile: expected a non-negative tile coordinate; found {(r0, c0)}")
    vr = clamp_valid(tr, gm_array.shape[0], r0, tr, 0)
    vc = clamp_valid(tc, gm_array.shape[1], c0, tc, 0)
    mark = default_sentinel(gm_array.dtype) if sentinel is None else sentinel
    pr, pc = padded_extents(info)
    img = np.full((pr, pc), mark, dtype=gm_array.dtype)
    k = info.c0
    block = gm_array[r0 : r0 + vr, c0 : c0 + vc]
    if info.kind is FractalKind.MAJOR_K:  # DMA: rows < vr, cols < RU(vc, C0), zero past vc
        img[:vr, : -(-vc // k) * k] = 0
    else:  # the transposed DMA groups rows by C0
        img[: -(-vr // k) * k, :vc] = 0
    img[:vr, :vc] = block
    for f in oob_padding_fills((vr, vc), (tr, tc), layout, pad_value):
        img[f.row_min : f.row_min + f.row_extent, f.col_min : f.col_min + f.col_extent] = f.value
    return np.ascontiguousarray(to_storage(img, info))


__all__ = ["Fill", "clamp_valid", "default_sentinel", "load_tile", "oob_padding_fills"]
