"""MMA fragments (TileLang ``TensorCoreIntrinEmitter``, warp = 32 lanes), ``docs/reference.md#nvidia-mma-fragments``.

Atoms (``mma.sync`` operand register layouts), evaluated on the in-atom coordinates ``s % ms_s``
(spatial: M for A, N for B) and ``k % ms_k`` -> ``(lane, local)``:

* 16-bit (m16n8k16): lane ``4*(s%8) + (k%8)//2``; A local ``4*(k//8) + 2*(s//8) + k%2``;
  B local ``4*(s//8) + 2*(k//8) + k%2``.
* 8-bit (m16n8k32, int8/uint8/fp8): lane ``4*(s%8) + (k%16)//4``; A local ``8*(k//16) + 4*(s//8) + k%4``;
  B local ``8*(s//8) + 4*(k//16) + k%4``.
* 32-bit operands (tf32 m16n8k8): lane ``4*(s%8) + k%4``; A local ``2*(k//4) + s//8``;
  B local ``2*(s//8) + k//4``.

>>> from layoutkit.targets import nv
>>> A = nv.make_mma_load_layout("A", "float16", 1, 1, 16, 16, 16)
>>> print(A)
Fragment((16, 16) -> (8,), replicate: 1, thread: 32, forward_thread: _i % 8 * 4 + _j % 8 // 2, \
forward_index: (_j // 8 * 4 + _i // 8 * 2 + _j % 2,))
>>> B = nv.make_mma_load_layout("B", "float16", 2, 2, 32, 32, 32)
>>> B.input_shape, B.replicate_size, B.thread_extent
((32, 64), 2, 128)
>>> C = nv.make_mma_store_layout(2, 2, 32, 32)
>>> bool(C.prove_injective()), C.thread_extent, C.local_size
(True, 128, 32)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...algebra.nodes import Expr, make_split, make_sum
from ...algebra.shapes import placeholder, positive_int
from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .hardware import WARP_SIZE, arch_number

_VALID_K = (8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class MmaAtom:
    """The register layout of one ``mma.sync`` operand tile.

    ``lane(s, k)`` and ``local(operand, s, k)`` work on expressions and on numpy arrays alike.
    """

    name: str
    bits: int
    k: int

    def lane(self, s, k):
        if self.bits == 16:
            return 4 * (s % 8) + (k % 8) // 2
        if self.bits == 8:
            return 4 * (s % 8) + (k % 16) // 4
        return 4 * (s % 8) + k % 4

    def local(self, operand: str, s, k):
        a = operand == "A"
        if self.bits == 16:
            return 4 * (k // 8) + 2 * (s // 8) + k % 2 if a else 4 * (s // 8) + 2 * (k // 8) + k % 2
        if self.bits == 8:
            return 8 * (k // 16) + 4 * (s // 8) + k % 4 if a else 8 * (s // 8) + 4 * (k // 16) + k % 4
        return 2 * (k // 4) + s // 8 if a else 2 * (s // 8) + k // 4


def mma_atom(dtype: object) -> MmaAtom:
    """The operand atom for ``dtype``: 16-bit m16n8k16, 8-bit m16n8k32, 32-bit (tf32) m16n8k8.

    >>> mma_atom("float8_e4m3fn").name, mma_atom("float32").name
    ('m16n8k32', 'm16n8k8')
    """
    bits = element_bits(dtype)
    if bits == 16:
        return MmaAtom("m16n8k16", 16, 16)
    if bits == 8:
        return MmaAtom("m16n8k32", 8, 32)
    if bits == 32:
        return MmaAtom("m16n8k8", 32, 8)
    raise UnsupportedError(
        f"no mma.sync operand atom for {canonical_dtype(dtype)} ({bits}-bit); expected a 16-bit (float16/bfloat16), "
        "8-bit (int8/uint8/float8) or 32-bit (tf32) operand type"
    )


@dataclass(frozen=True)
class MmaConfig:
    """Micro sizes of the emitter: ``ms_x`` (M atom), ``ms_y`` (N atom), ``ms_k``; warp repeats."""

    ms_x: int
    ms_y: int
    ms_k: int
    warp_rows: int
    warp_cols: int


def mma_config(dtype: object, warp_row_tiles: int, warp_col_tiles: int, chunk: int, arch: str | int) -> MmaConfig:
    """Reproduce ``TensorCoreIntrinEmitter`` (and the sm_75 variant) sizing, with its errors."""
    bits = element_bits(dtype)
    wrt = positive_int(warp_row_tiles, "warp_row_tiles")
    wct = positive_int(warp_col_tiles, "warp_col_tiles")
    chunk = positive_int(chunk, "chunk")
    sm = arch_number(arch)
    where = f"({canonical_dtype(dtype)}, warp tile {wrt}x{wct}, chunk {chunk}, sm_{sm})"
    m_dim = 8 if bits == 64 else 16
    if 75 <= sm < 80:  # Turing: m16n8k8 for 16-bit, m8n8k16/k32 for 8/4-bit
        k_dim = min({4: 32, 8: 16, 16: 8}.get(bits, 256 // bits), chunk)
        if bits in (4, 8):
            m_dim = 8
        if k_dim in (8, 16, 32):
            if k_dim in (16, 32) and m_dim != 8:
                raise ShapeError(f"sm_75 expects an m8 atom for k = {k_dim}; found m = {m_dim} {where}")
            return _sized(m_dim, 8, k_dim, wrt // m_dim, wct // 8, where)
    else:
        k_dim = min(256 // bits, chunk)
    if k_dim == 4:
        if m_dim != 8:
            raise ShapeError(f"a k4 MMA atom exists only for float64 (m8n8k4); found k_dim = 4 {where}")
        return _sized(8, 8, 4, wrt // 8, wct // 8, where)
    if k_dim not in _VALID_K:
        raise ShapeError(
            f"no MMA instruction has k = min({256 // bits}, chunk): expected one of {_VALID_K}; "
            f"found k = {k_dim} {where}"
        )
    if wrt < 16 or wrt % 16:
        raise ShapeError(f"warp_row_tiles must be a multiple of 16 (>= 16); found {wrt} {where}")
    if wct < 8 or wct % 8:
        raise ShapeError(f"warp_col_tiles must be a multiple of 8 (>= 8); found {wct} {where}")
    ms_y = 16 if wct % 16 == 0 else 8
    return _sized(m_dim, ms_y, k_dim, wrt // m_dim, wct // ms_y, where)


def _sized(ms_x, ms_y, ms_k, warp_rows, warp_cols, where) -> MmaConfig:
    if warp_rows == 0 or warp_cols == 0:
        raise ShapeError(
            f"expected at least one {ms_x}x{ms_y} MMA atom per warp; found {warp_rows} x {warp_cols} {where}"
        )
    return MmaConfig(ms_x, ms_y, ms_k, warp_rows, warp_cols)


def _atom_extent(fn: Callable, ms_s: int, ms_k: int) -> int:
    """``max + 1`` of an atom map over its domain (TileLang's bounding-box output shape)."""
    s, k = np.meshgrid(np.arange(ms_s), np.arange(ms_k), indexing="ij")
    return int(np.max(fn(s, k))) + 1


def make_mma_load_layout(
    operand: str,
    dtype: object,
    block_row_warps: int,
    block_col_warps: int,
    warp_row_tiles: int,
    warp_col_tiles: int,
    chunk: int,
    transposed: bool = False,
    *,
    arch: str | int = "sm_80",
    warp_order: str = "layoutkit",
) -> Fragment:
    """Register fragment of MMA operand ``"A"`` or ``"B"`` for a block of warps.

    ``warp_order="triton"`` gives Triton's ``DotOperandEncoding`` (``kWidth = 32 / bits``: 4, 2, 1 for
    8-, 16-, 32-bit) of an ``NvidiaMmaEncoding`` v2 parent with ``warpsPerCTA = [brw, bcw]`` (not transposed):
    warps interleave per instruction (``16 x ms_k`` for A, ``ms_k x 8`` for B), warp ``wn + bcw*wm``, the
    registers repeat along K first, then along M (A) or N (B); see :func:`make_mma_store_layout`.

    Input shape: A ``[brw*warp_row_tiles, K]`` (transposed ``[K, brw*warp_row_tiles]``), B
    ``[K, bcw*warp_col_tiles]`` (transposed ``[bcw*warp_col_tiles, K]``) with
    ``K = ms_k * (chunk // ms_k)`` as TileLang builds it.  ``index = local + local_size*(ws +
    warp_s*wk)``; A: ``thread = lane + 32*bs + 32*brw*rep`` (replicated over the ``bcw`` column
    warps); B: ``thread = lane + 32*rep + 32*brw*bs`` (replicated over the ``brw`` row warps).
    ``32`` is the atom's lane extent ``max(lane) + 1``: it is smaller when ``chunk`` cuts the atom
    (8-bit with ``chunk == 8`` uses lanes ``0..29``), and TileLang strides warps by it.

    >>> F = make_mma_load_layout("B", "int8", 1, 1, 16, 16, 32)
    >>> print(F.forward_thread, "|", F.forward_index[0])
    _j % 8 * 4 + _i % 16 // 4 | _j // 8 * 8 + _i // 16 * 4 + _i % 4
    """
    op = str(operand).upper()
    if op not in ("A", "B"):
        raise ShapeError(f"operand must be 'A' or 'B'; found {operand!r}")
    brw = positive_int(block_row_warps, "block_row_warps")
    bcw = positive_int(block_col_warps, "block_col_warps")
    cfg = mma_config(dtype, warp_row_tiles, warp_col_tiles, chunk, arch)
    if element_bits(dtype) not in (8, 16, 32):
        raise UnsupportedError(
            f"MMA load layouts expect 8/16/32-bit operands (TileLang has no other); found {canonical_dtype(dtype)}"
        )
    atom = MmaAtom(f"m{cfg.ms_x}n{cfg.ms_y}k{cfg.ms_k}", element_bits(dtype), cfg.ms_k)
    if warp_order == "triton":
        if transposed:
            raise UnsupportedError("warp_order='triton' builds non-transposed operands (Triton's dot operands are "
                                   f"[M, K] and [K, N]); found transposed=True for {canonical_dtype(dtype)}")
        return _mma_load_triton(op, atom, brw, bcw, cfg, int(chunk))
    if warp_order != "layoutkit":
        raise ShapeError(f"warp_order must be 'layoutkit' or 'triton'; found {warp_order!r}")
    ms_s = cfg.ms_x if op == "A" else cfg.ms_y
    warp_s = cfg.warp_rows if op == "A" else cfg.warp_cols
    return operand_fragment(op, atom.lane, lambda s, k: atom.local(op, s, k), ms_s, cfg.ms_k, warp_s,
                            int(chunk) // cfg.ms_k, brw, bcw, transposed)


def operand_fragment(op: str, lane: Callable, local: Callable, ms_s: int, ms_k: int, warp_s: int, warp_r: int,
                     brw: int, bcw: int, transposed: bool = False) -> Fragment:
    """The block fragment of register operand ``op`` (``"A"`` / ``"B"``) built from one instruction atom
    ``lane(s, k)`` / ``local(s, k)`` on its ``ms_s x ms_k`` (spatial x reduction) tile, as TileLang's
    emitters repeat it: ``warp_s`` atoms along the spatial dim and ``warp_r`` along K per warp
    (``index = local + local_size*(ws + warp_s*wk)``), then the block's warps (A: ``thread = lane +
    lanes*bs + lanes*brw*rep``, B: ``thread = lane + lanes*rep + lanes*brw*bs``).  ``local_size`` and
    ``lanes`` are the atom's ``max + 1`` (TileLang's bounding box).  Shared by ``mma.sync``
    (:func:`make_mma_load_layout`) and ``mma.sp`` (:mod:`.mma_sp`).

    >>> F = operand_fragment("A", lambda s, k: 4 * (s % 8) + k % 4, lambda s, k: 2 * (k // 4) + s // 8,
    ...                      16, 8, 1, 2, 1, 1)
    >>> F.input_shape, F.thread_extent, F.local_size
    ((16, 16), 32, 8)
    """
    local_size = _atom_extent(local, ms_s, ms_k)
    lanes = _atom_extent(lane, ms_s, ms_k)  # 32, or fewer for a small k (TileLang's max + 1)
    block_s = brw if op == "A" else bcw
    replicate = bcw if op == "A" else brw
    extent_s, extent_k = ms_s * warp_s * block_s, ms_k * warp_r

    def parts(s, k):
        ss, kk = s % ms_s, k % ms_k
        ws, wk, bs = (s // ms_s) % warp_s, k // ms_k, s // (ms_s * warp_s)
        return lane(ss, kk), local(ss, kk) + local_size * (ws + warp_s * wk), bs

    def sk(i, j):
        # A [M, K] and B^T [N, K] are (s, k) = (row, col); A^T [K, M] and B [K, N] are (col, row)
        return (i, j) if (op == "A") != bool(transposed) else (j, i)

    def thread(i, j, rep):
        ln, _, bs = parts(*sk(i, j))
        if op == "A":
            return ln + lanes * bs + lanes * brw * rep
        return ln + lanes * rep + lanes * brw * bs

    def index(i, j):
        return parts(*sk(i, j))[1]

    shape = [extent_s, extent_k] if (op == "A") != bool(transposed) else [extent_k, extent_s]
    return Fragment(shape, forward_thread_fn=thread, replicate=replicate, forward_index_fn=index)


def _mma_load_triton(op: str, atom: MmaAtom, brw: int, bcw: int, cfg: MmaConfig, chunk: int) -> Fragment:
    """Operand ``op`` in Triton's warp order (see :func:`make_mma_load_layout`)."""
    ms_k = cfg.ms_k
    inst_s = 16 if op == "A" else 8
    local_size = _atom_extent(lambda s, k: atom.local(op, s, k), inst_s, ms_k)
    k_reps = chunk // ms_k
    block = brw if op == "A" else bcw
    extent_s = (cfg.ms_x * cfg.warp_rows if op == "A" else cfg.ms_y * cfg.warp_cols) * block

    def parts(s, k):
        w, rs = (s // inst_s) % block, s // (inst_s * block)
        local = atom.local(op, s % inst_s, k % ms_k) + local_size * (k // ms_k + k_reps * rs)
        return atom.lane(s % inst_s, k % ms_k), local, w

    if op == "A":
        def thread(i, j, rep):
            lane, _, w = parts(i, j)
            return lane + WARP_SIZE * (rep + bcw * w)

        return Fragment([extent_s, ms_k * k_reps], forward_thread_fn=thread, replicate=bcw,
                        forward_index_fn=lambda i, j: parts(i, j)[1])

    def thread_b(i, j, rep):
        lane, _, w = parts(j, i)
        return lane + WARP_SIZE * (w + bcw * rep)

    return Fragment([ms_k * k_reps, extent_s], forward_thread_fn=thread_b, replicate=brw,
                    forward_index_fn=lambda i, j: parts(j, i)[1])


def make_mma_store_layout(
    block_row_warps: int,
    block_col_warps: int,
    warp_row_tiles: int,
    warp_col_tiles: int,
    *,
    dtype: object = "float16",
    accum_dtype: object = None,
    arch: str | int = "sm_80",
    chunk: int | None = None,
    warp_order: str = "layoutkit",
) -> Fragment:
    """The accumulator (C) fragment ``[brw*warp_row_tiles, bcw*warp_col_tiles]``.

    ``warp_order`` chooses how the ``brw x bcw`` warps share the tile.  ``"layoutkit"`` (TileLang's
    emitter): each warp owns one contiguous ``warp_row_tiles x warp_col_tiles`` tile, formulas below.
    ``"triton"`` (Triton's ``NvidiaMmaEncoding`` v2 with ``warpsPerCTA = [brw, bcw]``, instruction
    ``16x8``): the warps tile each ``16*brw x 8*bcw`` block of instructions, warp ``wn + bcw*wm`` taking
    instruction ``(wm, wn)`` of it, and the registers repeat over the blocks (along N first):
    ``thread = 32*((j//8) % bcw + bcw*((i//16) % brw)) + lane``,
    ``index = 4*(j//(8*bcw) + (N//(8*bcw))*(i//(16*brw))) + 2*((i%16)//8) + j%2``.

    Atom on ``ms_x x ms_y``: lane ``4*(i%8) + (j%8)//2``, local ``4*((j%ms_y)//8) + 2*((i%16)//8) + j%2``;
    ``thread = bj*(32*brw) + bi*32 + lane``, ``index = wi*(warp_cols*L) + wj*L + local`` with ``L =
    ms_x*ms_y/32``.  ``dtype`` (the operand type) only matters for float64 (m8n8k4) and on sm_75; an
    m8n8 atom (``L == 2``) uses the 8x8 map lane ``4*i + j//2``, local ``j%2``.  ``chunk`` (the GEMM's
    K tile) only decides whether TileLang's emitter accepts the configuration.

    >>> print(make_mma_store_layout(1, 1, 16, 16).forward_index[0])
    _j // 8 * 4 + _i // 8 * 2 + _j % 2
    """
    brw = positive_int(block_row_warps, "block_row_warps")
    bcw = positive_int(block_col_warps, "block_col_warps")
    if chunk is None:
        chunk = 16 if element_bits(dtype) != 64 else 4
    cfg = mma_config(dtype, warp_row_tiles, warp_col_tiles, chunk, arch)
    if accum_dtype is not None and element_bits(accum_dtype) == 64 and element_bits(dtype) != 64:
        raise UnsupportedError(f"a float64 accumulator expects float64 operands; found {canonical_dtype(dtype)}")
    shape = (brw * int(warp_row_tiles), bcw * int(warp_col_tiles))
    if warp_order == "triton":
        if cfg.ms_x * 8 // WARP_SIZE != 4 or cfg.ms_x != 16:
            raise UnsupportedError(f"warp_order='triton' builds m16n8 accumulators; this configuration uses a "
                                   f"{cfg.ms_x}x{cfg.ms_y} atom ({canonical_dtype(dtype)})")
        thread, index = _mma_store_exprs_triton(shape, brw, bcw)
    elif warp_order == "layoutkit":
        thread, index = _mma_store_exprs(shape, cfg, brw)
    else:
        raise ShapeError(f"warp_order must be 'layoutkit' or 'triton'; found {warp_order!r}")
    return Fragment.from_exprs(shape, (index,), thread)


def _mma_store_exprs_triton(shape: tuple[int, int], brw: int, bcw: int) -> tuple[Expr, Expr]:
    """``(thread, index)`` of the accumulator in Triton's warp order (see :func:`make_mma_store_layout`).

    >>> thread, index = _mma_store_exprs_triton((32, 16), 2, 1)
    >>> print(thread, "|", index)
    _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2 | _j // 8 * 4 + _i % 16 // 8 * 2 + _j % 2
    """
    i, j = placeholder(0, shape[0]), placeholder(1, shape[1])
    reps_n = shape[1] // (8 * bcw)
    lane = [(make_split(i, 1, 8), 4), (make_split(j, 2, 8), 1)]
    local = [(make_split(i, 8, 16), 2), (make_split(j, 1, 2), 1)]
    thread = [(make_split(j, 8, 8 * bcw), WARP_SIZE), (make_split(i, 16, 16 * brw), WARP_SIZE * bcw), *lane]
    index = [(make_split(j, 8 * bcw, None), 4), (make_split(i, 16 * brw, None), 4 * reps_n), *local]
    return _digit_sum(thread), _digit_sum(index)


def _mma_store_exprs(shape: tuple[int, int], cfg: MmaConfig, brw: int) -> tuple[Expr, Expr]:
    """``(thread, index)`` of :func:`make_mma_store_layout`, each built as one canonical sum of
    digits of ``_i`` / ``_j`` (``x % u // l`` = ``make_split(x, l, u)``) instead of a chain of
    simplified operators: the same expression, a fraction of the simplifier work.  Nested digits
    fold because every divisor divides the next (``(i // ms_x) // wr = i // (ms_x*wr)``, ``(i %
    ms_x) % 8 = i % 8`` with ``8 | ms_x``).

    >>> thread, index = _mma_store_exprs((16, 16), MmaConfig(16, 16, 16, 1, 1), 1)
    >>> print(thread, "|", index)
    _i % 8 * 4 + _j % 8 // 2 | _j // 8 * 4 + _i // 8 * 2 + _j % 2
    """
    ms_x, ms_y, wr, wc = cfg.ms_x, cfg.ms_y, cfg.warp_rows, cfg.warp_cols
    i, j = placeholder(0, shape[0]), placeholder(1, shape[1])
    local_out = ms_x * ms_y // WARP_SIZE
    if local_out == 2:  # the m8n8 atom: lane 4*i + j//2, local j%2
        lane = [(make_split(i, 1, ms_x), 4), (make_split(j, 2, ms_y), 1)]
        local = [(make_split(j, 1, 2), 1)]
    else:  # lane 4*(i%8) + (j%8)//2, local 4*((j%ms_y)//8) + 2*((i%ms_x)//8) + j%2
        lane = [(make_split(i, 1, 8), 4), (make_split(j, 2, 8), 1)]
        local = [(make_split(j, 8, ms_y), 4), (make_split(i, 8, ms_x), 2), (make_split(j, 1, 2), 1)]
    # thread = bj*(32*brw) + bi*32 + lane; index = wi*(wc*L) + wj*L + local
    thread = [(make_split(j, ms_y * wc, None), WARP_SIZE * brw), (make_split(i, ms_x * wr, None), WARP_SIZE), *lane]
    index = [(make_split(i, ms_x, ms_x * wr), wc * local_out), (make_split(j, ms_y, ms_y * wc), local_out), *local]
    return _digit_sum(thread), _digit_sum(index)


def _digit_sum(terms: list[tuple[Expr, int]]) -> Expr:
    """``sum(coeff * atom)`` through one :func:`make_sum` (equal atoms add their coefficients)."""
    acc: dict[Expr, int] = {}
    for atom, coeff in terms:
        acc[atom] = acc.get(atom, 0) + coeff
    return make_sum(acc)


def make_gemm_fragment_8x8() -> Fragment:
    """The 8x8 ldmatrix/stmatrix atom: thread ``i*4 + j//2``, index ``j%2``.

    >>> print(make_gemm_fragment_8x8())
    Fragment((8, 8) -> (2,), replicate: 1, thread: 32, forward_thread: _i * 4 + _j // 2, forward_index: (_j % 2,))
    """
    return Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transposed 8x8 atom: thread ``j*4 + i//2``, index ``i%2``."""
    return Fragment([8, 8], forward_thread_fn=lambda i, j: j * 4 + i // 2, forward_index_fn=lambda i, j: i % 2)


def ldmatrix_layout(num: int = 4, trans: bool = False, dtype: object = "float16") -> Fragment:
    """Which lane/register receives each element of the tile one ``ldmatrix.sync.aligned.x{num}``
    (``.trans``) reads: ``num`` 8x8 matrices of 16-byte rows (``E = 128/b`` elements per row).

    Tiles: x1 ``[8, E]``, x2 ``[16, E]`` (matrices stacked on rows), x4 ``[16, 2E]`` (matrix ``m``
    at rows ``8*(m%2)``, cols ``E*(m//2)``, the order of the MMA A operand); lane ``t`` gives the
    row address of row ``t%8`` of matrix ``t//8``.  Register ``m`` of every lane holds matrix ``m``:
    plain, lane ``4*r + c//(32/b)`` gets ``32/b`` consecutive elements of row ``r``; ``.trans``
    (16-bit only), lane ``4*c + r//2`` gets rows ``r, r+1`` of column ``c``.  ``stmatrix`` stores
    registers with the same map (:func:`stmatrix_layout`).

    >>> L = ldmatrix_layout(4)
    >>> L.is_equal(make_mma_load_layout("A", "float16", 1, 1, 16, 16, 16))
    True
    >>> print(ldmatrix_layout(1, trans=True).forward_thread)
    _j * 4 + _i // 2
    """
    if num not in (1, 2, 4):
        raise ShapeError(f"ldmatrix/stmatrix expect 1, 2 or 4 matrices; found num = {num!r}")
    bits = element_bits(dtype)
    if bits not in (8, 16, 32):
        raise UnsupportedError(f"ldmatrix moves 8/16/32-bit elements as b16 pairs; found {bits}-bit {dtype}")
    if trans and bits != 16:
        raise UnsupportedError(f"ldmatrix/stmatrix .trans transposes 16-bit elements; found {bits}-bit {dtype}")
    row_elems = 128 // bits
    per_reg = 32 // bits
    shape = [8 if num == 1 else 16, row_elems * (2 if num == 4 else 1)]

    def matrix(i, j):
        return i // 8 + 2 * (j // row_elems) if num == 4 else i // 8

    def thread(i, j):
        r, c = i % 8, j % row_elems
        return 4 * c + r // 2 if trans else 4 * r + c // per_reg

    def index(i, j):
        r, c = i % 8, j % row_elems
        return matrix(i, j) * per_reg + (r % 2 if trans else c % per_reg)

    return Fragment(shape, forward_thread_fn=thread, forward_index_fn=index)


def stmatrix_layout(num: int = 4, trans: bool = False, dtype: object = "float16") -> Fragment:
    """``stmatrix.sync.aligned.x{num}`` (``.trans``): the same lane/register map as
    :func:`ldmatrix_layout` (the registers that are stored)."""
    return ldmatrix_layout(num, trans, dtype)
