"""numpy models of the Ascend data movements that produce and consume fractal storage
(``docs/reference.md#ascend-data-movement-and-passes``): the ND2NZ DMA with every ``Nd2NzParams`` field,
NZ2ND, burst copies, the UB compact-NZ scatter with its spare row, L1 -> L0A/L0B loads, the L0C -> GM
fixpipe (the out-of-bounds padding of tail tiles is in :mod:`.padding`).

Buffers are flat numpy arrays of elements (any numpy dtype; pass ``dtype=`` for the Ascend element type
when it differs from the array's, e.g. bfloat16 held as ``uint16``).  Everything is vectorised: index
arrays are built with broadcasting, never one element at a time.

>>> import numpy as np
>>> from layoutkit.targets import ascend
>>> a = np.arange(3 * 20, dtype=np.float16).reshape(3, 20)
>>> nz = ascend.nd2nz_matrix(a)                 # canonical MajorK storage [ceil(20/16), 1, 16, 16]
>>> nz.shape, float(nz[1, 0, 2, 3]), float(nz[1, 0, 2, 4])    # a[2, 19]; then the zero-filled block tail
((2, 1, 16, 16), 59.0, 0.0)
>>> bool(np.array_equal(ascend.nz2nd_matrix(nz, 3, 20), a))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...algebra.layout import Layout
from ...dtypes import DtypeError, canonical_dtype, element_bits
from ...errors import CoordinateError, ShapeError, UnsupportedError
from .layouts import ROW_FRACTAL, FractalInfo, FractalKind, fractal_info

BLOCK_BYTES = 32
"""One MTE block: 32 bytes = C0 elements (the unit of burst lengths, gaps and Nz strides)."""


def element_bits_of(arr: np.ndarray, dtype: object) -> tuple[str, int]:
    if dtype is None:
        bits = arr.dtype.itemsize * 8
        return str(arr.dtype), bits
    name = canonical_dtype(dtype)
    bits = element_bits(name)
    if arr.dtype.itemsize * 8 != bits:
        raise DtypeError(
            f"expected an array of {bits}-bit elements for {name}; found {arr.dtype} ({arr.dtype.itemsize * 8} bits)"
        )
    return name, bits


def _c0_of(arr: np.ndarray, dtype: object) -> int:
    name, bits = element_bits_of(arr, dtype)
    if 256 % bits:
        raise DtypeError(f"C0 needs an element width dividing 256 bits; found {name} with {bits} bits")
    return 256 // bits


def _flat(buf: np.ndarray, what: str, write: bool = True) -> np.ndarray:
    if not isinstance(buf, np.ndarray):
        raise ShapeError(f"{what} must be a numpy array; found {type(buf).__name__}")
    if not write:
        return np.ascontiguousarray(buf).reshape(-1)
    if not buf.flags.c_contiguous:
        raise ShapeError(f"{what} must be C-contiguous so it can be written in place; found strides {buf.strides}")
    return buf.reshape(-1)


def _check_range(index: np.ndarray, size: int, what: str) -> None:
    if index.size:
        lo, hi = int(index.min()), int(index.max())
        if lo < 0 or hi >= size:
            raise CoordinateError(f"{what}: expected element offsets in [0, {size}); found {hi if hi >= size else lo}")


# ---- ND2NZ / NZ2ND -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Nd2NzParams:
    """AscendC ``Nd2NzParams``.  ``src_nd_matrix_stride`` and ``src_d_value`` are in elements;
    ``dst_nz_c0_stride`` and ``dst_nz_n_stride`` in C0 blocks (32 bytes); ``dst_nz_matrix_stride`` in
    elements.  For a plain ``rows x cols`` matrix into a canonical NZ of ``RU(rows, 16)`` rows, use
    :meth:`for_matrix`."""

    nd_num: int
    n_value: int
    d_value: int
    src_nd_matrix_stride: int
    src_d_value: int
    dst_nz_c0_stride: int
    dst_nz_n_stride: int
    dst_nz_matrix_stride: int

    @classmethod
    def for_matrix(
        cls, rows: int, cols: int, src_d_value: int | None = None, nz_rows: int | None = None
    ) -> Nd2NzParams:
        """One ``rows x cols`` matrix (row pitch ``src_d_value``, default ``cols``) into an NZ whose
        C0 column blocks are ``nz_rows`` rows apart (default ``RU(rows, 16)``).

        >>> p = Nd2NzParams.for_matrix(10, 8)
        >>> p.n_value, p.d_value, p.src_d_value, p.dst_nz_c0_stride, p.dst_nz_n_stride
        (10, 8, 8, 16, 1)
        """
        pitch = cols if src_d_value is None else src_d_value
        nz = -(-rows // ROW_FRACTAL) * ROW_FRACTAL if nz_rows is None else nz_rows
        return cls(1, rows, cols, 0, pitch, nz, 1, 0)

    def check(self) -> None:
        for name, v in vars(self).items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ShapeError(f"Nd2NzParams.{name} must be a non-negative integer; found {v!r}")


def nd2nz(src: np.ndarray, dst: np.ndarray, params: Nd2NzParams, dtype: object = None) -> np.ndarray:
    """The ND2NZ DMA (GM -> L1 ``DataCopy`` with ``Nd2NzParams``), writing ``dst`` in place.

    For each of ``nd_num`` matrices, rows ``r < n_value`` and columns ``c < RU(d_value, C0)``:
    ``dst[i*dstNzMatrixStride + (c//C0)*dstNzC0Stride*C0 + r*dstNzNStride*C0 + c%C0] =
    src[i*srcNdMatrixStride + r*srcDValue + c]`` if ``c < d_value`` else 0 (the zero fill of the last
    partial 32-byte block).  Rows past ``n_value`` are left untouched.

    >>> import numpy as np
    >>> src = np.arange(1, 31, dtype=np.float32)          # 3 x 10 fp32, C0 = 8
    >>> dst = np.full(2 * 16 * 8, -1.0, dtype=np.float32)
    >>> out = nd2nz(src, dst, Nd2NzParams.for_matrix(3, 10))
    >>> dst[:8].tolist(), dst[16 * 8: 16 * 8 + 8].tolist(), float(dst[3 * 8])
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], -1.0)
    """
    s, d = _flat(src, "nd2nz src", write=False), _flat(dst, "nd2nz dst")
    c0 = _c0_of(src, dtype)
    params.check()
    p = params
    full, rem = divmod(p.d_value, c0)
    nblk = full + (1 if rem else 0)
    # strided views (element strides): [matrix, row, block, lane]
    dview = _view(d, (p.nd_num, p.n_value, nblk, c0),
                  (p.dst_nz_matrix_stride, p.dst_nz_n_stride * c0, p.dst_nz_c0_stride * c0, 1), "nd2nz dst")
    sview = _view(s, (p.nd_num, p.n_value, full, c0), (p.src_nd_matrix_stride, p.src_d_value, c0, 1), "nd2nz src")
    dview[:, :, :full] = sview
    if rem:
        tail = _view(s[full * c0:], (p.nd_num, p.n_value, rem), (p.src_nd_matrix_stride, p.src_d_value, 1),
                     "nd2nz src")
        dview[:, :, full, :rem] = tail
        dview[:, :, full, rem:] = 0
    return dst


def _view(flat: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...], what: str) -> np.ndarray:
    """A bounds-checked strided view of a flat array (strides in elements, all >= 0)."""
    if 0 in shape:
        return np.empty(shape, dtype=flat.dtype)
    last = sum((n - 1) * st for n, st in zip(shape, strides))
    if last >= flat.size:
        raise CoordinateError(f"{what}: expected element offsets in [0, {flat.size}); found {last}")
    item = flat.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat, shape, tuple(st * item for st in strides), writeable=True)


def nz2nd(nz: np.ndarray, params: Nd2NzParams, dtype: object = None) -> np.ndarray:
    """NZ2ND: read back what :func:`nd2nz` wrote with the same ``params``; returns an array
    ``(nd_num, n_value, d_value)`` (the valid data, without the zero-filled block tails).

    >>> import numpy as np
    >>> a = np.arange(12, dtype=np.float16).reshape(3, 4)
    >>> p = Nd2NzParams.for_matrix(3, 4)
    >>> nz = nd2nz(a, np.zeros(256, np.float16), p)
    >>> bool(np.array_equal(nz2nd(nz, p)[0], a))
    True
    """
    s = _flat(nz, "nz2nd src", write=False)
    c0 = _c0_of(nz, dtype)
    params.check()
    p = params
    full, rem = divmod(p.d_value, c0)
    nblk = full + (1 if rem else 0)
    view = _view(s, (p.nd_num, p.n_value, nblk, c0),
                 (p.dst_nz_matrix_stride, p.dst_nz_n_stride * c0, p.dst_nz_c0_stride * c0, 1), "nz2nd src")
    return view.reshape(p.nd_num, p.n_value, nblk * c0)[..., : p.d_value].copy()


def nd2nz_matrix(a: np.ndarray, dtype: object = None, fill: object = 0) -> np.ndarray:
    """A whole ``rows x cols`` matrix into canonical MajorK storage ``[ceil(cols/C0), ceil(rows/16), 16,
    C0]``; rows past ``rows`` (which the DMA does not write) hold ``fill``."""
    if a.ndim != 2:
        raise ShapeError(f"nd2nz_matrix expects a 2-D array; found shape {a.shape}")
    rows, cols = a.shape
    c0 = _c0_of(a, dtype)
    shape = (-(-cols // c0), -(-rows // ROW_FRACTAL), ROW_FRACTAL, c0)
    out = np.full(shape, fill, dtype=a.dtype)
    nd2nz(np.ascontiguousarray(a), out, Nd2NzParams.for_matrix(rows, cols), dtype)
    return out


def nz2nd_matrix(nz: np.ndarray, rows: int, cols: int, dtype: object = None) -> np.ndarray:
    """The inverse of :func:`nd2nz_matrix`: the ``rows x cols`` ND matrix out of canonical MajorK storage."""
    if nz.ndim != 4:
        raise ShapeError(f"nz2nd_matrix expects 4-D canonical NZ storage; found shape {nz.shape}")
    nz_rows = nz.shape[1] * nz.shape[2]
    return nz2nd(np.ascontiguousarray(nz), Nd2NzParams.for_matrix(rows, cols, nz_rows=nz_rows), dtype)[0]


# ---- burst copies ------------------------------------------------------------------------------


def burst_copy(
    src: np.ndarray,
    dst: np.ndarray,
    n_burst: int,
    len_burst: int,
    src_gap: int = 0,
    dst_gap: int = 0,
    src_offset: int = 0,
    dst_offset: int = 0,
    dtype: object = None,
) -> np.ndarray:
    """``DataCopyParams``: ``n_burst`` bursts of ``len_burst`` 32-byte blocks; after each burst the
    source skips ``src_gap`` and the destination ``dst_gap`` blocks.  Offsets are in elements.

    >>> import numpy as np
    >>> src = np.arange(48, dtype=np.float16)             # C0 = 16: 3 blocks
    >>> dst = np.full(64, -1, dtype=np.float16)
    >>> _ = burst_copy(src, dst, n_burst=2, len_burst=1, src_gap=1, dst_gap=2)
    >>> dst[::16].tolist()
    [0.0, -1.0, -1.0, 32.0]
    """
    s, d = _flat(src, "burst_copy src", write=False), _flat(dst, "burst_copy dst")
    c0 = _c0_of(src, dtype)
    for name, v in (("n_burst", n_burst), ("len_burst", len_burst), ("src_gap", src_gap), ("dst_gap", dst_gap)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ShapeError(f"burst_copy: {name} must be a non-negative integer; found {v!r}")
    b = np.arange(n_burst, dtype=np.int64)[:, None]
    e = np.arange(len_burst * c0, dtype=np.int64)[None, :]
    si = src_offset + b * (len_burst + src_gap) * c0 + e
    di = dst_offset + b * (len_burst + dst_gap) * c0 + e
    _check_range(si, s.size, "burst_copy src")
    _check_range(di, d.size, "burst_copy dst")
    d[di] = s[si]
    return dst


# ---- UB -> L1 NZ insertion (scatter + post copy) -----------------------------------------------

_NZ_INSERT_DTYPES = ("float16", "bfloat16", "float32")


def ub_scatter_compact_nz(src: np.ndarray, dtype: object = None, scratch: np.ndarray | None = None) -> np.ndarray:
    """``InsertNd2Nz`` step 1: UB ND ``rows x cols`` -> UB compact NZ with one spare row per C0 column
    block: ``scratch[(c//C0)*(rows+1)*C0 + r*C0 + c%C0] = src[r, c]``.  Only 16/32-bit floats;
    ``cols % C0 == 0``.  The spare rows are not written (they keep ``scratch``'s contents; a new scratch
    starts at 0).

    >>> import numpy as np
    >>> s = ub_scatter_compact_nz(np.arange(32, dtype=np.float16).reshape(2, 16))
    >>> s.shape, s[16:19].tolist(), float(s[32])
    ((48,), [16.0, 17.0, 18.0], 0.0)
    """
    if src.ndim != 2:
        raise ShapeError(f"ub_scatter_compact_nz expects a 2-D UB tile; found shape {src.shape}")
    name = canonical_dtype(dtype) if dtype is not None else {2: "float16", 4: "float32"}.get(src.dtype.itemsize, "")
    if name not in _NZ_INSERT_DTYPES or (dtype is None and src.dtype.kind != "f"):
        raise DtypeError(
            f"ub_scatter_compact_nz: the Ascend NZ insertion supports only 16/32-bit floats "
            f"({', '.join(_NZ_INSERT_DTYPES)}); found {dtype if dtype is not None else src.dtype}"
        )
    rows, cols = src.shape
    c0 = _c0_of(src, name)
    if cols % c0:
        raise ShapeError(f"ub_scatter_compact_nz: cols must be a multiple of C0 = {c0}; found {cols}")
    size = (cols // c0) * (rows + 1) * c0
    out = np.zeros(size, dtype=src.dtype) if scratch is None else scratch
    flat = _flat(out, "ub_scatter_compact_nz scratch")
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    idx = (c // c0) * (rows + 1) * c0 + r * c0 + c % c0
    _check_range(idx, flat.size, "ub_scatter_compact_nz scratch")
    flat[idx] = src
    return out


def insert_nd2nz(src: np.ndarray, l1: np.ndarray, full_rows: int, dtype: object = None) -> np.ndarray:
    """``InsertNd2Nz``: scatter (:func:`ub_scatter_compact_nz`) then ``post_copy`` into L1 with
    ``nBurst = cols/C0, lenBurst = rows, srcGap = 1, dstGap = full_rows - rows``; ``l1`` ends up MajorK
    with a column-block pitch of ``full_rows`` rows (rows past ``rows`` are not written).

    >>> import numpy as np
    >>> a = np.arange(64, dtype=np.float32).reshape(4, 16)
    >>> l1 = insert_nd2nz(a, np.full(2 * 16 * 8, -1, np.float32), full_rows=16)
    >>> bool(np.array_equal(nz2nd(l1, Nd2NzParams.for_matrix(4, 16))[0], a)), float(l1[4 * 8])
    (True, -1.0)
    """
    rows, cols = src.shape
    if full_rows < rows:
        raise ShapeError(f"insert_nd2nz: full_rows must be >= rows = {rows}; found {full_rows}")
    scratch = ub_scatter_compact_nz(src, dtype)
    c0 = _c0_of(src, dtype)
    return burst_copy(scratch, l1, n_burst=cols // c0, len_burst=rows, src_gap=1, dst_gap=full_rows - rows)


# ---- fractal images: padded logical view <-> canonical storage --------------------------------


def padded_extents(info: FractalInfo) -> tuple[int, int]:
    """(rows, cols) of the padded logical view of one fractal buffer."""
    if info.kind is FractalKind.MAJOR_MN:
        return info.outer0 * info.c0, info.outer1 * ROW_FRACTAL
    if info.kind in (FractalKind.MAJOR_K, FractalKind.L0C):
        return info.outer1 * ROW_FRACTAL, info.outer0 * info.c0
    raise UnsupportedError(f"expected a MAJOR_K, MAJOR_MN or L0C fractal layout; found {info.kind.name}")


def to_storage(padded: np.ndarray, info: FractalInfo) -> np.ndarray:
    """Padded logical ``[..., RP, CP]`` -> canonical storage ``[..., outer0, outer1, 16, C0]``."""
    lead = padded.shape[:-2]
    k, o0, o1, f = info.c0, info.outer0, info.outer1, ROW_FRACTAL
    n = len(lead)
    if info.kind is FractalKind.MAJOR_MN:  # [i//C0, j//16, j%16, i%C0]
        v = padded.reshape(lead + (o0, k, o1, f))
        return v.transpose(tuple(range(n)) + (n, n + 2, n + 3, n + 1))
    v = padded.reshape(lead + (o1, f, o0, k))  # [j//C0, i//16, i%16, j%C0]
    return v.transpose(tuple(range(n)) + (n + 2, n, n + 1, n + 3))


def from_storage(storage: np.ndarray, info: FractalInfo) -> np.ndarray:
    """Canonical storage -> padded logical ``[..., RP, CP]`` (the inverse of :func:`to_storage`)."""
    lead = storage.shape[:-4]
    n = len(lead)
    if info.kind is FractalKind.MAJOR_MN:
        v = storage.transpose(tuple(range(n)) + (n, n + 3, n + 1, n + 2))
    else:
        v = storage.transpose(tuple(range(n)) + (n + 1, n + 2, n, n + 3))
    return v.reshape(lead + padded_extents(info))


def load_l1_to_l0(
    l1: np.ndarray, l1_layout: Layout, l0_layout: Layout, transpose: bool = False, l0: np.ndarray | None = None
) -> np.ndarray:
    """L1 -> L0A/L0B (``LoadData``): every logical element of the L0 buffer is read from L1 (with
    ``transpose``, L0 ``(i, j)`` reads L1 ``(j, i)``, as the MajorMN -> MajorK transposing load does).
    Both images are canonical storage arrays; the L0 fractal padding is copied from the L1 padding when
    the padded views line up, else left as in ``l0`` (new buffers start at 0).

    >>> import numpy as np
    >>> from layoutkit.targets import ascend
    >>> a = np.arange(16 * 32, dtype=np.float16).reshape(16, 32)
    >>> mn = ascend.make_ascend_major_mn_layout((32, 16), "float16")
    >>> nz = ascend.make_ascend_nz_layout((16, 32), "float16")
    >>> l1 = to_storage(np.ascontiguousarray(a.T), ascend.fractal_info(mn))
    >>> l0 = load_l1_to_l0(l1, mn, nz, transpose=True)
    >>> bool(np.array_equal(from_storage(l0, ascend.fractal_info(nz)), a))
    True
    """
    si, di = fractal_info(l1_layout), fractal_info(l0_layout)
    src = from_storage(np.asarray(l1), si)
    if l0 is None:
        l0 = np.zeros(di.storage_shape, dtype=src.dtype)
    if l0.shape != di.storage_shape:
        raise ShapeError(f"load_l1_to_l0: expected an L0 image of shape {di.storage_shape}; found {l0.shape}")
    dst = from_storage(l0, di).copy()
    view = np.swapaxes(src, -1, -2) if transpose else src
    rows, cols = di.rows, di.cols
    if view.shape[-2] < rows or view.shape[-1] < cols:
        raise ShapeError(
            f"load_l1_to_l0: the L1 region {view.shape[-2:]} (after transpose={transpose}) does not cover the "
            f"L0 tile {(rows, cols)}"
        )
    r = min(view.shape[-2], dst.shape[-2])
    c = min(view.shape[-1], dst.shape[-1])
    dst[..., :r, :c] = view[..., :r, :c]
    return np.ascontiguousarray(to_storage(dst, di))


# ---- L0C -> GM (fixpipe) ----------------------------------------------------------------------


def fixpipe_l0c_to_gm(
    l0c: np.ndarray,
    l0c_layout: Layout,
    gm: np.ndarray,
    gm_coord: Sequence[int] = (0, 0),
    valid: Sequence[int] | None = None,
    relu: bool = False,
) -> np.ndarray:
    """The accumulator out: L0C fractals (16x16, any type) -> ND rows of ``gm`` starting at ``gm_coord``,
    converting to ``gm.dtype``; only the ``valid`` (default: whatever fits in ``gm``) block is written.

    >>> import numpy as np
    >>> from layoutkit.targets import ascend
    >>> L = ascend.make_ascend_l0c_layout((16, 32))
    >>> acc = to_storage(np.arange(512, dtype=np.float32).reshape(16, 32), ascend.fractal_info(L))
    >>> gm = np.zeros((20, 20), np.float16)
    >>> _ = fixpipe_l0c_to_gm(acc, L, gm, gm_coord=(10, 4))
    >>> float(gm[10, 4]), float(gm[19, 19]), float(gm[9, 4])
    (0.0, 303.0, 0.0)
    """
    info = fractal_info(l0c_layout)
    if info.kind is not FractalKind.L0C:
        raise UnsupportedError(f"fixpipe_l0c_to_gm expects an L0C layout; found {info.kind.name}")
    acc = from_storage(np.asarray(l0c), info)
    r0, c0 = (int(x) for x in gm_coord)
    vr = min(info.rows, max(gm.shape[-2] - r0, 0))
    vc = min(info.cols, max(gm.shape[-1] - c0, 0))
    if valid is not None:
        vr, vc = min(vr, int(valid[0])), min(vc, int(valid[1]))
    block = acc[..., :vr, :vc]
    if relu:
        block = np.maximum(block, 0)
    gm[..., r0 : r0 + vr, c0 : c0 + vc] = block.astype(gm.dtype)
    return gm


__all__ = [
    "BLOCK_BYTES",
    "Nd2NzParams",
    "nd2nz",
    "nz2nd",
    "nd2nz_matrix",
    "nz2nd_matrix",
    "burst_copy",
    "ub_scatter_compact_nz",
    "insert_nd2nz",
    "to_storage",
    "from_storage",
    "load_l1_to_l0",
    "fixpipe_l0c_to_gm",
]
