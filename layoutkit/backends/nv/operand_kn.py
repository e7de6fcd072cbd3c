"""An 8- or 32-bit ``B`` stored ``[K, N]``, read from shared memory in words rather than one element at a time.

The ``mma.sync`` B fragment wants each lane's register to hold consecutive ``k`` of one column ``n`` (int8:
four k per register; tf32: one k per register, two registers k and k + 4), but a ``[K, N]`` tile holds
consecutive ``n`` of one ``k``; ``ldmatrix.trans`` transposes 16-bit elements only.  So the columns are
relabelled instead: within each group of ``G`` consecutive n8 atoms of a warp (``8 G`` columns), atom ``j``'s
column ``c`` is the tile column ``G c + j``.  Lane ``(g, q) = (lane // 4, lane % 4)`` then finds the B values of
all ``G`` atoms in one run of ``G`` consecutive columns ``G g .. G g + G - 1`` of a row:

* tf32 (``G`` = 4 or 2): one ``G``-wide shared load per row ``k = q`` and ``k = q + 4`` gives register ``h`` of
  every atom of the group;
* int8 (``G`` = 4): four 32-bit loads of rows ``4 q + i`` (``i < 4``, and the same 16 rows on) are a 4 x 4 byte
  block, transposed with eight ``prmt.b32``: word ``j`` then holds the four k of column ``G g + j``.

Where the shared tile's swizzle makes the lanes of a 16-byte phase collide, column ``c`` reads run
``slot(c)`` instead (:func:`slot`, :func:`choose_skew`).  The accumulator of atom ``j``, column ``c`` is tile
column ``G slot(c) + j`` of its group as well, so lane ``(g, q)`` holds runs of ``G`` consecutive columns (``2 G``
when not spread) of each row it owns; the epilogue writes them to their
columns through shared memory (:mod:`.epilogue_smem`), which is why this path is taken only with it.

>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.nv.lower import lower
>>> p = programs.gemm(M=64, N=64, K=64, bM=64, bN=64, bK=32, dtype="float32", accum_dtype="float32")
>>> k = lower(p, infer_layouts(p))
>>> sorted({st.vec for st in _stmts(k.body) if getattr(st, "src", None) == "B_s"})
[4]
"""

from __future__ import annotations

import numpy as np

from ...algebra import compile_numpy, free_vars
from ...algebra.nodes import Const, Expr, Var
from ...errors import UnsupportedError
from ...targets.nv.banks import warp_wavefronts
from ...targets.nv.hardware import WARP_SIZE
from . import ir

_TRANSPOSE_4X4 = ((0x5140, 0x7362), (0x5410, 0x7632))
"""``prmt`` selectors of a 4 x 4 byte transpose: words ``(w0, w1)`` -> ``(w0.b0 w1.b0 w0.b1 w1.b1, w0.b2 w1.b2
w0.b3 w1.b3)`` (and the same of ``w2, w3``), then halves of those: ``(t0.h0 t2.h0, t0.h1 t2.h1)``."""


def interleave_group(bits: int, nt: int, nj_stride: int, vector_ok) -> int:
    """``G``, the atoms per column group of the relabelled B (0 when the tile has none): int8 needs groups of 4
    atoms, tf32 takes 4 or 2; the warp's atoms must be contiguous (``nj_stride`` 8) and the shared tile must keep
    runs of ``G`` columns contiguous and aligned (``vector_ok(G)``).

    >>> interleave_group(8, 4, 8, lambda g: True), interleave_group(32, 2, 8, lambda g: True)
    (4, 2)
    >>> interleave_group(8, 2, 8, lambda g: True), interleave_group(32, 4, 16, lambda g: True)
    (0, 0)
    """
    if nj_stride != 8:
        return 0
    for g in ((4,) if bits == 8 else (4, 2) if bits == 32 else ()):
        if nt % g == 0 and vector_ok(g):
            return g
    return 0


