"""Structured-sparse MMA (``mma.sp``, sm_80+): operand and accumulator fragments, sizes and the warp
partition of TileLang 0.1.15's ``SparseTensorCoreIntrinEmitter`` / ``GemmSP`` (``T.gemm_sp``).

A 2:4 sparse A (1:2 for tf32) is stored compressed: ``[M, K/2]`` values plus metadata E (which two of
each four columns are kept).  One instruction covers a logical ``16 x 8 x k`` product with ``k = 2 *
256 / bits`` (``m16n8k32`` for 16-bit, ``m16n8k64`` for 8-bit, ``m16n8k16`` for tf32).  Its atoms
(``s``: M for A, N for B; ``k`` in the operand's own columns):

* A (compressed, ``16 x k/2``): the ``mma.sync`` A atom of the same dtype (:class:`.mma.MmaAtom`);
* B (``k x 16``, dense, two instructions per 16 columns): 16-bit lane ``4*(s%8) + (k%8)//2``, local
  ``8*(s//8) + 2*(k//8) + k%2``; 8-bit lane ``4*(s%8) + (k%16)//4``, local ``16*(s//8) + 4*(k//16) + k%4``; 32-bit lane
  ``4*(s%8) + k%4``, local ``4*(s//8) + k//4``;
* C: the ``mma.sync`` m16n8 accumulator (:func:`.mma.make_mma_store_layout`).

>>> from layoutkit.targets import nv
>>> A = make_mma_sp_load_layout("A", "float16", 1, 1, 16, 16, 32)
>>> A.input_shape, A.local_size                       # compressed K: 32 logical columns, 16 stored
((16, 16), 8)
>>> B = make_mma_sp_load_layout("B", "float16", 1, 1, 16, 16, 32)
>>> print(B.forward_thread, "|", B.forward_index[0])
_j % 8 * 4 + _i % 8 // 2 | _j // 8 * 8 + _i // 8 * 2 + _i % 2
>>> mma_sp_k("float16"), mma_sp_k("int8"), mma_sp_k("float32")
(32, 64, 16)
"""

from __future__ import annotations

import math

import numpy as np

from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .hardware import arch_number
from .mma import MmaAtom, make_mma_store_layout, operand_fragment
from .partition import M_PER_WARP, WARP_GROUP, WarpPartitionError, normalize_policy

SPARSE_FACTOR = 2
"""Logical K columns per stored column of the compressed A (2:4 and 1:2 both keep half)."""

METADATA_BITS_PER_GROUP = 4
"""Metadata bits per group of A (two 2-bit indices of a 2:4 group, or one 4-bit index pair of 1:2)."""


def _operand_bits(dtype: object) -> int:
    bits = element_bits(dtype)
    if bits not in (8, 16, 32):
        raise UnsupportedError(f"mma.sp takes 8-, 16- or 32-bit (tf32) operands; found {canonical_dtype(dtype)} "
                               f"({bits}-bit)")
    return bits


def mma_sp_k(dtype: object) -> int:
    """The logical K of one ``mma.sp`` for operand type ``dtype``: ``2 * 256 / bits``."""
    return SPARSE_FACTOR * 256 // _operand_bits(dtype)


def metadata_factor(a_dtype: object, e_dtype: object) -> int:
    """Logical A columns one metadata element covers (TileLang's ``get_e_factor``): ``e_bits / 4`` groups
    of 4 columns (2 for float32's 1:2 sparsity), so an A tile ``[M, K]`` has metadata ``[M, K / factor]``.

    >>> metadata_factor("float16", "int16"), metadata_factor("int8", "int32"), metadata_factor("float32", "int8")
    (16, 32, 4)
    """
    group = 2 if canonical_dtype(a_dtype) == "float32" else 4
    return element_bits(e_dtype) // METADATA_BITS_PER_GROUP * group


def sparse_b_lane(bits: int, s, k):
    """Lane of B element ``(s, k)`` (``s`` in N, ``k`` in the logical K) in one ``mma.sp`` atom."""
    if bits == 16:
        return 4 * (s % 8) + (k % 8) // 2
    if bits == 8:
        return 4 * (s % 8) + (k % 16) // 4
    return 4 * (s % 8) + k % 4


