"""NV layouts over a symbolic row count (parametric layouts and fragments), each proved for every
admissible value of the symbols.

* Shared memory: TileLang's 32B / 64B / 128B (quarter / half / full bank) swizzles over ``R`` rows
  (``R % 8 == 0``), and over a symbolic column count too.
* TileLang's padded operand layout (``make_padded_layout``) over ``R`` rows: injective for every
  ``R``, a bijection only for one row when the rows are padded.
* Registers: the MMA accumulator fragment (``make_mma_store_layout``) over ``M`` rows, in either warp
  order, and the Hopper WGMMA accumulator (``make_wgmma_store_layout``).

>>> from layoutkit.algebra.parametric import Symbol
>>> R = Symbol("R", lo=8, multiple=8)
>>> L = make_parametric_bank_swizzled_layout("full", R, 128, "float16")
>>> bool(L.prove_bijective()), L.apply((9, 70), {"R": 32})
(True, 2638)
>>> M = Symbol("M", lo=32, multiple=32)
>>> C = make_parametric_mma_store_layout(M, 2, 2, 32)        # 2x2 warps, 32 columns a warp
>>> bool(C.prove_bijective()), C.thread_extent(), C.local_size()
(True, 128, M/2)
"""

from __future__ import annotations

from ...algebra.parametric import ParametricLayout, Symbol
from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError, UnsupportedError
from ...fragment.parametric import ParametricFragment
from .hardware import WARP_SIZE
from .mma import _config, _positive_int, make_mma_store_layout
from .swizzle import _PER, make_bank_swizzled_layout, make_padded_layout
from .wgmma import WARP_GROUP, _check_inst_n


