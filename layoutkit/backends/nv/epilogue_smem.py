"""The GEMM epilogue through shared memory: the accumulator tile written to a padded shared tile, then copied
to global memory in 16-byte row vectors (``STG.E.128``) instead of each lane storing its two-element pairs.

Each lane writes the registers of its accumulator atoms (rows ``g`` and ``g + 8`` of each m16n8 atom, converted
to the output dtype) with one shared store per row run: a pair of columns, or runs of ``G`` / ``2 G`` columns when
the ``B`` columns are relabelled (:mod:`.operand_kn`).  The rows are padded by the byte count that gives the
fewest bank wavefronts for those stores and the row reads (:func:`row_padding`).  After a barrier every thread
copies ``16 / bytes`` consecutive elements of a row at a time (fewer when ``N`` is no multiple of that: runs must
stay aligned in every row); rows and column runs past the tensor are not stored (tails).

It applies when the epilogue ends with a copy of a fragment laid out as the accumulator to a global tensor of
the problem's shape, the run is wider than the direct stores' pair, the arch is sm_80 - sm_89, and the
shared tile fits in the larger of 48 KiB and the operand tiles' shared memory.

>>> import numpy as np
>>> row_padding(128, 2, 2, 8), row_padding(64, 4, 8, 4)
(16, 16)
"""

from __future__ import annotations

import numpy as np

from ...algebra.nodes import Const, Expr, Var
from ...dtypes import element_bits
from ...targets.nv.hardware import WARP_SIZE
from . import ir
from .operand_kn import slot, spread

STAGE = "C_stage"
"""The shared staging tile's buffer name."""
BUFFERS = (STAGE, "c_st", "c_out")
"""The buffers the staged store adds, all of the output's dtype (the staging tile, a lane's row run in registers,
one 16-byte global vector)."""


