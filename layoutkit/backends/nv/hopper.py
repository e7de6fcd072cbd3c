"""sm_90a lowering of a solved GEMM: TMA tile loads, an mbarrier pipeline and ``wgmma.mma_async``, warp
specialised (one producer warp group, then the consumer warp groups), read off the inferred layouts; and its
epilogue (the store through a swizzled shared tile and TMA, barriers of the consumers alone: **The epilogue**
below).

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

**The epilogue.**  The accumulator through a swizzled shared tile and a TMA store, and epilogue ops
that reduce through shared memory on the consumer warp groups.

**TMA store.**  The copy of the accumulator (or a fragment laid out as it) to the ``[M, N]`` output becomes a
:class:`TmaStore` statement: the consumer threads write their wgmma D fragments into a shared tile laid out
in the canonical TMA form (:class:`OperandTile`: rows of a 32/64/128-byte swizzle span, chunk after
chunk along N) -- with ``stmatrix.m8n8.x4`` for 16-bit outputs (a warp's m16 x n16 block of one tile per
instruction: matrices ``(n8 block j, rows 0-7)``, ``(j, rows 8-15)``, ``(j + 1, 0-7)``, ``(j + 1, 8-15)``), with
``st.shared.v2`` pairs for 32-bit ones (``stmatrix`` is b16 only) --, fence the async proxy, meet at a named
barrier of the consumers, and one thread issues a ``cp.async.bulk.tensor`` store per chunk (box: one chunk of N
by ``bM`` rows; TMA leaves elements outside the tensor unwritten, so tails need no guards), commits the bulk
group and waits for its reads before the kernel ends.  In the inferred swizzle each ``stmatrix`` matrix (8 rows of
16 bytes) hits distinct banks; the fp32 pairs of a half warp (4 rows of 32 bytes) meet 2-way conflicts (4
wavefronts per warp store, 2 the least), as TileLang's tile for a TMA store's source is.

Where it applies:

* the program stages C through shared memory itself (``C_local -> C_shared -> C``, TileLang's sm_90 form):
  the shared tile is the program's buffer in its inferred layout (a TMA store's source gets the Hopper
  swizzle), which must be canonical; 16- and 32-bit outputs.  These programs have no direct-store lowering
  (a fragment -> shared copy is not lowered otherwise), so anything else is refused naming the op;
* the plain GEMM (``C_local -> C``) with a 16-bit output, by default (``tma_store=False`` keeps the direct
  stores; ``tma_store=True`` takes 32-bit outputs too, whose register pairs are already 8-byte stores): the
  staging tile :data:`STAGE` takes the layout the inference gives a TMA store's source of the tile's shape
  (:func:`~layoutkit.targets.nv.copy.tma_shared_layout`).  It needs 16-byte global rows, a swizzled
  (canonical) layout and room beside the operand stages (:data:`SMEM_LIMIT`); else direct stores.

Refused, with :class:`~layoutkit.errors.UnsupportedError` naming the op: a fragment -> shared copy that is not
the accumulator staged for the next op's copy of the whole tile to the output (no other shared staging is
lowered on sm_90a), such a tile not in a canonical swizzle, 8-bit outputs through shared memory, output rows
that are no multiple of 16 bytes (TMA) and a staging tile that does not fit beside the operand stages.

**Reductions through shared memory.**  Epilogue ops lowered with barriers and shared buffers (the warps'
partials of a row reduce, a shared-memory reduce, layout conversions) run on the consumer warp groups alone:
the producer warp group has left, so every barrier of the epilogue is the consumers' named barrier
(:data:`BARRIER_ID`) and the shared buffers are laid out after the operand stages.  GEMM + bias + row max,
row sums and casts lower this way.

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm_shared_epilogue(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, target="sm_90a")
>>> st = stores(plan(p, infer_layouts(p)))[0]
>>> st.dst, st.tile.buffer, st.tile.span, st.tile.chunk, st.stmatrix
('C', 'C_shared', 128, 64, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...dtypes import element_bits
from ...errors import UnsupportedError
from ...scopes import GLOBAL, SHARED, is_shared
from ...targets.nv.copy import tma_shared_layout
from ...targets.nv.gemm_plan import PTX_TYPES, WGMMA, GemmPlan, PlannedGemm, gemm_plan
from ...targets.nv.partition import WARP_GROUP
from . import ir
from .guards import prove_guards
from .ir import REG
from .lower_frag import Tile, fragment_axes, lower_ops
from .warp_specialize import PRODUCER_THREADS, staged_copies, tma_capable

SPANS = (128, 64, 32)
"""Swizzle spans (bytes) of TMA and wgmma, widest first."""
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
"""Span -> the wgmma descriptor's swizzle field (bits 62-63; 0 is no swizzle)."""
WGMMA_OPERANDS = ("f16", "bf16", "e4m3", "e5m2")
"""The PTX operand types (:data:`~layoutkit.targets.nv.gemm_plan.PTX_TYPES`) this wgmma kernel lowers."""
WG = 128
"""Threads of a warp group."""
MAX_CONSUMER_REGS = 240
"""The most registers ``setmaxnreg`` gives a consumer thread (of a block with one or two consumer groups)."""
CONSUMER_REGS = {1: 240, 2: 232}
"""``setmaxnreg`` budgets per consumer group count: 128 x 40 + 256 x 232 registers fit the 64 Ki of an SM
with two consumer groups; one consumer group takes 240 (the most a thread has at entry of a 256-thread block).
The kernel has one or two consumer groups (:func:`check_operands` refuses others)."""


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