def make_parametric_bank_swizzled_layout(kind: str, rows: Symbol, cols: int | Symbol,
                                         dtype: object) -> ParametricLayout:
    """The ``kind`` (``"quarter" | "half" | "full"``: 32B, 64B, 128B) bank swizzle of a ``[rows, cols]``
    buffer whose row count is a symbol: TileLang's formula with its linearized outputs, ``atom(i % 8,
    j % W) + (i // 8) * 8W + (j // W) * rows * W`` (``W = per * 128 / bits``).  ``rows`` must be a
    multiple of 8 for every admissible value (the swizzle's xor period); ``cols`` an int multiple of
    ``W`` or a Symbol whose values are.

    >>> C = Symbol("C", lo=64, multiple=64)
    >>> L = make_parametric_bank_swizzled_layout("full", Symbol("R", lo=8, multiple=8), C, "float16")
    >>> bool(L.prove_bijective()), L.size()
    (True, C*R)
    """
    if kind not in _PER:
        raise ShapeError(f"kind must be one of {sorted(_PER)}; found {kind!r}")
    if not isinstance(rows, Symbol) or rows.multiple % 8:
        raise ShapeError(f"rows must be a Symbol whose values are multiples of 8 (multiple=8); found {rows!r}")
    width = _PER[kind] * (128 // element_bits(dtype))
    what = f"a {kind} swizzle of {canonical_dtype(dtype)} needs cols a multiple of {width}"
    if isinstance(cols, Symbol):
        if cols.multiple % width:
            raise ShapeError(f"{what} for every value (multiple={width}); found {cols!r}")
        symbols: tuple[Symbol, ...] = (rows, cols)
        col_tiles = cols.sym / width
    elif cols % width:
        raise ShapeError(f"{what}; found {cols}")
    else:
        symbols, col_tiles = (rows,), cols // width
    atom = make_bank_swizzled_layout((8, width), dtype, kind)
    return ParametricLayout(symbols, atom, (rows.sym / 8, col_tiles), (8 * width, rows.sym * width))


def make_parametric_padded_layout(rows: Symbol, cols: int, dtype: object) -> ParametricLayout:
    """TileLang's padded layout ``i * P + j`` of a ``[rows, cols]`` buffer over a symbolic row count, the
    pitch ``P`` that of :func:`~layoutkit.targets.nv.make_padded_layout` (``cols + 128/bits`` when a
    row is a multiple of 256 bits, else ``cols``).

    >>> L = make_parametric_padded_layout(Symbol("R"), 64, "float16")
    >>> bool(L.prove_injective()), L.prove_bijective().witness["values"]
    (True, {'R': 2})
    """
    if not isinstance(rows, Symbol):
        raise ShapeError(f"rows must be a Symbol; found {rows!r}")
    return ParametricLayout((rows,), None, (rows, cols), (_pitch(cols, dtype), 1))


def _pitch(cols: int, dtype: object) -> int:
    """The row pitch of TileLang's padded layout: the offset of ``(1, 0)`` in a two-row buffer."""
    return int(make_padded_layout((2, cols), dtype).map_forward_index([1, 0])[0])


def make_parametric_mma_store_layout(
    rows: Symbol,
    block_row_warps: int,
    block_col_warps: int,
    warp_col_tiles: int,
    *,
    dtype: object = "float16",
    arch: str | int = "sm_80",
    chunk: int | None = None,
    warp_order: str = "layoutkit",
) -> ParametricFragment:
    """The accumulator fragment of :func:`~layoutkit.targets.nv.make_mma_store_layout` over ``rows`` (a
    Symbol ``M``: ``warp_row_tiles = M / block_row_warps``) rows and ``block_col_warps *
    warp_col_tiles`` columns.  ``rows`` must be a multiple of ``16 * block_row_warps`` (of the atom's
    rows, 8 for float64) for every admissible value, as TileLang's emitter requires.

    ``warp_order="layoutkit"``: one warp tile atom ``[ms_x, warp_col_tiles]`` (thread = lane, index =
    ``wj*L + local``); the row quotient ``i // ms_x`` splits into ``M / (ms_x*brw)`` register repeats
    (index stride ``warp_cols*L``) then ``brw`` warps (thread stride 32); the column quotient ``j //
    warp_col_tiles`` into ``bcw`` warps (thread stride ``32*brw``).  ``"triton"``: the 16x8 instruction
    atom; rows split into ``brw`` warps (thread ``32*bcw``) then ``M/(16*brw)`` repeats (index ``4 *
    warp_col_tiles/8``); columns into ``bcw`` warps (thread 32) then ``warp_col_tiles/8`` repeats (index 4).

    >>> M = Symbol("M", lo=16, multiple=16)
    >>> C = make_parametric_mma_store_layout(M, 1, 1, 16)
    >>> C.bind({"M": 32}).is_equal(make_mma_store_layout(1, 1, 32, 16))
    True
    """
    brw = _positive_int(block_row_warps, "block_row_warps")
    bcw = _positive_int(block_col_warps, "block_col_warps")
    wct = _positive_int(warp_col_tiles, "warp_col_tiles")
    if chunk is None:
        chunk = 16 if element_bits(dtype) != 64 else 4
    cfg = _config(dtype, 16, wct, chunk, arch)
    if warp_order not in ("layoutkit", "triton"):
        raise ShapeError(f"warp_order must be 'layoutkit' or 'triton'; found {warp_order!r}")
    if warp_order == "triton" and cfg.ms_x != 16:
        raise UnsupportedError(f"warp_order='triton' builds m16n8 accumulators; this configuration uses a "
                               f"{cfg.ms_x}x{cfg.ms_y} atom ({canonical_dtype(dtype)})")
    ms_x = cfg.ms_x
    if not isinstance(rows, Symbol) or rows.multiple % (ms_x * brw):
        raise ShapeError(f"rows must be a Symbol whose values are multiples of {ms_x} * block_row_warps = "
                         f"{ms_x * brw} (multiple={ms_x * brw}); found {rows!r}")
    m = rows.sym
    if warp_order == "layoutkit":
        atom = make_mma_store_layout(1, 1, ms_x, wct, dtype=dtype, arch=arch, chunk=chunk)
        return ParametricFragment((rows,), atom, ((m / (ms_x * brw), brw), bcw),
                                  ((0, WARP_SIZE), WARP_SIZE * brw), ((atom.local_size, 0), 0))
    atom = make_mma_store_layout(1, 1, 16, 8, dtype=dtype, arch=arch, chunk=chunk, warp_order="triton")
    return ParametricFragment((rows,), atom, ((brw, m / (16 * brw)), (bcw, wct // 8)),
                              ((WARP_SIZE * bcw, 0), (WARP_SIZE, 0)), ((0, 4 * (wct // 8)), (0, 4)))


def make_parametric_wgmma_store_layout(
    rows: Symbol, block_row_warps: int, block_col_warps: int, warp_col_tiles: int, *,
    dtype: object = "float16", chunk: int = 16,
) -> ParametricFragment:
    """The WGMMA accumulator of :func:`~layoutkit.targets.nv.make_wgmma_store_layout` over ``rows`` (a
    Symbol ``M``, ``warp_row_tiles = M / block_row_warps``; ``block_row_warps`` a multiple of 4): the
    warp tile atom ``[ms_x, warp_col_tiles]``, then the row quotient ``i // ms_x`` split into 4 warps
    of a group (thread stride 32), ``M / (ms_x*brw)`` register repeats (index stride ``warp_cols*L``)
    and ``brw/4`` warp groups (thread stride 128); the column quotient into ``bcw`` warps (``32*brw``).

    >>> C = make_parametric_wgmma_store_layout(Symbol("M", lo=64, multiple=64), 4, 1, 64)
    >>> bool(C.prove_bijective()), C.thread_extent(), C.local_size()
    (True, 128, M/2)
    """
    brw = _positive_int(block_row_warps, "block_row_warps")
    bcw = _positive_int(block_col_warps, "block_col_warps")
    wct = _positive_int(warp_col_tiles, "warp_col_tiles")
    if brw % WARP_GROUP:
        raise ShapeError(f"WGMMA needs block_row_warps to be a multiple of {WARP_GROUP}; found {brw}")
    _check_inst_n(wct)
    ms_x = _config(dtype, 16, wct, chunk, "sm_90").ms_x
    if not isinstance(rows, Symbol) or rows.multiple % (ms_x * brw):
        raise ShapeError(f"rows must be a Symbol whose values are multiples of {ms_x} * block_row_warps = "
                         f"{ms_x * brw} (multiple={ms_x * brw}); found {rows!r}")
    atom = make_mma_store_layout(1, 1, ms_x, wct, dtype=dtype, arch="sm_90", chunk=chunk)
    reps = ((WARP_GROUP, rows.sym / (ms_x * brw), brw // WARP_GROUP), bcw)
    threads = ((WARP_SIZE, 0, WARP_SIZE * WARP_GROUP), WARP_SIZE * brw)
    return ParametricFragment((rows,), atom, reps, threads, ((0, atom.local_size, 0), 0))


__all__ = ["make_parametric_bank_swizzled_layout", "make_parametric_padded_layout", "make_parametric_mma_store_layout",
           "make_parametric_wgmma_store_layout"]
