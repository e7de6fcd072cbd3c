"""sm_90a lowering of a solved GEMM: TMA tile loads, an mbarrier pipeline and ``wgmma.mma_async``, warp
specialised (one producer warp group, then the consumer warp groups), read off the inferred layouts; the
epilogue (the store through a swizzled shared tile and TMA, barriers of the consumers alone) is
:mod:`.hopper_epilogue`'s.

The inference's thread range for such a program is ``(128, threads)`` (:meth:`.NvBackend.thread_range`: every
pipelined global -> shared copy is a TMA load), so the kernel launches ``128 + threads`` threads: warp group 0
issues the TMA loads, the ``threads`` consumer threads own the inferred ``C_local`` fragment.  What this module
reads off the solution, and checks:

* each shared operand tile (stage dim leading) must be one of the canonical TMA / wgmma layouts: rows of one
  swizzle span (32, 64 or 128 bytes) in chunks of ``span`` bytes along the contiguous dim, chunk after
  chunk, with the span's XOR swizzle on the shared address (:func:`match_tile`).  The span gives the
  tensor map's ``CU_TENSOR_MAP_SWIZZLE_*`` mode, the box (one chunk of the contiguous dim by the tile's rows)
  and the wgmma descriptors' swizzle mode, leading and stride byte offsets (:func:`descriptor`);
* the accumulator must hold, per consumer warp group, whole ``m64 x n`` wgmma D fragments (the PTX ISA's
  layout: lane ``l`` of warp ``w``, register ``r`` at row ``16 w + l / 4 + 8 (r / 2 % 2)``, column
  ``8 (r / 4) + 2 (l % 4) + r % 2``) at register offsets the fragment gives (:func:`consumer_tiles`);
* the operands (:func:`check_operands`): fp16 / bf16, or fp8 (e4m3 / e5m2: k32 per wgmma, both tiles K-major,
  since the PTX ISA has no transpose for 8-bit operands).  Plain ``sm_90`` lowers here too (:func:`uses_hopper`).

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
>>> h = plan(p, infer_layouts(p))
>>> h.a.span, h.b.major, h.b.span, h.threads, [(t.m0, t.n0, t.n) for t in h.tiles[1]]
(128, 'MN', 128, 384, [(0, 64, 64), (64, 64, 64)])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...dtypes import element_bits
from ...errors import UnsupportedError
from ...scopes import GLOBAL
from . import ir
from .backend import PRODUCER_THREADS
from .guards import prove_guards
from .hopper_epilogue import SMEM_LIMIT, operand_bytes
from .ir import REG
from .lower_frag import Tile, fragment_axes

SPANS = (128, 64, 32)
"""Swizzle spans (bytes) of TMA and wgmma, widest first."""
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
"""Span -> the wgmma descriptor's swizzle field (bits 62-63; 0 is no swizzle)."""
HOPPER_DTYPES = ("float16", "bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2")
"""wgmma operand types lowered (the 8-bit ones are PTX ``.e4m3`` / ``.e5m2``: e4m3 without infinities)."""
WG = 128
"""Threads of a warp group."""
MAX_CONSUMER_REGS = 240
"""The most registers ``setmaxnreg`` gives a consumer thread (of a block with one or two consumer groups)."""


def swizzle(addr, span: int):
    """The shared byte address ``addr`` after the ``span``-byte swizzle: the 16-byte chunk bits 4.. XOR the
    128-byte row bits 7.. (as many bits as ``span / 16`` chunks need).

    >>> [int(swizzle(a, 128)) for a in (0, 16, 128, 144, 1024 + 384)]
    [0, 16, 144, 128, 1456]
    """
    mask = span // 16 - 1
    return addr ^ (((addr >> 7) & mask) << 4)


