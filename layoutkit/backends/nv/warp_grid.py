"""Where the warps of a GEMM accumulator sit: the :class:`WarpGrid` of an inferred ``C_local`` fragment,
checked to be made of ``mma.sync`` m16n8 atoms (the NVIDIA GEMM lowering, :mod:`.lower`, reads it).

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32)
>>> g, regs = warp_grid(infer_layouts(p).layout_map["C_local"], 128)
>>> (g.brw, g.mt, g.nt), regs.shape
((2, 1, 2), (32, 32))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import UnsupportedError
from ...targets.nv.hardware import WARP_SIZE


@dataclass(frozen=True)
class WarpGrid:
    """Where each warp's m16n8 accumulator atoms sit: warp ``w`` owns the atoms at rows
    ``(w % brw) * row_step + mi * mi_stride`` (``mi < mt``) and columns ``(w // brw) * col_step + nj * nj_stride``
    (``nj < nt``), in elements.  The mma.sync layout has contiguous warp tiles (``mi_stride = 16``); a wgmma
    accumulator (4 warps stacked along M per warpgroup) interleaves them (``mi_stride = 64``)."""

    brw: int
    row_step: int
    mi_stride: int
    mt: int
    col_step: int
    nj_stride: int
    nt: int


def _progression(values, unit: int, what: str) -> int:
    """The stride of the arithmetic progression ``values`` (``unit`` when there is one value)."""
    v = np.asarray(sorted(values))
    step = int(v[1] - v[0]) if v.size > 1 else unit
    if not np.array_equal(v, v[0] + step * np.arange(v.size)):
        raise UnsupportedError(f"gemm lowering: the {what} of a warp's accumulator atoms {v.tolist()} are not evenly "
                               "spaced")
    return step


def warp_grid(C, threads) -> tuple[WarpGrid, np.ndarray]:
    """The warp grid of the accumulator fragment (checked against the whole thread and register tables: every
    16 x 8 atom is one warp's m16n8 mma.sync accumulator, registers grouped by atom) and its register table."""
    M, N = C.input_shape
    tt = np.asarray(C.thread_table())[0]
    i, j = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    lane = 4 * (i % 8) + (j % 8) // 2
    idx = np.asarray(C.index_table())
    base = idx[(i // 16) * 16, (j // 8) * 8]
    bad = (M % 16 or N % 8 or not np.array_equal(tt % WARP_SIZE, lane)
           or not np.array_equal(tt // WARP_SIZE, (tt // WARP_SIZE)[(i // 16) * 16, (j // 8) * 8]))
    if bad or not np.array_equal(idx, base + 2 * ((i % 16) // 8) + j % 2):
        raise UnsupportedError(f"gemm lowering: the accumulator {C.describe()} is not made of mma.sync m16n8 atoms "
                               "(registers grouped by atom)")
    warp = (tt // WARP_SIZE)[::16, ::8]  # [M/16, N/8] atom owner
    nw = threads // WARP_SIZE
    r0, c0 = np.nonzero(warp == 0)
    rows0, cols0 = sorted(set(r0.tolist())), sorted(set(c0.tolist()))
    mi_stride = 16 * _progression(rows0, 1, "rows")
    nj_stride = 8 * _progression(cols0, 1, "columns")
    origin = {}
    for w in range(nw):
        r, c = np.nonzero(warp == w)
        if r.size == 0:
            raise UnsupportedError(f"gemm lowering: warp {w} of {nw} holds no accumulator atom")
        origin[w] = (16 * int(r.min()), 8 * int(c.min()))
    brw = len({o[0] for o in origin.values()})
    row_step = origin[1 % nw][0] if brw > 1 else 0
    col_step = origin[brw % nw][1] if nw > brw else 0
    g = WarpGrid(brw, row_step, mi_stride, len(rows0), col_step, nj_stride, len(cols0))
    # the whole owner table from the grid
    ai, aj = np.meshgrid(np.arange(M // 16), np.arange(N // 8), indexing="ij")
    want = np.full(warp.shape, -1)
    regs = np.zeros((nw, g.mt, g.nt), np.int64)  # register offset of each warp's atom (mi, nj)
    for w in range(nw):
        rr = (w % brw) * row_step + np.arange(g.mt) * mi_stride
        cc = (w // brw) * col_step + np.arange(g.nt) * nj_stride
        if rr.max() >= M or cc.max() >= N:
            break
        want[np.ix_(rr // 16, cc // 8)] = w
        regs[w] = idx[np.ix_(rr, cc)]
    if (nw % brw or not np.array_equal(want, warp) or g.mt * g.nt * nw * 128 != M * N
            or not np.array_equal(regs, np.broadcast_to(regs[0], regs.shape))):
        raise UnsupportedError(f"gemm lowering: the accumulator {C.describe()} does not give each warp a grid of "
                               "evenly spaced atoms at the same register offsets")
    return g, idx