def slot(spread: bool, c):
    """The run of ``G`` columns that atom column ``c`` (``< 8``) reads: ``c``, or with ``spread`` the lanes of a
    quarter warp (``c`` = 0, 1 are the lanes ``g`` of one 16-byte phase) two halves of the group apart, which
    avoids a bank conflict of the shared tile's swizzle (:func:`choose_skew`).

    >>> [slot(True, c) for c in range(8)]
    [0, 4, 1, 5, 2, 6, 3, 7]
    """
    return c % 2 * 4 + c // 2 if spread else c


def spread(L) -> bool:
    """Whether ``L``'s relabelled columns are spread (a skewed tf32 B; a skewed int8 B rotates rows instead)."""
    return bool(L.b_group and L.b_skew and L.bits == 32)


def column_of(group: int, label: Expr | int, spread: bool = False) -> Expr | int:
    """The tile column (relative to the warp's first) of accumulator / B column ``label`` (atom ``label // 8``,
    column ``label % 8``) under the relabelling with groups of ``group`` atoms.

    >>> [column_of(4, x) for x in (0, 1, 8, 9, 31, 32)], [column_of(4, x, True) for x in (0, 1, 2, 8)]
    ([0, 4, 1, 5, 31, 32], [0, 16, 4, 1])
    """
    span = 8 * group
    off = label % span
    return label - off + slot(spread, off % 8) * group + off // 8