def sparse_b_local(bits: int, s, k):
    """Register of B element ``(s, k)`` in one ``mma.sp`` atom (``s < 16``, ``k < mma_sp_k``)."""
    if bits == 16:
        return 8 * (s // 8) + 2 * (k // 8) + k % 2
    if bits == 8:
        return 16 * (s // 8) + 4 * (k // 16) + k % 4
    return 4 * (s // 8) + k // 4


def _check_tiles(dtype: object, wrt: int, wct: int, chunk: int, what: str) -> tuple[int, int]:
    """``(n_dim, k)`` of the emitter, with its checks: warp tiles of ``16*r x 8*c``, K a whole number of
    instructions."""
    k = mma_sp_k(dtype)
    for v, name in ((wrt, "warp_row_tiles"), (wct, "warp_col_tiles"), (chunk, "K")):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ShapeError(f"{what}: {name} must be a positive integer; found {v!r}")
    if wrt % M_PER_WARP:
        raise ShapeError(f"{what}: warp_row_tiles must be a multiple of 16; found {wrt}")
    if wct % 8:
        raise ShapeError(f"{what}: warp_col_tiles must be a multiple of 8; found {wct}")
    if chunk % k:
        raise ShapeError(f"{what}: K must be a multiple of the mma.sp k = {k} ({canonical_dtype(dtype)}); "
                         f"found {chunk}")
    return (16 if wct % 16 == 0 else 8), k


def make_mma_sp_load_layout(operand: str, dtype: object, block_row_warps: int, block_col_warps: int,
                            warp_row_tiles: int, warp_col_tiles: int, chunk: int,
                            transposed: bool = False) -> Fragment:
    """Register fragment of ``mma.sp`` operand ``"A"`` (compressed: ``[M, chunk/2]``, transposed
    ``[chunk/2, M]``) or ``"B"`` (``[chunk, N]``, transposed ``[N, chunk]``) for a block of warps;
    ``chunk`` is the GEMM's logical K.  Warps and repeats as :func:`.mma.operand_fragment`."""
    op = str(operand).upper()
    if op not in ("A", "B"):
        raise ShapeError(f"operand must be 'A' or 'B'; found {operand!r}")
    what = f"mma.sp {op} ({canonical_dtype(dtype)})"
    n_dim, k = _check_tiles(dtype, warp_row_tiles, warp_col_tiles, chunk, what)
    bits = _operand_bits(dtype)
    brw, bcw = int(block_row_warps), int(block_col_warps)
    if op == "A":
        atom = MmaAtom(f"m16k{k // SPARSE_FACTOR}", bits, k // SPARSE_FACTOR)
        return operand_fragment("A", atom.lane, lambda s, kk: atom.local("A", s, kk), M_PER_WARP,
                                k // SPARSE_FACTOR, warp_row_tiles // M_PER_WARP, chunk // k, brw, bcw, transposed)
    return operand_fragment("B", lambda s, kk: sparse_b_lane(bits, s, kk), lambda s, kk: sparse_b_local(bits, s, kk),
                            n_dim, k, warp_col_tiles // n_dim, chunk // k, brw, bcw, transposed)


def make_mma_sp_store_layout(block_row_warps: int, block_col_warps: int, warp_row_tiles: int,
                             warp_col_tiles: int, dtype: object = "float16", chunk: int | None = None) -> Fragment:
    """The accumulator ``[brw*warp_row_tiles, bcw*warp_col_tiles]`` of ``mma.sp``: the ``mma.sync``
    m16n8 accumulator registers, warp tiles as :func:`.mma.make_mma_store_layout` lays them out.

    >>> print(make_mma_sp_store_layout(2, 2, 32, 32).forward_thread)
    _j // 32 * 64 + _i // 32 * 32 + _i % 8 * 4 + _j % 8 // 2
    """
    k = mma_sp_k(dtype)
    _check_tiles(dtype, warp_row_tiles, warp_col_tiles, k if chunk is None else chunk, "mma.sp C")
    # the accumulator atom does not depend on the operand type: size it as a 16-bit m16n8k16
    return make_mma_store_layout(block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles,
                                 dtype="float16", chunk=16, arch="sm_80")


def compute_sparse_warp_partition(M: int, N: int, num_warps: int, policy: object = "square",
                                  arch: str | int = "sm_80", instruction: str = "mma.sp") -> tuple[int, int]:
    """``(m_warps, n_warps)`` of ``T.gemm_sp`` (TileLang 0.1.15's ``GemmSPWarpPolicy``), which differs from
    the dense GEMM's: for ``mma.sp`` FullRow / FullCol put every warp on M / N unless that does not divide,
    then ``M/16`` (``N/8``) warps; Square scores every ``m <= min(M/16, nw)`` with ``n = nw // m`` (no
    divisibility check) and keeps the first best; a partition that does not use every warp is an error.
    ``wgmma.sp`` (sm_90) steps m by warp groups of 4.

    >>> compute_sparse_warp_partition(128, 128, 4), compute_sparse_warp_partition(64, 128, 4, "full_row")
    ((2, 2), (4, 1))
    >>> compute_sparse_warp_partition(128, 256, 8, arch="sm_90", instruction="wgmma.sp")
    (4, 2)
    """
    pol = normalize_policy(policy)
    M, N, nw = int(M), int(N), int(num_warps)
    k_n = 8
    where = f"T.gemm_sp ({instruction}): M={M}, N={N}, {nw} warps, policy={pol}"

    def fail(reason: str) -> WarpPartitionError:
        return WarpPartitionError(f"no warp partition for {where}: {reason}", M, N, nw, pol, instruction, ())

    if instruction == "wgmma.sp" and nw % WARP_GROUP:
        raise fail(f"warp-group MMA needs a multiple of {WARP_GROUP} warps")
    if M % M_PER_WARP or N % k_n:
        raise fail(f"M must be a multiple of {M_PER_WARP} and N of {k_n}")
    m, n = (_wgmma_sp_partition if instruction == "wgmma.sp" else _mma_sp_partition)(pol, M, N, nw, k_n)
    if m * n != nw:
        raise fail(f"the {pol} choice {m} x {n} does not use every warp")
    return m, n


def _balance(M: int, N: int, m: int, n: int, k_n: int) -> float:
    """TileLang's float32 score ``|(M/(16m)) / (N/(k_n n)) - M/N|``."""
    per_m = np.float32(M) / np.float32(m * M_PER_WARP)
    per_n = np.float32(N) / np.float32(n * k_n)
    return float(np.float32(abs(np.float32(per_m / per_n) - np.float32(M) / np.float32(N))))


def _mma_sp_partition(pol: str, M: int, N: int, nw: int, k_n: int) -> tuple[int, int]:
    if pol == "FullRow":
        if M % (nw * M_PER_WARP) == 0:
            return nw, 1
        m = M // M_PER_WARP
        return m, max(nw // m, 1)
    if pol == "FullCol":
        if N % (nw * k_n) == 0:
            return 1, nw
        n = N // k_n
        return max(nw // n, 1), n
    best, score = (1, 1), math.inf
    for m in range(1, min(M // M_PER_WARP, nw) + 1):
        n = nw // m
        if M / (m * M_PER_WARP) < 1 or N / (n * k_n) < 1 or m * n != nw:
            continue
        b = _balance(M, N, m, n, k_n)
        if b < score:
            best, score = (m, n), b
    return best


def _wgmma_sp_partition(pol: str, M: int, N: int, nw: int, k_n: int) -> tuple[int, int]:
    m, n = WARP_GROUP, nw // WARP_GROUP
    if pol == "FullRow":
        for cand in range(nw, WARP_GROUP - 1, -WARP_GROUP):
            if M % (cand * M_PER_WARP) == 0:
                return cand, nw // cand
        return m, n
    if pol == "FullCol":
        if N % (n * k_n):
            for cand in range(min(n, N // k_n), 0, -1):
                if nw % cand == 0 and (nw // cand) % WARP_GROUP == 0:
                    return nw // cand, cand
        return m, n
    best, score = (m, n), math.inf
    for cand in range(WARP_GROUP, min(nw, M // M_PER_WARP) + 1, WARP_GROUP):
        if nw % cand or nw // cand > N // k_n:
            continue
        b = _balance(M, N, cand, nw // cand, k_n)
        if b < score:
            best, score = (cand, nw // cand), b
    return best


def sparse_arch_ok(arch: str | int) -> bool:
    """``mma.sp`` needs sm_80+ (TileLang 0.1.15 registers no sparse GEMM for Volta or Turing)."""
    return arch_number(arch) >= 80
