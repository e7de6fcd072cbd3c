"""numpy executor of the sm_90 wgmma GEMM (:class:`.hopper.HopperGemm`): it runs the kernel
:func:`.hopper_cuda.print_module` prints for the plan, every block at once, stage by stage.

What it models, as the printed kernel does it:

* the shared memory is one byte array per block laid out as :func:`.hopper.shared_layout` says; each k tile's
  TMA loads (:func:`tma_load`) write one box per swizzle chunk (``chunk x rows`` elements) at the stage's
  byte address, the tensor map's swizzle applied to the shared address, zeros for elements outside the
  tensor (the tails);
* each ``wgmma.mma_async`` reads its operands through the 64-bit descriptors the printer writes
  (:func:`.hopper_cuda.descriptor_highs` or'ed with the stage's start address, plus the tile's offset in
  16-byte units), decoded field by field (:func:`operand_addresses`: start address, leading / stride byte
  offsets, swizzle mode, the K-major or MN-major canonical layout the printed transpose bit selects), so a
  wrong descriptor reads wrong bytes here as on the GPU; the operand bytes are decoded as the printed
  operand type (fp16, bf16, or fp8 through :func:`~layoutkit.dtypes.from_fp8`) and the products accumulate in
  fp32 into the consumer threads' registers through the PTX D fragment (:func:`.hopper.d_fragment`: lane
  ``l`` of warp ``w``, register ``r`` at row ``16 w + l / 4 + 8 (r / 2 % 2)``, column
  ``8 (r / 4) + 2 (l % 4) + r % 2``) at the register offsets of the plan's consumer tiles;
* the epilogue is the plan's own statements on the consumer threads, run by the IR executor
  (:func:`.execute.run`: guarded register stores for the tails, reductions, barriers), with the
  :class:`~.hopper.TmaStore` run here (:func:`tma_store`): the D fragments into the swizzled staging tile,
  then one TMA box per chunk to the output, nothing written outside the tensor.

Synchronisation (mbarrier phases, wgmma groups, fences) is not modelled: the stages run in program order,
which is what the printed pipeline computes when its barriers are right (the CPU harness of
:mod:`layoutkit.testing.cuda_cpu` checks those); the printer's knobs for them are ignored here.

Law: ``run(plan(p, r), arrays)`` equals ``A @ B`` (up to fp32 summation order) for every plan the lowering
gives, and a knob that changes a printed descriptor, transpose bit, operand type or tensor-map swizzle changes
the numbers as it changes the kernel.

>>> import numpy as np
>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.nv import hopper
>>> p = programs.gemm(M=128, N=64, K=64, bM=64, bN=64, bK=32, threads=128, num_stages=2, target="sm_90a")
>>> h = hopper.plan(p, infer_layouts(p))
>>> a = np.ones((128, 64), np.float16); b = np.ones((64, 64), np.float16)
>>> float(run(h, {"A": a, "B": b})["C"].reshape(128, 64)[127, 63])
64.0
"""

from __future__ import annotations

import functools

import numpy as np

from ...dtypes import FP8_FORMATS, from_bf16, from_fp8, to_bf16
from ...errors import CodegenInputError, CoordinateError, DtypeError, UnsupportedError
from ...scopes import GLOBAL
from . import ir
from .execute import np_dtype
from .execute import run as run_ir
from .hopper import WG, HopperGemm, OperandTile, TmaStore, d_fragment, operand_offsets, shared_layout, swizzle
from .hopper_cuda import Knobs, descriptor_highs, map_spans, operand_type, transpose_b

SPAN_OF_MODE = {1: 128, 2: 64, 3: 32}
"""The wgmma descriptor's swizzle field (bits 62-63) -> its span in bytes (0, no swizzle, is absent)."""
_TYPES = {"f16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3", "e5m2": "float8_e5m2"}
"""Printed wgmma operand types -> the dtype whose codes they read."""


def _swizzled(addr: np.ndarray, span: int) -> np.ndarray:
    return swizzle(addr, span) if span else addr