def d_fragment(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of register ``r`` of thread ``t`` of a warp group in an ``m64 x n`` wgmma D fragment
    (the PTX ISA's figure for ``.f32`` accumulators), ``[128, n / 2]`` each: lane ``l`` of warp ``w``, register
    ``r`` at row ``16 w + l / 4 + 8 (r / 2 % 2)``, column ``8 (r / 4) + 2 (l % 4) + r % 2``.

    >>> row, col = d_fragment(16)
    >>> row.shape, (int(row[37, 6]), int(col[37, 6]))
    ((128, 8), (25, 10))
    """
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
        drow, dcol = d_fragment(n)
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
class HopperGemm(PlannedGemm):
    """The sm_90a GEMM of a solved program: operands, the problem shape, the instruction plan of the block tile
    (:class:`~layoutkit.targets.nv.gemm_plan.GemmPlan` of the consumer warps), the canonical shared tiles
    ``a`` / ``b``, the consumer warp groups' wgmma tiles, the epilogue (:mod:`.ir` statements of the consumer
    threads, ``tid`` counting from the first consumer) and the kernel's buffers."""

    name: str
    A: str
    B: str
    C: str
    M: int
    N: int
    K: int
    stages: int
    plan: GemmPlan
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
        return self.plan.k


def operand_offsets(h: HopperGemm, t: WgTile, kk: int) -> tuple[int, int]:
    """Byte offsets in one stage of the A and B operands of wgmma tile ``t`` at k step ``kk`` (the start of the
    matrix each wgmma descriptor points at, before the swizzle).

    >>> from layoutkit.infer import infer_layouts, programs
    >>> h = plan(*(lambda p: (p, infer_layouts(p)))(programs.gemm(M=128, N=128, K=64, bM=128, bN=128, bK=64,
    ...                                                          threads=256, target="sm_90a")))
    >>> operand_offsets(h, h.tiles[1][0], 1)
    (32, 10240)
    """
    a, b = h.a, h.b
    ka = kk * h.k_step
    a_off = (ka // a.chunk) * a.chunk_bytes + t.m0 * a.span + (ka % a.chunk) * a.bits // 8
    if b.major == "K":
        return a_off, (ka // b.chunk) * b.chunk_bytes + t.n0 * b.span + (ka % b.chunk) * b.bits // 8
    return a_off, (t.n0 // b.chunk) * b.chunk_bytes + ka * b.span


def shared_layout(h: HopperGemm) -> dict[str, int]:
    """Byte offsets in the kernel's dynamic shared memory: the stages of ``A_s``, of ``B_s`` (1024-aligned, the
    128-byte swizzle's repeat, so the swizzle pattern of the shared address is the tile's), the epilogue's
    shared buffers (a staging tile 1024-aligned, scratch 128-aligned), the mbarriers ``lk_bar`` (``2 stages``
    of 8 bytes) and the ``total``; more than :data:`SMEM_LIMIT` raises
    :class:`~layoutkit.errors.UnsupportedError`.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
    >>> shared_layout(plan(p, infer_layouts(p)))
    {'A_s': 0, 'B_s': 49152, 'C_stage': 98304, 'lk_bar': 131072, 'total': 131120}
    """
    out = {"A_s": 0, "B_s": -(-h.stages * h.a.stage_bytes // 1024) * 1024}
    off = out["B_s"] + -(-h.stages * h.b.stage_bytes // 1024) * 1024
    staged = {st.tile.buffer for st in stores(h)}
    for b in shared_buffers(h):
        align = 1024 if b.name in staged else 128
        off = -(-off // align) * align
        out[b.name] = off
        off += b.size * element_bits(b.dtype) // 8
    off = -(-off // 128) * 128
    if off + 16 * h.stages > SMEM_LIMIT:
        raise UnsupportedError(f"sm_90a lowering: {h.name} needs {off + 16 * h.stages} bytes of shared memory; an "
                               f"sm_90 block has {SMEM_LIMIT}")
    return {**out, "lk_bar": off, "total": off + 16 * h.stages}


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
        staged = staged_copies(program)
        simt = [op.name for op in staged if not tma_capable(program, op)]
        if not staged or simt:
            why = f"pipelined copies {simt or 'none'} are no TMA loads (16-byte rows and strides)"
    if why and gemm_instruction == "wgmma":
        raise UnsupportedError(f"gemm_instruction='wgmma': no warp-specialised wgmma kernel: {why}")
    return not why


def check_operands(program) -> None:
    """Raise :class:`~layoutkit.errors.UnsupportedError` unless the GEMM of ``program`` has wgmma operands this
    lowering takes: :data:`WGMMA_OPERANDS` alike for A and B, a float32 accumulator, one or two whole consumer warp
    groups (:data:`CONSUMER_REGS`), no ``transpose_A``, and for fp8 a K-major B (the PTX ISA has no transpose for
    ``.e4m3`` / ``.e5m2``).  Needs no layouts (the codegen facade checks it first).

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
    if (dtype not in PTX_TYPES or PTX_TYPES[dtype][0] not in WGMMA_OPERANDS or bufs[g["B"]].dtype != dtype
            or bufs[g["C"]].dtype != "float32"):
        raise UnsupportedError(f"sm_90a lowering: wgmma operands {WGMMA_OPERANDS} with a float32 accumulator; found "
                               f"{dtype} x {bufs[g['B']].dtype} -> {bufs[g['C']].dtype}")
    if program.threads % WG:
        raise UnsupportedError(f"sm_90a lowering: {program.threads} consumer threads are not whole warp groups")
    if program.threads // WG not in CONSUMER_REGS:
        raise UnsupportedError(f"sm_90a lowering: {program.threads} consumer threads are {program.threads // WG} warp "
                               f"groups; the warp-specialised kernel has {' or '.join(map(str, CONSUMER_REGS))} "
                               f"(setmaxnreg budgets {CONSUMER_REGS}): use "
                               f"{' or '.join(str(WG * g) for g in CONSUMER_REGS)} threads, or "
                               "gemm_instruction='mma'")
    if element_bits(dtype) == 8 and not g["transpose_B"]:
        raise UnsupportedError(f"sm_90a lowering: {dtype} B stored [K, N] is MN-major; wgmma with .e4m3 / .e5m2 "
                               "operands takes no transpose (imm-trans-a / imm-trans-b exist for .f16 / .bf16 "
                               "only), so both shared tiles must be K-major: store B as [N, K] (transpose_B=True)")


def plan(program, result, tma_store: bool | None = None) -> HopperGemm:
    """The :class:`HopperGemm` of a solved sm_90a GEMM program (see the module doc for what is checked).
    ``tma_store``: the accumulator's store through a swizzled shared tile and TMA (:func:`lower_epilogue`);
    ``None`` takes it where it applies, ``False`` keeps direct stores from the registers."""
    from . import lower

    ops = lower.gemm_ops(program)
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
            f"{lower.epilogue_tag(ops['epilogue'])}_t{program.threads}_sm90a")
    return HopperGemm(name, ops["A"], ops["B"], g["C"], M, N, K, stages, _plan(program, (bM, bN, bK), tb, tiles),
                      a, b, tiles, ops["fill"], tuple(epilogue), tuple(buffers))


def _plan(program, tile: tuple[int, int, int], tb: bool, tiles: tuple[tuple[WgTile, ...], ...]) -> GemmPlan:
    """The wgmma plan of the consumer warps: warp groups along N as many as the column runs the consumer
    groups own, the rest along M; each group's wgmma n checked against the plan's."""
    g = next(op for op in program.ops if op.kind == "gemm").args
    a_dtype, b_dtype, c_dtype = (program.buffers[g[k]].dtype for k in ("A", "B", "C"))
    groups_n = len({ts[0].n0 for ts in tiles})
    warps = (WARP_GROUP * len(tiles) // groups_n, groups_n)
    try:
        plan = gemm_plan(a_dtype, b_dtype, c_dtype, *tile, program.threads, warps, trans_b=tb, arch=program.target,
                         instruction=WGMMA)
    except UnsupportedError as e:
        raise UnsupportedError(f"sm_90a lowering: {e}") from None
    if any(t.n != plan.n for ts in tiles for t in ts):
        raise UnsupportedError(f"sm_90a lowering: the consumer groups' wgmma n {[ts[0].n for ts in tiles]} are not "
                               f"the plan's {plan.n} ({warps[0]} x {warps[1]} warps)")
    return plan


def _epilogue(program, result, ops, shape, C: str, Cl, room: int, tma_store: bool | None) -> tuple[list, list]:
    """The consumer threads' epilogue statements and the kernel's buffers (:func:`lower_epilogue`: the store
    through shared memory and TMA, barriers of the consumers alone)."""
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


STAGE = "C_stage"
"""The staging tile's buffer name when the program has none."""
SMEM_LIMIT = 227 * 1024
"""Dynamic shared memory one sm_90 block may use."""
BARRIER_ID = 1
"""The consumers' named barrier (0 is ``__syncthreads``, which the exited producer threads never reach)."""


@dataclass(frozen=True)
class TmaStore:
    """The epilogue statement storing the accumulator-shaped fragment ``src`` to global ``dst`` (``[M, N]``)
    through the shared tile ``tile`` (its ``buffer``) and TMA (see the module doc)."""

    src: str
    dst: str
    dtype: str
    tile: OperandTile
    M: int
    N: int
    bM: int
    bN: int

    @property
    def stmatrix(self) -> bool:
        """Whether the registers go to shared memory with ``stmatrix`` (16-bit outputs)."""
        return self.tile.bits == 16

    @property
    def map_name(self) -> str:
        return f"{self.dst}_map"

    @property
    def boxes(self) -> int:
        """TMA boxes (one chunk of N by ``bM`` rows each)."""
        return self.bN // self.tile.chunk


def operand_bytes(stages: int, a: OperandTile, b: OperandTile) -> int:
    """Shared bytes of the operand stages and their mbarriers (each operand's stages 1024-aligned)."""
    return sum(-(-stages * t.stage_bytes // 1024) * 1024 for t in (a, b)) + 16 * stages


def stores(h) -> list[TmaStore]:
    """The :class:`TmaStore` statements of a :class:`HopperGemm`'s epilogue."""
    return [st for st in h.epilogue if isinstance(st, TmaStore)]


def _canonical(layout, buffer: str, bits: int, why: str) -> OperandTile:
    try:
        return match_tile(layout, buffer, bits, "MN")
    except UnsupportedError as e:
        raise UnsupportedError(f"{why}: {e}") from None


def _is_acc(program, result, name: str, Cl) -> bool:
    b = program.buffers.get(name)
    frag = result.layout_map.get(name)
    return bool(b is not None and b.is_fragment and frag is not None and (frag is Cl or frag.is_equal(Cl)))


def _to_output(program, op, M: int, N: int) -> bool:
    dst = program.buffers[op.args["dst"]]
    return dst.scope == GLOBAL and tuple(dst.shape) == (M, N) and not any(op.args["dst_region"][0])


def _staged(program, result, ops, Cl, shape) -> tuple[int, TmaStore] | None:
    """``(k, store)`` when ``ops[k]`` copies the accumulator into a shared tile and ``ops[k + 1]`` that tile to
    the output (the program's own staging); a staging the lowering cannot follow raises."""
    M, N, bM, bN = shape
    for k, op in enumerate(ops):
        if op.kind != "copy" or not is_shared(program.buffers[op.args["dst"]].scope):
            continue
        src, sh = op.args["src"], op.args["dst"]
        nxt = ops[k + 1] if k + 1 < len(ops) else None
        why = f"sm_90a lowering: {op.name} stages {src} in shared {sh}"
        if not (_is_acc(program, result, src, Cl) and nxt is not None and nxt.kind == "copy"
                and nxt.args["src"] == sh and _to_output(program, nxt, M, N)):
            raise UnsupportedError(f"{why}; lowered when {src} is laid out as the accumulator and the next op copies "
                                   f"{sh} to the [{M}, {N}] output (a TMA store); found "
                                   f"{[o.name + ' (' + o.kind + ')' for o in ops[k:k + 2]]}")
        if tuple(program.buffers[sh].shape) != (bM, bN) or any(op.args["dst_region"][0]):
            raise UnsupportedError(f"{why}; expected the whole {bM} x {bN} tile, found {program.buffers[sh].shape}")
        out = program.buffers[nxt.args["dst"]].dtype
        bits = element_bits(out)
        if program.buffers[sh].dtype != out or bits not in (16, 32):
            raise UnsupportedError(f"{why}; expected a 16- or 32-bit tile of the output's dtype {out}, found "
                                   f"{program.buffers[sh].dtype}")
        if N * bits // 8 % 16:
            raise UnsupportedError(f"{why}; a TMA store needs 16-byte global rows, found {N} x {bits // 8} bytes")
        if sh not in result.layout_map:
            raise UnsupportedError(f"{why}; the inference gave {sh} no layout, so there is no swizzled tile for a "
                                   f"TMA store to {nxt.args['dst']}")
        tile = _canonical(result.layout_map[sh], sh, bits, why)
        return k, TmaStore(src, nxt.args["dst"], out, tile, M, N, bM, bN)
    return None


def _direct(program, result, ops, Cl, shape, want: bool | None) -> tuple[int, TmaStore] | None:
    """``(k, store)`` when ``ops[k]`` is the accumulator's copy to the output and a TMA store applies to it
    (see the module doc); ``want=True`` raises where it does not apply."""
    M, N, bM, bN = shape
    ks = [k for k, op in enumerate(ops) if op.kind == "copy" and _is_acc(program, result, op.args["src"], Cl)
          and _to_output(program, op, M, N)]
    if want is False or not ks:
        if want and not ks:
            raise UnsupportedError(f"sm_90a lowering: tma_store=True, but no op of {[op.name for op in ops]} copies "
                                   f"the accumulator to an [{M}, {N}] output")
        return None
    k = ks[-1]
    out = program.buffers[ops[k].args["dst"]].dtype
    bits = element_bits(out)
    why = f"sm_90a lowering: a TMA store of {ops[k].name} ({out})"
    if bits not in ((16, 32) if want else (16,)) or N * bits // 8 % 16:
        if want:
            raise UnsupportedError(f"{why}: the store through shared memory takes 16- or 32-bit outputs with 16-byte "
                                   f"global rows; found {bits}-bit elements, rows of {N * bits // 8} bytes")
        return None
    try:
        tile = _canonical(tma_shared_layout((bM, bN), out), STAGE, bits, why)
    except UnsupportedError:
        if want:
            raise
        return None
    return k, TmaStore(ops[k].args["src"], ops[k].args["dst"], out, tile, M, N, bM, bN)


def plan_store(program, result, ops, Cl, shape, room: int, want: bool | None) -> tuple[int, int, TmaStore | None]:
    """``(first, end, store)``: ``ops[first:end]`` are replaced by ``store`` (``end == first`` and ``None`` when
    the epilogue keeps direct stores).  ``room``: shared bytes left beside the operand stages."""
    staged = _staged(program, result, ops, Cl, shape)
    if staged is not None:
        k, st = staged
        if want is False:
            raise UnsupportedError(f"sm_90a lowering: tma_store=False, but the program stages {st.src} in shared "
                                   f"{st.tile.buffer} for its store to {st.dst}")
        if st.tile.stage_bytes > room:
            raise UnsupportedError(f"sm_90a lowering: {st.tile.buffer} needs {st.tile.stage_bytes} bytes of shared "
                                   f"memory; {room} are left beside the operand stages")
        return k, k + 2, st
    direct = _direct(program, result, ops, Cl, shape, want)
    if direct is None:
        return 0, 0, None
    k, st = direct
    if st.tile.stage_bytes > room:
        if want:
            raise UnsupportedError(f"sm_90a lowering: the staging tile needs {st.tile.stage_bytes} bytes of shared "
                                   f"memory; {room} are left beside the operand stages")
        return 0, 0, None
    return k, k + 1, st


def lower_epilogue(program, result, ops, Cl, shape, tile, room: int, want: bool | None) -> tuple[list, list]:
    """The consumer threads' epilogue statements (fragment ops, :func:`~.lower_frag.lower_ops`, around the
    :class:`TmaStore` where one applies) and the extra buffers (the staging tile first)."""
    first, end, st = plan_store(program, result, ops, Cl, shape, room, want)
    convs = tuple(getattr(result, "conversions", ()))
    layouts = dict(result.layout_map)
    body, extra = [], []
    for part in (ops[:first], ops[end:]) if st is not None else (ops,):
        names = {op.name for op in part}
        b, e = lower_ops(part, program, layouts, tile, tuple(c for c in convs if c.op in names))
        body.append(b)
        extra += e
    if st is None:
        return body[0], extra
    scratch = sum(-(-b.size * element_bits(b.dtype) // 8 // 128) * 128 for b in extra if b.scope == SHARED)
    if -(-st.tile.stage_bytes // 1024) * 1024 + scratch > room:
        if want is None and end == first + 1:  # the default staging: the register stores fit where it does not
            return lower_epilogue(program, result, ops, Cl, shape, tile, room, False)
        raise UnsupportedError(f"sm_90a lowering: {st.tile.buffer} ({st.tile.stage_bytes} bytes) and the epilogue's "
                               f"shared scratch ({scratch} bytes) do not fit the {room} bytes beside the operand "
                               "stages")
    stage = ir.Buffer(st.tile.buffer, st.dtype, st.bM * st.bN, SHARED)
    return [*body[0], st, *body[1]], [stage, *extra]


def shared_buffers(h) -> list:
    """The shared buffers of the epilogue (the staging tile, reduction scratch)."""
    return [b for b in h.buffers if b.scope == SHARED]
