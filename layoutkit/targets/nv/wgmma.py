"""Hopper warp-group MMA (WGMMA) register fragments (TileLang's WGMMA ``TensorCoreIntrinEmitter``).

The accumulator is the MMA store atom repeated as TileLang does: along N inside a warp, four M warps
per warp group (64 rows), warp-group M atoms as consecutive registers, whole warp groups along M, then
the column warps: ``warp = warp_m + block_row_warps * warp_n``.  ``block_row_warps`` must be a
multiple of 4.

>>> F = make_wgmma_store_layout(4, 1, 16, 64)
>>> F.input_shape, F.thread_extent, F.local_size
((64, 64), 128, 32)
>>> print(F.forward_thread)
_i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2
"""

from __future__ import annotations

from math import gcd

from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .mma import MmaAtom, _config, _positive_int

WARP_GROUP = 4


def wgmma_inst_n(warp_col_tiles: int) -> int:
    """Widest legal WGMMA ``N`` (a multiple of 16 up to 256, or ``gcd(N, 256)``) tiling the warp columns.

    >>> wgmma_inst_n(96), wgmma_inst_n(24)
    (96, 8)
    """
    n = _positive_int(warp_col_tiles, "warp_col_tiles")
    fallback = gcd(n, 256)
    if n % 16 == 0:
        for cand in range(256, fallback, -16):
            if n % cand == 0:
                return cand
    return fallback


def _check_inst_n(wct: int) -> None:
    n = wgmma_inst_n(wct)
    if n % 8 or not 8 <= n <= 256:
        raise ShapeError(f"WGMMA needs an instruction N in [8, 256], a multiple of 8; warp_col_tiles {wct} gives {n}")


def make_wgmma_store_layout(
    block_row_warps: int, block_col_warps: int, warp_row_tiles: int, warp_col_tiles: int, *,
    dtype: object = "float16", chunk: int = 16,
) -> Fragment:
    """The WGMMA accumulator fragment ``[brw*warp_row_tiles, bcw*warp_col_tiles]``."""
    brw = _positive_int(block_row_warps, "block_row_warps")
    bcw = _positive_int(block_col_warps, "block_col_warps")
    cfg = _config(dtype, warp_row_tiles, warp_col_tiles, chunk, "sm_90")
    _check_inst_n(int(warp_col_tiles))
    if brw % WARP_GROUP:
        raise ShapeError(f"WGMMA needs block_row_warps to be a multiple of {WARP_GROUP}; found {brw}")
    ms_x, ms_y = cfg.ms_x, cfg.ms_y

    def lane(i, j):
        return 4 * (i % 8) + (j % 8) // 2

    def local(i, j):
        return 4 * (j // 8) + 2 * (i // 8) + j % 2

    base = Fragment([ms_x, ms_y], forward_thread_fn=lane, forward_index_fn=local)
    layout = base.repeat([1, cfg.warp_cols], False, False)
    layout = layout.repeat([WARP_GROUP, 1], True, False)
    layout = layout.repeat([cfg.warp_rows, 1], False, False)
    layout = layout.repeat([brw // WARP_GROUP, 1], True, False)
    return layout.repeat([1, bcw], True, False)


def make_wgmma_load_layout(
    dtype: object, block_row_warps: int, block_col_warps: int, warp_row_tiles: int, warp_col_tiles: int,
    chunk: int, transposed: bool = False,
) -> Fragment:
    """The register fragment of a WGMMA ``A`` operand (``T.gemm`` with A in registers on sm_90)."""
    brw = _positive_int(block_row_warps, "block_row_warps")
    bcw = _positive_int(block_col_warps, "block_col_warps")
    cfg = _config(dtype, warp_row_tiles, warp_col_tiles, chunk, "sm_90")
    _check_inst_n(int(warp_col_tiles))
    bits = element_bits(dtype)
    if bits not in (8, 16, 32):
        raise UnsupportedError(f"no WGMMA register layout for {canonical_dtype(dtype)} operands")
    atom = MmaAtom(f"m{cfg.ms_x}k{cfg.ms_k}", bits, cfg.ms_k)
    ms_s, ms_k = cfg.ms_x, cfg.ms_k
    warp_r = int(chunk) // ms_k
    if not transposed:
        base = Fragment([ms_s, ms_k], forward_thread_fn=atom.lane, forward_index_fn=lambda s, k: atom.local("A", s, k))
        warp = base.repeat([brw, 1], repeat_on_thread=True, lower_dim_first=False).replicate(bcw)
        return warp.repeat([cfg.warp_rows, warp_r], repeat_on_thread=False, lower_dim_first=False)
    base = Fragment([ms_k, ms_s], forward_thread_fn=lambda k, s: atom.lane(s, k),
                    forward_index_fn=lambda k, s: atom.local("A", s, k))
    warp = base.repeat([1, brw], repeat_on_thread=True, lower_dim_first=False).replicate(bcw)
    return warp.repeat([warp_r, cfg.warp_rows], repeat_on_thread=False, lower_dim_first=True)