def operand_addresses(desc: int, mn_major: bool, rows: int, k: int, eb: int) -> np.ndarray:
    """Shared byte address of byte ``e`` of element ``(row, k)`` of a wgmma operand read through descriptor
    ``desc`` (rows: M of A, N of B; ``k`` elements of ``eb`` bytes), ``[rows, k, eb]``: the PTX ISA's canonical
    layouts.  K-major: 8-row groups ``stride`` bytes apart, rows ``span`` bytes apart (the leading offset is
    unused), or without swizzle 8 x 16-byte core matrices, ``leading`` bytes apart along K; MN-major (16-bit
    only): chunks of ``span`` bytes along M/N ``leading`` bytes apart, 8-row groups of K ``stride`` apart.  The
    swizzle XORs the absolute address, as the hardware does.

    >>> operand_addresses(0x4000004000010000 | (1024 >> 4), False, 64, 16, 2)[9, 3].tolist()
    [2198, 2199]
    """
    start, lbo, sbo = (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
    if (desc >> 49) & 7:
        raise UnsupportedError(f"wgmma descriptor {desc:#018x}: a base offset {(desc >> 49) & 7} is not modelled")
    span = SPAN_OF_MODE.get(desc >> 62, 0)
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    kb = kk * eb
    if not mn_major:
        if span:
            addr = _swizzled(start + (r // 8) * sbo + (r % 8) * span + kb, span)
        else:
            addr = start + (r // 8) * sbo + (r % 8) * 16 + (kb // 16) * lbo + kb % 16
    else:
        if eb != 2:
            raise UnsupportedError(f"wgmma: an MN-major operand of {eb}-byte elements (the PTX ISA transposes 16-bit "
                                   "ones only)")
        if not span:
            raise UnsupportedError("wgmma: an MN-major operand without swizzle is not modelled")
        e = span // 2
        addr = _swizzled(start + (r // e) * lbo + (kk // 8) * sbo + (kk % 8) * span + (r % e) * 2, span)
    return addr[..., None] + np.arange(eb)


def _values(codes: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values of little-endian operand bytes ``[..., eb]`` read as ``dtype``."""
    if dtype in FP8_FORMATS:
        return from_fp8(codes[..., 0], dtype)
    bits = np.ascontiguousarray(codes).view(np.uint16)[..., 0]
    return from_bf16(bits) if dtype == "bfloat16" else bits.view(np.float16).astype(np.float32)


def _bytes(array: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The ``[rows, cols]`` tensor as ``[rows, cols, element bytes]`` (little-endian, as in global memory)."""
    a = np.ascontiguousarray(array).reshape(rows, cols)
    return a.view(np.uint8).reshape(rows, cols, a.itemsize)


def tma_load(smem: np.ndarray, glob: np.ndarray, tile: OperandTile, dst: int, inner0, outer0, span: int) -> None:
    """The TMA loads of one stage of ``tile`` for every block: box ``c`` (``chunk`` elements of the contiguous
    dim by ``rows``) at global ``(outer0 + y, inner0 + c chunk + x)`` of ``glob`` (``[outer, inner, bytes]``)
    lands at shared byte ``dst + c chunk_bytes + y * box row bytes + x * bytes``, swizzled with the tensor
    map's ``span``; elements outside the tensor land as zeros.  ``inner0`` / ``outer0``: per block."""
    G = smem.shape[0]
    eb = tile.bits // 8
    inner = tile.chunk * eb
    if span and inner != span:
        raise UnsupportedError(f"TMA box rows of {inner} bytes under a {span}-byte swizzle are not modelled")
    y = np.arange(tile.rows)
    x = np.arange(tile.chunk)
    outer0 = np.broadcast_to(outer0, (G,))
    for c in range(tile.cols // tile.chunk):
        gy = outer0[:, None] + y  # [G, rows]
        gx = np.broadcast_to(inner0, (G,))[:, None] + c * tile.chunk + x  # [G, chunk]
        ok = (gy < glob.shape[0])[:, :, None] & (gx < glob.shape[1])[:, None, :]
        vals = glob[np.minimum(gy, glob.shape[0] - 1)[:, :, None], np.minimum(gx, glob.shape[1] - 1)[:, None, :]]
        vals = np.where(ok[..., None], vals, 0)
        addr = dst + c * tile.chunk_bytes + y[:, None, None] * inner + x[None, :, None] * eb + np.arange(eb)
        smem[:, _swizzled(addr, span)] = vals


def _narrow(x: np.ndarray, dtype: str) -> np.ndarray:
    return to_bf16(x) if dtype == "bfloat16" else x.astype(np_dtype(dtype))


def _wide(x: np.ndarray, dtype: str) -> np.ndarray:
    return from_bf16(x) if dtype == "bfloat16" else x.astype(np.float32)


def tma_store(h: HopperGemm, knobs: Knobs, s, st: TmaStore) -> None:
    """The :class:`~.hopper.TmaStore` ``st`` on the IR executor's state ``s`` (every block): each consumer
    warp group's D fragments (``st.src`` registers at the plan's tile offsets) into the staging tile at the
    tile's swizzled offsets, then one TMA box per chunk of N (``chunk`` x ``bM``) to the output, read back
    through the output map's swizzle; elements outside ``[M, N]`` are not written."""
    G, T = s.blocks, s.T
    t_ = st.tile
    eb = t_.bits // 8
    regs = s.mem[st.src].reshape(G, T, -1)
    src_dt = s.buffers[st.src].dtype
    stage = s.mem[t_.buffer]
    at = t_.offsets() // eb  # [bM, bN] element of the staging tile
    for g, tiles in enumerate(h.tiles):
        for t in tiles:
            drow, dcol = d_fragment(t.n)
            vals = regs[:, g * WG + np.arange(WG)[:, None], t.reg + np.arange(t.n // 2)[None, :]]
            stage[:, at[t.m0 + drow, t.n0 + dcol]] = _narrow(_wide(vals, src_dt), st.dtype)
    span = t_.span if knobs.store.map_swizzle is None else knobs.store.map_swizzle
    gx, _ = h.grid
    blk = np.arange(G)
    bx, by = blk % gx, blk // gx
    y = np.arange(st.bM)[:, None]
    x = np.arange(t_.chunk)[None, :]
    dst = s.mem[st.dst]
    for c in range(st.boxes):
        src = _swizzled(c * t_.chunk_bytes + y * t_.chunk * eb + x * eb, span) // eb  # [bM, chunk]
        row = by[:, None, None] * st.bM + y
        col = bx[:, None, None] * st.bN + c * t_.chunk + x
        ok = (row < st.M) & (col < st.N)
        blocks = np.broadcast_to(blk[:, None, None], ok.shape)
        dst[(row * st.N + col)[ok]] = stage[blocks[ok], np.broadcast_to(src, ok.shape)[ok]]


def _checked(h: HopperGemm, arrays: dict) -> dict:
    """Flat copies of the global arrays, each with its element count and storage dtype; the operands must be
    given, other globals (the outputs) not given start at zero."""
    out = {}
    for b in h.buffers:
        if b.scope != GLOBAL:
            continue
        want = np.dtype(np_dtype(b.dtype) if b.dtype not in FP8_FORMATS else np.uint8)
        if b.name not in arrays and b.name not in (h.A, h.B):
            out[b.name] = np.zeros(b.size, want)
            continue
        if b.name not in arrays:
            raise CodegenInputError(f"executor: kernel {h.name} has no array for parameter {b.name} ({b.size} x "
                                    f"{b.dtype}); given {sorted(arrays)}", b.name)
        a = np.asarray(arrays[b.name])
        if a.size != b.size or a.dtype != want:
            raise DtypeError(f"executor: parameter {b.name} is {a.dtype} x {a.size}; kernel {h.name} expects {want} "
                             f"x {b.size} (the storage of {b.dtype})")
        out[b.name] = np.ascontiguousarray(a).reshape(-1).copy()
    return out


def run(h: HopperGemm, arrays: dict, knobs: Knobs | None = None) -> dict:
    """Run the kernel :func:`.hopper_cuda.print_module` prints for ``h`` and ``knobs`` (see the module doc;
    ``None``: the plain kernel) on copies of ``arrays`` (global name -> array with the parameter's element
    count and storage dtype: ``bfloat16`` as ``uint16``, fp8 as ``uint8`` codes; globals other than A and B
    not given start at zero); returns every global, flat."""
    knobs = Knobs() if knobs is None else knobs
    mem = _checked(h, arrays)
    gx, gy = h.grid
    G = gx * gy
    blk = np.arange(G)
    bx, by = blk % gx, blk // gx
    lay = shared_layout(h)
    smem = np.zeros((G, lay["total"]), np.uint8)
    a_glob = _bytes(mem[h.A], h.M, h.K)
    b_glob = _bytes(mem[h.B], *((h.N, h.K) if h.tb else (h.K, h.N)))
    a_span, b_span = map_spans(h, knobs)
    hi_a, hi_b = descriptor_highs(h, knobs)
    mn_b = transpose_b(h, knobs) == 1
    ty = operand_type(h, knobs)
    if ty not in _TYPES:
        raise UnsupportedError(f"executor: wgmma operand type {ty!r}; expected one of {sorted(_TYPES)}")
    T = WG * h.consumers
    acc = next(b for b in h.buffers if b.name == h.C)
    regs = np.full((G, T, acc.size), h.fill, np.float32)
    eb = h.a.bits // 8
    for ko in range(h.kt):
        s = ko % h.stages
        a_base, b_base = lay["A_s"] + s * h.a.stage_bytes, lay["B_s"] + s * h.b.stage_bytes
        tma_load(smem, a_glob, h.a, a_base, ko * h.bK, by * h.bM, a_span)
        b_inner, b_outer = (ko * h.bK, bx * h.bN) if h.tb else (bx * h.bN, ko * h.bK)
        tma_load(smem, b_glob, h.b, b_base, b_inner, b_outer, b_span)
        da0, db0 = hi_a | (a_base & 0x3FFFF) >> 4, hi_b | (b_base & 0x3FFFF) >> 4
        for g, tiles in enumerate(h.tiles):
            for kk in range(h.bK // h.k_step):
                for t in tiles:
                    a_off, b_off = operand_offsets(h, t, kk)
                    av = _read(smem, da0 + (a_off >> 4), False, 64, h.k_step, eb, _TYPES[ty])
                    bv = _read(smem, db0 + (b_off >> 4), mn_b, t.n, h.k_step, eb, _TYPES[ty])
                    d = np.matmul(av.astype(np.float64), bv.astype(np.float64).transpose(0, 2, 1))  # [G, 64, n]
                    drow, dcol = d_fragment(t.n)
                    th, rr = g * WG + np.arange(WG)[:, None], t.reg + np.arange(t.n // 2)[None, :]
                    regs[:, th, rr] = (regs[:, th, rr] + d[:, drow, dcol]).astype(np.float32)
    consumers = ir.Kernel(h.name, T, h.grid, tuple(b for b in h.buffers if b.name not in (h.A, h.B)), h.epilogue)
    out = run_ir(consumers, {n: a for n, a in mem.items() if n not in (h.A, h.B)},
                 registers={h.C: regs.reshape(G * T, acc.size)},
                 statements={"TmaStore": functools.partial(tma_store, h, knobs)})
    return {h.A: mem[h.A], h.B: mem[h.B], **out}


def _read(smem: np.ndarray, desc: int, mn_major: bool, rows: int, k: int, eb: int, dtype: str) -> np.ndarray:
    """The ``[blocks, rows, k]`` operand values a wgmma reads through ``desc``."""
    addr = operand_addresses(desc, mn_major, rows, k, eb)
    if int(addr.max()) >= smem.shape[1]:
        raise CoordinateError(f"wgmma descriptor {desc:#018x} reads shared byte {int(addr.max())}; the kernel has "
                              f"{smem.shape[1]}")
    return _values(smem[:, addr], dtype)
