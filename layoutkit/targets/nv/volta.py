"""Volta (sm_70, ``mma.sync.m16n16k4``) register fragments (TileLang's sm_70 ``TensorCoreIntrinEmitter``).

Atoms are 16x16 accumulators over 32 lanes (8 registers each) and 16x4 / 4x16 operand tiles held by
two quads each (replicate 2).  Only fp16 operands exist on Volta.

>>> F = make_volta_store_layout(2, 2, 32, 32)
>>> F.input_shape, F.thread_extent, F.local_size
((64, 64), 128, 32)
>>> print(make_volta_store_layout(1, 1, 16, 16, accum_dtype="float16").forward_thread)
_i % 8 // 4 * 16 + _j % 8 // 4 * 8 + _i // 8 * 4 + _i % 4
"""

from __future__ import annotations

from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .hardware import WARP_SIZE
from .mma import _positive_int

MS = 16
K = 4


def _tiles(warp_row_tiles: int, warp_col_tiles: int) -> tuple[int, int]:
    wrt = _positive_int(warp_row_tiles, "warp_row_tiles")
    wct = _positive_int(warp_col_tiles, "warp_col_tiles")
    if wrt % MS or wct % MS:
        raise ShapeError(f"Volta MMA needs warp tiles that are multiples of 16; found {wrt} x {wct}")
    return wrt // MS, wct // MS


_KNOWN = ("float16", "bfloat16", "float32", "int8", "int32", "float8_e4m3", "float8_e5m2")


def _known(dtype: object) -> str:
    name = canonical_dtype(dtype)
    if name not in _KNOWN:
        raise UnsupportedError(f"the sm_70 MMA emitter does not know {name}; expected one of {_KNOWN}")
    return name


def make_volta_store_layout(
    block_row_warps: int, block_col_warps: int, warp_row_tiles: int, warp_col_tiles: int, *,
    dtype: object = "float16", accum_dtype: object = "float32",
) -> Fragment:
    """The sm_70 accumulator fragment (the fp32 and fp16 accumulators differ)."""
    _known(dtype)
    brw = _positive_int(block_row_warps, "block_row_warps")
    _positive_int(block_col_warps, "block_col_warps")
    wr, wc = _tiles(warp_row_tiles, warp_col_tiles)
    fp32 = _known(accum_dtype) == "float32"

    def lane_local(i, j):
        r, c = i % MS, j % MS
        if fp32:
            lane = r % 2 + 2 * (c // 2 % 2) + 4 * (r // 8) + 8 * (c // 4 % 2) + 16 * (r // 4 % 2)
            return lane, c % 2 + 2 * (r // 2 % 2) + 4 * (c // 8)
        return r % 4 + 4 * (r // 8) + 8 * (c // 4 % 2) + 16 * (r // 4 % 2), c % 4 + 4 * (c // 8)

    def thread(i, j):
        bi, bj = (i // MS) // wr, (j // MS) // wc
        return bj * (brw * WARP_SIZE) + bi * WARP_SIZE + lane_local(i, j)[0]

    def index(i, j):
        return ((i // MS) % wr) * (wc * 8) + ((j // MS) % wc) * 8 + lane_local(i, j)[1]

    shape = [brw * int(warp_row_tiles), int(block_col_warps) * int(warp_col_tiles)]
    return Fragment(shape, forward_thread_fn=thread, forward_index_fn=index)


def make_volta_load_layout(
    operand: str, dtype: object, block_row_warps: int, block_col_warps: int, warp_row_tiles: int,
    warp_col_tiles: int, chunk: int, transposed: bool = False,
) -> Fragment:
    """The sm_70 operand fragment: A ``[M, K]`` (not transposed) or B ``[N, K]`` (transposed).

    TileLang builds only these two (its other two atom calls drop the replica argument and fail).
    """
    op = str(operand).upper()
    if op not in ("A", "B"):
        raise ShapeError(f"operand must be 'A' or 'B'; found {operand!r}")
    if _known(dtype) and element_bits(dtype) != 16:
        raise UnsupportedError(f"Volta MMA takes 16-bit operands; found {canonical_dtype(dtype)}")
    if (op == "A") == bool(transposed):
        raise UnsupportedError(
            f"TileLang 0.1.15 has no sm_70 register layout for {op}{' transposed' if transposed else ''}; "
            "expected A not transposed or B transposed"
        )
    brw = _positive_int(block_row_warps, "block_row_warps")
    bcw = _positive_int(block_col_warps, "block_col_warps")
    wr, wc = _tiles(warp_row_tiles, warp_col_tiles)
    chunk = _positive_int(chunk, "chunk")

    if op == "A":
        def atom(r, c, rep):
            return (r % 4) + 16 * ((r // 4) % 2) + 4 * (r // 8) + 8 * rep, c
    else:
        def atom(r, c, rep):
            return r % 4 + 4 * rep + 8 * ((r % 8) // 4) + 16 * (r // 8), c

    base = Fragment([MS, K], forward_fn=atom, replicate=2)
    warp = base.repeat([wr if op == "A" else wc, chunk // K], repeat_on_thread=False, lower_dim_first=False)
    if op == "A":
        return warp.repeat([brw, 1], repeat_on_thread=True, lower_dim_first=True).replicate(bcw)
    return warp.replicate(brw).repeat([bcw, 1], repeat_on_thread=True, lower_dim_first=True)