@dataclass(frozen=True)
class OperandTile:
    """One operand's shared tile in its canonical form: ``rows`` x ``cols`` elements stored as ``cols / chunk``
    chunks of ``rows`` rows of ``span`` bytes (the contiguous dim is ``cols``), ``stage_bytes`` apart.
    ``major``: ``"K"`` when the contiguous dim is K, ``"MN"`` when it is M or N."""

    buffer: str
    rows: int
    cols: int
    span: int
    bits: int
    major: str

    @property
    def chunk(self) -> int:
        """Elements of the contiguous dim per chunk (one TMA box is ``chunk x rows``)."""
        return self.span * 8 // self.bits

    @property
    def chunk_bytes(self) -> int:
        return self.rows * self.span

    @property
    def stage_bytes(self) -> int:
        return self.rows * self.cols * self.bits // 8

    def offsets(self) -> np.ndarray:
        """Byte offset of element ``(row, col)`` in one stage (the swizzle applied), ``[rows, cols]``."""
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        plain = (c // self.chunk) * self.chunk_bytes + r * self.span + (c % self.chunk) * self.bits // 8
        return swizzle(plain, self.span)


def match_tile(layout, buffer: str, bits: int, major: str) -> OperandTile:
    """The canonical form of the inferred shared ``layout`` (``[stages, rows, cols]``), the widest span whose
    layout it equals element for element; a layout that is none of them raises
    :class:`~layoutkit.errors.UnsupportedError` with the first element that differs from the closest one."""
    shape = layout.input_shape
    rows, cols = shape[-2:]
    stages = shape[0] if len(shape) == 3 else 1
    got = np.asarray(layout.linearized().table())[..., 0].reshape(stages, rows, cols) * (bits // 8)
    witness = ""
    for span in SPANS:
        t = OperandTile(buffer, rows, cols, span, bits, major)
        if cols % t.chunk or rows % 8:
            continue
        want = t.offsets()[None] + t.stage_bytes * np.arange(stages)[:, None, None]
        if np.array_equal(got, want):
            return t
        bad = np.argwhere(got != want)[0]
        witness = witness or (f"; at {tuple(int(x) for x in bad)} the {span}B form has byte {int(want[tuple(bad)])}, "
                              f"the layout {int(got[tuple(bad)])}")
    raise UnsupportedError(f"sm_90a lowering: {buffer} {layout} is no TMA / wgmma canonical layout (rows of a "
                           f"32/64/128-byte swizzle span){witness}")


def descriptor(tile: OperandTile) -> tuple[int, int]:
    """``(leading, stride)`` byte offsets of the wgmma descriptor of ``tile`` (PTX ISA, "Strides"): K-major
    swizzled tiles step 8 rows by ``8 * span`` (the leading offset is unused: 16 is printed); MN-major ones
    step one chunk of the M/N dim by the chunk's bytes and 8 K rows by ``8 * span``.

    >>> descriptor(OperandTile("B_s", 64, 128, 128, 16, "MN"))
    (8192, 1024)
    """
    if tile.major == "K":
        return 16, 8 * tile.span
    return tile.chunk_bytes, 8 * tile.span


def descriptor_high(tile: OperandTile, lbo: int | None = None, sbo: int | None = None, span: int | None = None) -> int:
    """The descriptor bits other than the start address (leading / stride offsets, swizzle mode; the
    arguments override the tile's, span 0 meaning no swizzle).

    >>> hex(descriptor_high(OperandTile("A_s", 128, 64, 128, 16, "K")))
    '0x4000004000010000'
    """
    lead, stride = descriptor(tile)
    lead = lead if lbo is None else lbo
    stride = stride if sbo is None else sbo
    mode = SWIZZLE_MODE.get(tile.span if span is None else span, 0)
    return ((lead & 0x3FFFF) >> 4) << 16 | ((stride & 0x3FFFF) >> 4) << 32 | mode << 62


@dataclass(frozen=True)
class WgTile:
    """One wgmma D fragment of a consumer warp group: rows ``m0 .. m0+63``, columns ``n0 .. n0+n-1``, its
    registers at ``C_local[reg ..]`` in the PTX ISA's order."""

    m0: int
    n0: int
    n: int
    reg: int


def _d_fragment(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of register ``r`` of thread ``t`` of a warp group in an ``m64 x n`` wgmma D fragment
    (the PTX ISA's figure for ``.f32`` accumulators), ``[128, n / 2]`` each."""
    t, r = np.meshgrid(np.arange(WG), np.arange(n // 2), indexing="ij")
    lane = t % 32
    row = 16 * (t // 32) + lane // 4 + 8 * ((r // 2) % 2)
    col = 8 * (r // 4) + 2 * (lane % 4) + r % 2
    return row, col


def consumer_tiles(C, consumers: int) -> tuple[tuple[WgTile, ...], ...]:
    """Per consumer warp group, its wgmma D fragments: its part of the accumulator cut into ``m64`` row
    blocks spanning its columns (one contiguous run of at most 256, a multiple of 8), each checked against
    the PTX ISA's D layout at one register offset."""
    M, N = C.input_shape
    tt = np.asarray(C.thread_table())[0]
    idx = np.asarray(C.index_table())
    if C.replicate_size != 1:
        raise UnsupportedError("sm_90a lowering: a replicated accumulator is not lowered")
    out = []
    for g in range(consumers):
        rows, cols = np.nonzero(tt // WG == g)
        if rows.size == 0:
            raise UnsupportedError(f"sm_90a lowering: consumer warp group {g} holds no accumulator element")
        n0, n = int(cols.min()), int(cols.max() - cols.min() + 1)
        m_blocks = sorted({int(r) // 64 * 64 for r in rows})
        if n % 8 or n > 256 or rows.size != 64 * n * len(m_blocks):
            raise UnsupportedError(f"sm_90a lowering: warp group {g} holds {rows.size} accumulator elements in rows "
                                   f"{sorted(set(rows.tolist()))[:4]}.. and columns {n0}..{n0 + n - 1}; expected m64 "
                                   "blocks by one run of columns (a multiple of 8, at most 256)")
        drow, dcol = _d_fragment(n)
        tiles = []
        for m0 in m_blocks:
            th = tt[m0 + drow, n0 + dcol]
            reg = idx[m0 + drow, n0 + dcol]
            base = int(reg[0, 0])
            if not (np.array_equal(th, g * WG + np.arange(WG)[:, None] + 0 * drow)
                    and np.array_equal(reg, base + np.arange(n // 2)[None, :] + 0 * drow)):
                t, r = np.argwhere((th != g * WG + np.arange(WG)[:, None]) | (reg != base + np.arange(n // 2)))[0]
                raise UnsupportedError(
                    f"sm_90a lowering: the accumulator {C.describe()} is not the wgmma m64n{n} D fragment: element "
                    f"({m0 + drow[t, r]}, {n0 + dcol[t, r]}) is register {reg[t, r]} of thread {th[t, r]}; the PTX "
                    f"layout has register {base + r} of thread {g * WG + t}")
            tiles.append(WgTile(m0, n0, n, base))
        out.append(tuple(tiles))
    return tuple(out)


@dataclass(frozen=True)
class HopperGemm:
    """The sm_90a GEMM of a solved program: operands, shapes, the canonical shared tiles ``a`` / ``b``, the
    consumer warp groups' wgmma tiles, the epilogue (:mod:`.ir` statements of the consumer threads, ``tid``
    counting from the first consumer) and the kernel's buffers."""

    name: str
    A: str
    B: str
    C: str
    dtype: str
    M: int
    N: int
    K: int
    bM: int
    bN: int
    bK: int
    stages: int
    tb: bool
    a: OperandTile
    b: OperandTile
    tiles: tuple[tuple[WgTile, ...], ...]
    fill: float
    epilogue: tuple
    buffers: tuple

    @property
    def consumers(self) -> int:
        return len(self.tiles)

    @property
    def threads(self) -> int:
        return PRODUCER_THREADS + WG * self.consumers

    @property
    def kt(self) -> int:
        return -(-self.K // self.bK)

    @property
    def grid(self) -> tuple[int, int]:
        return -(-self.N // self.bN), -(-self.M // self.bM)

    @property
    def tx_bytes(self) -> int:
        """Bytes one stage's TMA loads deliver (whole boxes, out-of-bounds fill included)."""
        return self.a.stage_bytes + self.b.stage_bytes

    @property
    def k_step(self) -> int:
        """K of one wgmma: 32 bytes of each operand row (k16 for 16-bit types, k32 for fp8)."""
        return 256 // self.a.bits


GEMM_INSTRUCTIONS = (None, "wgmma", "mma")
"""Values of the ``gemm_instruction`` lowering option: follow the selection, the wgmma kernel, ``mma.sync``."""


def uses_hopper(program, gemm_instruction: str | None = None) -> bool:
    """Whether ``program`` lowers to the warp-specialised wgmma kernel: an sm_90 target (``sm_90a``, or plain
    ``sm_90`` as TileLang takes it: the kernel compiles with ``-arch=sm_90a``), a GEMM, and every pipelined
    global -> shared copy a TMA load (the copy selection that gave the inference its thread range
    ``(128, threads)``, :meth:`.NvBackend.thread_range`).  ``gemm_instruction="mma"`` asks for the ``mma.sync``
    kernel instead (its ``threads`` threads run the consumers' fragment, no producer warp group);
    ``"wgmma"`` insists, raising :class:`~layoutkit.errors.UnsupportedError` with the reason when the
    program has no such kernel.

    >>> from layoutkit.infer import programs
    >>> uses_hopper(programs.gemm(target="sm_90a")), uses_hopper(programs.gemm(target="sm_90"))
    (True, True)
    >>> uses_hopper(programs.gemm(target="sm_90"), "mma"), uses_hopper(programs.gemm(target="sm_80"))
    (False, False)
    """
    from .backend import tma_capable

    if gemm_instruction not in GEMM_INSTRUCTIONS:
        raise UnsupportedError(f"gemm_instruction must be one of {GEMM_INSTRUCTIONS}; found {gemm_instruction!r}")
    if gemm_instruction == "mma":
        return False
    target = str(program.target)
    why = ""
    if target not in ("sm_90", "sm_90a"):
        why = f"the target is {target!r}, not sm_90 / sm_90a"
    elif not any(op.kind == "gemm" for op in program.ops):
        why = "the program has no gemm"
    else:
        staged = [op for op in program.ops if op.kind == "copy" and op.args["dst"] in program.stages
                  and program.buffers[op.args["src"]].scope == GLOBAL]
        simt = [op.name for op in staged if not tma_capable(program, op)]
        if not staged or simt:
            why = f"pipelined copies {simt or 'none'} are no TMA loads (16-byte rows and strides)"
    if why and gemm_instruction == "wgmma":
        raise UnsupportedError(f"gemm_instruction='wgmma': no warp-specialised wgmma kernel: {why}")
    return not why


def check_operands(program) -> None:
    """Raise :class:`~layoutkit.errors.UnsupportedError` unless the GEMM of ``program`` has wgmma operands this
    lowering takes: :data:`HOPPER_DTYPES` alike for A and B, a float32 accumulator, whole consumer warp groups,
    no ``transpose_A``, and for fp8 a K-major B (the PTX ISA has no transpose for ``.e4m3`` / ``.e5m2``).
    Needs no layouts (the codegen facade checks it first).

    >>> from layoutkit.infer import programs
    >>> try:
    ...     check_operands(programs.gemm(dtype="float8_e4m3", out_dtype="float32", target="sm_90a"))
    ... except UnsupportedError as e:
    ...     print(str(e)[:56])
    sm_90a lowering: float8_e4m3 B stored [K, N] is MN-major
    """
    op = next(op for op in program.ops if op.kind == "gemm")
    g = op.args
    for key in ("A_region", "B_region"):
        if g.get(key) is not None:
            raise UnsupportedError(f"sm_90a lowering: {op.name} reads the sub-region {g[key]} of {g[key[0]]}; "
                                   "lowered GEMMs take whole operands")
    if g["transpose_A"]:
        raise UnsupportedError("sm_90a lowering: transpose_A is not lowered")
    bufs = program.buffers
    dtype = bufs[g["A"]].dtype
    if dtype not in HOPPER_DTYPES or bufs[g["B"]].dtype != dtype or bufs[g["C"]].dtype != "float32":
        raise UnsupportedError(f"sm_90a lowering: wgmma operands {HOPPER_DTYPES} with a float32 accumulator; found "
                               f"{dtype} x {bufs[g['B']].dtype} -> {bufs[g['C']].dtype}")
    if program.threads % WG:
        raise UnsupportedError(f"sm_90a lowering: {program.threads} consumer threads are not whole warp groups")
    if element_bits(dtype) == 8 and not g["transpose_B"]:
        raise UnsupportedError(f"sm_90a lowering: {dtype} B stored [K, N] is MN-major; wgmma with .e4m3 / .e5m2 "
                               "operands takes no transpose (imm-trans-a / imm-trans-b exist for .f16 / .bf16 "
                               "only), so both shared tiles must be K-major: store B as [N, K] (transpose_B=True)")


def plan(program, result, tma_store: bool | None = None) -> HopperGemm:
    """The :class:`HopperGemm` of a solved sm_90a GEMM program (see the module doc for what is checked).
    ``tma_store``: the accumulator's store through a swizzled shared tile and TMA (:mod:`.hopper_epilogue`);
    ``None`` takes it where it applies, ``False`` keeps direct stores from the registers."""
    from . import lower

    ops = lower._gemm_ops(program)
    g = ops["gemm"].args
    check_operands(program)
    bufs = program.buffers
    dtype = bufs[g["A"]].dtype
    tb = bool(g["transpose_B"])
    bits = element_bits(dtype)
    As, Bs, Cl = (result.layout_map[g[k]] for k in ("A", "B", "C"))
    a = match_tile(As, "A_s", bits, "K")
    b = match_tile(Bs, "B_s", bits, "K" if tb else "MN")
    M, K = bufs[ops["A"]].shape
    N = bufs[ops["B"]].shape[0] if tb else bufs[ops["B"]].shape[1]
    stages = As.input_shape[0] if len(As.input_shape) == 3 else 1
    bM, bK = As.input_shape[-2:]
    bN = b.rows if tb else b.cols
    if bM % 64 or bK % (256 // bits):
        raise UnsupportedError(f"sm_90a lowering: tile {bM} x {bN} x {bK}; wgmma needs bM a multiple of 64, bK of "
                               f"{256 // bits} (its k for {bits}-bit operands)")
    if Cl.thread_range not in (None, (PRODUCER_THREADS, program.threads)):
        raise UnsupportedError(f"sm_90a lowering: the accumulator is bound to threads {Cl.thread_range} (first, "
                               f"count); the kernel's consumers are ({PRODUCER_THREADS}, {program.threads})")
    if Cl.local_size >= MAX_CONSUMER_REGS:
        raise UnsupportedError(f"sm_90a lowering: the {bM} x {bN} accumulator on {program.threads} consumer threads "
                               f"holds {Cl.local_size} registers a thread; setmaxnreg gives a consumer thread at most "
                               f"{MAX_CONSUMER_REGS} (ptxas would spill and serialise the wgmma): use more consumer "
                               "threads or a smaller tile")
    tiles = consumer_tiles(Cl, program.threads // WG)
    if not tb and any(t.n0 % b.chunk for ts in tiles for t in ts):
        raise UnsupportedError(f"sm_90a lowering: a warp group's columns start inside a {b.chunk}-column B chunk")
    room = SMEM_LIMIT - operand_bytes(stages, a, b)
    epilogue, buffers = _epilogue(program, result, ops["epilogue"], (M, N, bM, bN), g["C"], Cl, room, tma_store)
    name = (f"gemm_{dtype}_{M}x{N}x{K}_{bM}x{bN}x{bK}_s{stages}{'_tb' if tb else ''}"
            f"{lower._epilogue_tag(ops['epilogue'])}_t{program.threads}_sm90a")
    return HopperGemm(name, ops["A"], ops["B"], g["C"], dtype, M, N, K, bM, bN, bK, stages, tb, a, b, tiles,
                      ops["fill"], tuple(epilogue), tuple(buffers))


def _epilogue(program, result, ops, shape, C: str, Cl, room: int, tma_store: bool | None) -> tuple[list, list]:
    """The consumer threads' epilogue statements and the kernel's buffers (:mod:`.hopper_epilogue`: the store
    through shared memory and TMA, barriers of the consumers alone)."""
    from .hopper_epilogue import lower_epilogue

    M, N, bM, bN = shape
    tile = Tile((ir.BY * bM, ir.BX * bN), (bM, bN), (M, N), fragment_axes(program))
    body, extra = lower_epilogue(program, result, ops, Cl, shape, tile, room, tma_store)
    bufs = program.buffers
    layouts = result.layout_map
    globals_ = [ir.Buffer(b.name, b.dtype, math.prod(b.shape), GLOBAL) for b in bufs.values() if b.scope == GLOBAL]
    frags = [ir.Buffer(n, b.dtype, layouts[n].local_size, REG) for n, b in bufs.items() if b.is_fragment and n != C]
    buffers = [*globals_, ir.Buffer(C, bufs[C].dtype, Cl.local_size, REG), *frags, *extra]
    consumers = ir.Kernel("epilogue", program.threads, (-(-N // bN), -(-M // bM)), tuple(buffers), tuple(body))
    return list(prove_guards(consumers).body), buffers  # tid counts the consumer threads here