def choose_skew(L, sub) -> bool:
    """Whether the skewed loads give warp 0's first B load of a k step fewer bank wavefronts in the shared layout
    ``L.Bs`` than the plain ones (ties keep the plain loads): tf32 spreads the columns (:func:`slot`), int8 rotates
    the rows of the lanes ``q >= 2`` by one (:func:`_rotation`)."""
    lane = np.arange(WARP_SIZE)
    g, q = lane // 4, lane % 4
    cost = []
    for skew in (False, True):
        if L.bits == 32:
            rows, cols = q, L.b_group * np.asarray([slot(skew, int(x)) for x in g])
        else:
            rows, cols = 4 * q + (q // 2 if skew else 0), L.b_group * g
        cost.append(warp_wavefronts(_addresses(L, sub, rows, cols) * (L.bits // 8), L.b_group * L.bits // 8))
    return cost[1] < cost[0]


def _rotation(skew: bool, q: Expr):
    """int8: the rotation ``s`` of lane ``q``'s four rows (its load ``i`` reads row ``4 q + (i + s) % 4``) and the
    second-stage ``prmt`` selectors that undo it.  With ``s = 1`` the first stage pairs rows (1, 2) and (3, 0),
    so the byte of row 0 sits at position 1 of the second pair: selectors 0x4105 / 0x6327, each 0x130b below
    the unrotated 0x5410 / 0x7632."""
    if not skew:
        return 0, _TRANSPOSE_4X4[1]
    s = q // 2
    t0, t1 = _TRANSPOSE_4X4[1]
    return s, (Const(t0) - s * 0x130B, Const(t1) - s * 0x130B)


def _addresses(L, sub, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Element addresses in ``L.Bs`` (stage 0) of the lanes' ``(rows, cols)``."""
    r, c = Var("r", int(rows.max()) + 1), Var("c", int(cols.max()) + 1)
    e = sub(L.Bs, (Const(0), r, c))
    vs = tuple(free_vars(e))
    env = {"r": rows, "c": cols}
    if not vs:
        return np.full(rows.shape, int(e.value) if isinstance(e, Const) else int(e))
    return np.broadcast_to(np.asarray(compile_numpy((e,), vs)(*(env[v.name] for v in vs))[0]), rows.shape)


def b_loads(L, kk, stage: Expr, sub, c0: Expr) -> tuple:
    """The statements loading the B operands of atom-k step ``kk`` from shared stage ``stage`` into ``b_frag``
    (``sub(layout, (stage, row, col))`` is the shared address; ``c0`` the warp's first column).  Scratch
    registers: ``b_w`` (the loaded words) and, for int8, ``b_t`` (the transpose's first half)."""
    G, atom, nt = L.b_group, L.atom, L.wg.nt
    lane = ir.TID % WARP_SIZE
    g, q = lane // 4, lane % 4
    out: list = []
    for u in range(nt // G):
        col = c0 + u * 8 * G + slot(spread(L), g) * G
        if L.bits == 32:  # rows q and q + 4: register h of the group's G atoms
            for h in range(2):
                row = kk * atom.k + q + 4 * h
                w = (u * 2 + h) * G
                out.append(ir.Load("b_w", Const(w), "B_s", sub(L.Bs, (stage, row, col)), G))
                out += [ir.Move("b_frag", Const((u * G + j) * L.b_per + h), "b_w", Const(w + j), 1) for j in range(G)]
            continue
        for h in range(2):  # int8: rows 16 h + 4 q + i, a 4 x 4 byte block per lane
            base = (u * 2 + h) * 16
            rot, (t0, t1) = _rotation(L.b_skew, q)
            for i in range(4):
                row = kk * atom.k + 16 * h + 4 * q + ((i + rot) % 4 if L.b_skew else i)
                out.append(ir.Load("b_w", Const(base + 4 * i), "B_s", sub(L.Bs, (stage, row, col)), 4))
            s0, s1 = _TRANSPOSE_4X4[0]
            for p, (x, y) in enumerate(((0, 1), (2, 3))):
                wx, wy = ("b_w", base + 4 * x), ("b_w", base + 4 * y)
                out += [ir.Prmt("b_t", 8 * p, wx, wy, s0), ir.Prmt("b_t", 8 * p + 4, wx, wy, s1)]
            for j in range(4):  # word j: column G g + j, rows 4 q .. 4 q + 3
                lo, hi = ("b_t", 4 * (j // 2)), ("b_t", 8 + 4 * (j // 2))
                out.append(ir.Prmt("b_frag", (u * G + j) * L.b_per + 4 * h, lo, hi, (t0, t1)[j % 2]))
    return tuple(out)


def fragment_coords(atom, lane: Expr) -> tuple[Expr, Expr]:
    """``(k, n)`` of register element ``l`` (``Var("l")``) of ``lane`` in one ``k x n8`` mma B operand, the
    inverse of the atom's ``lane`` / ``local`` maps for 8- and 32-bit operands (checked by enumeration): the
    per-lane element loads of a ``[K, N]`` B when its columns are not relabelled."""
    per = 32 // atom.bits
    b_per = 8 * atom.k // WARP_SIZE
    lv = Var("l", b_per)
    if atom.bits == 8:  # 4 consecutive k per register, registers 0..1 at k // 16
        k = lv // per * 16 + lane % 4 * per + lv % per
    else:  # tf32: one k per register, k // 4 = register
        k = lv * 4 + lane % 4
    n = lane // 4
    lanes, ls = np.meshgrid(np.arange(WARP_SIZE), np.arange(b_per), indexing="ij")
    kt = np.where(atom.bits == 8, ls // per * 16 + lanes % 4 * per + ls % per, ls * 4 + lanes % 4)
    if not (np.array_equal(atom.lane(lanes // 4, kt), lanes) and np.array_equal(atom.local("B", lanes // 4, kt), ls)):
        raise UnsupportedError(f"gemm lowering: the {atom.name} B fragment is not the one this lowering reads")
    return k, n


def scratch_buffers(L) -> tuple[ir.Buffer, ...]:
    """The scratch registers :func:`b_loads` uses (none without the relabelling)."""
    if not L.b_group:
        return ()
    if L.bits == 32:
        return (ir.Buffer("b_w", L.dtype, 2 * L.wg.nt, ir.REG),)
    return ir.Buffer("b_w", L.dtype, 8 * L.wg.nt, ir.REG), ir.Buffer("b_t", L.dtype, 16, ir.REG)


def _stmts(body):
    for st in body:
        yield from _stmts(st.body) if isinstance(st, ir.For) else (st,)