def wavefronts(addr: np.ndarray, width: int) -> int:
    """Bank wavefronts of one warp's shared access: lane ``i`` touches ``width`` bytes from byte ``addr[i]``;
    16-byte accesses go in quarter-warp phases, 8-byte ones in half-warp phases; per phase, the most distinct
    32-bit words that fall in one of the 32 banks.

    >>> wavefronts(np.arange(32) * 4, 4), wavefronts(np.arange(32) * 128, 4), wavefronts(np.arange(32) * 16, 16)
    (1, 32, 4)
    """
    per = 8 if width >= 16 else 16 if width == 8 else WARP_SIZE
    total = 0
    for ph in range(0, WARP_SIZE, per):
        a = addr[ph:ph + per, None] + np.arange(0, max(width, 4), 4)[None, :]
        words = np.unique(a // 4)
        total += int(np.bincount(words % 32, minlength=32).max())
    return total


def row_padding(cols: int, ebytes: int, run: int, vec: int) -> int:
    """The row padding in bytes (a multiple of 16 below 128) with the fewest wavefronts for the staging writes
    (lane ``(g, q)`` writes ``run`` elements at row ``g``, column ``run q``, in 16-byte pieces at most) plus the
    row reads (lane ``i`` reads ``vec`` elements at element ``vec i`` of the row-major tile)."""
    lane = np.arange(WARP_SIZE)
    g, q = lane // 4, lane % 4
    piece = min(run * ebytes, 16)
    per_row = cols // vec
    costs = []
    for pad in range(0, 128, 16):
        ld = cols * ebytes + pad
        write = wavefronts(g * ld + run * q * ebytes, piece)
        read = wavefronts(lane // per_row * ld + lane % per_row * vec * ebytes, vec * ebytes)
        costs.append(write + read)
    return 16 * int(np.argmin(costs))  # the first minimum: the smallest padding


def staged_vec(program, result, L, ops) -> int:
    """Elements per global store of the staged epilogue when it applies to the epilogue ``ops`` (their last
    op), else 0 (:func:`applies`)."""
    last = ops[-1] if ops else None
    frag = result.layout_map.get(last.args.get("src")) if last is not None and last.kind == "copy" else None
    if frag is None:
        return 0
    return applies(L, program, last, frag, (L.As.size + L.Bs.size) * L.bits // 8)


def applies(L, program, last_op, frag, operand_bytes: int) -> int:
    """The elements per 16-byte row run when the staged epilogue applies to the epilogue's last op ``last_op``
    (laid out ``frag``), else 0 (see the module doc)."""
    if last_op is None or last_op.kind != "copy" or not 80 <= L.sm < 90:
        return 0
    src, dst = program.buffers[last_op.args["src"]], program.buffers[last_op.args["dst"]]
    if not src.is_fragment or dst.scope != "global" or tuple(dst.shape) != (L.M, L.N) or any(
            last_op.args["dst_region"][0]) or not (frag is L.Cl or frag.is_equal(L.Cl)):
        return 0
    ebytes = element_bits(dst.dtype) // 8
    vec = 16 // ebytes
    while vec > 2 and (L.N % vec or L.bN % vec):  # global rows must keep the runs aligned
        vec //= 2
    if vec <= 2:  # no wider than the direct stores' pairs
        return 0
    pad = row_padding(L.bN, ebytes, 2, vec) // ebytes
    if L.bM * (L.bN + pad) * ebytes > max(48 * 1024, operand_bytes):
        return 0
    return vec


def staged_store(L, reg: str, gname: str, gdtype: str, vec: int, origin) -> tuple[list, list]:
    """Statements and buffers storing accumulator-shaped registers ``reg`` to global ``gname`` (``[M, N]``,
    ``gdtype``) through the staging tile, ``vec`` elements per global store."""
    ebytes = element_bits(gdtype) // 8
    g, q = ir.TID % WARP_SIZE // 4, ir.TID % 4
    G = L.b_group or 1
    # a lane's runs of columns in each row it owns: (first column, length, first register of c_st)
    if spread(L):
        runs = [(G * slot(True, 2 * q + e), G, G * e) for e in range(2)]
    else:
        runs = [(2 * G * q, 2 * G, 0)]
    ld = L.bN + row_padding(L.bN, ebytes, runs[0][1], vec) // ebytes
    warp = ir.TID // WARP_SIZE
    wg = L.wg
    r0, c0 = (warp % wg.brw) * wg.row_step, (warp // wg.brw) * wg.col_step
    c_off = _register_offsets(L)
    body: list = []
    piece = max(1, min(runs[0][1], 16 // ebytes))
    mi = Var("emi", wg.mt)
    for u in range(wg.nt // G):
        base = c0 + (u * 8 * G if G > 1 else u * wg.nj_stride)
        for hh in range(2):
            row = r0 + mi * wg.mi_stride + g + 8 * hh
            moves = [ir.Move("c_st", Const(G * e + j), reg, c_off(mi, u * G + j) + 2 * hh + e, 1)
                     for e in range(2) for j in range(G)]
            stores = [ir.Store(STAGE, row * ld + base + col + p, "c_st", Const(first + p), piece)
                      for col, n, first in runs for p in range(0, n, piece)]
            body.append(ir.For(mi, wg.mt, tuple(moves + stores), unroll=True))
    body.append(ir.Barrier())
    per_row = L.bN // vec
    total = L.bM * per_row
    iters = -(-total // L.threads)
    it = Var("eit", iters)
    lin = it * L.threads + ir.TID
    r, c = lin // per_row, lin % per_row * vec
    m0, n0 = origin
    live = ((lin, total),) if total % L.threads else ()
    load = ir.Load("c_out", Const(0), STAGE, r * ld + c, vec, live)
    store = ir.Store(gname, (m0 + r) * L.N + n0 + c, "c_out", Const(0), vec, live + ((m0 + r, L.M), (n0 + c, L.N)))
    body.append(ir.For(it, iters, (load, store), unroll=True))
    bufs = [ir.Buffer(STAGE, gdtype, L.bM * ld, "shared"), ir.Buffer("c_st", gdtype, 2 * G, ir.REG),
            ir.Buffer("c_out", gdtype, vec, ir.REG)]
    return body, bufs


def _register_offsets(L):
    """``(mi, nj) -> register offset`` of accumulator atom ``(mi, nj)`` of a warp (affine, as the mma loop
    checks)."""
    mt, nt, rs, cs = L.wg.mt, L.wg.nt, L.wg.mi_stride, L.wg.nj_stride
    base = L.cidx[:mt * rs:rs, :nt * cs:cs]
    s_mi = int(base[1, 0] - base[0, 0]) if mt > 1 else 0
    s_nj = int(base[0, 1] - base[0, 0]) if nt > 1 else 0
    first = int(base[0, 0])

    def off(mi: Expr, nj: int) -> Expr:
        return mi * s_mi + nj * s_nj + first
    return off
