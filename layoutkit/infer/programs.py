"""Builders of the reference tile programs, shared by ``examples/``, the tests and the benchmarks: the
TileLang kernels whose inferred layouts are on record (``kernels.py`` of the conformance data: the docs
GEMM, the elementwise kernel and GEMM + bias + row max, and their variants), the examples' elementwise
multiply and the Ascend GEMM.

>>> p = gemm(bM=32, bN=32, bK=32)
>>> [op.kind for op in p.ops]
['fill', 'copy', 'copy', 'gemm', 'copy']
>>> p.shape_of("A_shared")
(2, 32, 32)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .program import Program


def gemm(M=1024, N=1024, K=1024, bM=128, bN=128, bK=32, threads=128, num_stages=2, dtype="float16",
         accum_dtype="float32", policy="square", transpose_B=False, target="sm_80", out_dtype=None) -> Program:
    """``C = A @ B`` (``B`` stored ``[N, K]`` with ``transpose_B``) in ``bM x bN`` blocks, a pipelined k loop;
    ``C`` is ``out_dtype`` (default: the operands' ``dtype``; an fp8 GEMM usually stores float32 or float16).

    >>> gemm(dtype="float8_e4m3", out_dtype="float32").buffers["C"].dtype
    'float32'
    """
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, K), dtype)
    B = p.tensor("B", (N, K) if transpose_B else (K, N), dtype)
    C = p.tensor("C", (M, N), dtype if out_dtype is None else out_dtype)
    A_s = p.alloc_shared("A_shared", (bM, bK), dtype)
    B_s = p.alloc_shared("B_shared", (bN, bK) if transpose_B else (bK, bN), dtype)
    C_l = p.alloc_fragment("C_local", (bM, bN), accum_dtype)
    p.clear(C_l)
    with p.pipelined(num_stages=num_stages):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l, transpose_B=transpose_B, policy=policy)
    p.copy(C_l, C[0, 0])
    return p


def elementwise(M=1024, N=1024, bM=64, bN=64, threads=128, dtype="float16", target="sm_80") -> Program:
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, N), dtype)
    B = p.tensor("B", (M, N), dtype)
    A_f = p.alloc_fragment("A_frag", (bM, bN), dtype)
    B_f = p.alloc_fragment("B_frag", (bM, bN), dtype)
    p.copy(A[0, 0], A_f)
    p.parallel((bM, bN), writes=[(B_f, lambda i, j: (i, j))], reads=[(A_f, lambda i, j: (i, j))])
    p.copy(B_f, B[0, 0])
    return p


def elementwise_binary(M=1024, N=1024, bM=64, bN=64, threads=128, dtype="float16", compute="mul",
                       target="sm_80") -> Program:
    """``C = A <compute> B`` through two fragments (the result written over ``A_frag``):
    ``examples/elementwise.py``.

    >>> [op.kind for op in elementwise_binary(bM=32, bN=32).ops]
    ['copy', 'copy', 'parallel', 'copy']
    """
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, N), dtype)
    B = p.tensor("B", (M, N), dtype)
    C = p.tensor("C", (M, N), dtype)
    A_f = p.alloc_fragment("A_frag", (bM, bN), dtype)
    B_f = p.alloc_fragment("B_frag", (bM, bN), dtype)
    p.copy(A[0, 0], A_f)
    p.copy(B[0, 0], B_f)
    p.parallel((bM, bN), writes=[(A_f, lambda i, j: (i, j))], reads=[(A_f, lambda i, j: (i, j)),
                                                                      (B_f, lambda i, j: (i, j))], compute=compute)
    p.copy(A_f, C[0, 0])
    return p


def gemm_rowmax_bias(M=1024, N=1024, K=1024, bM=64, bN=64, bK=32, threads=128, dtype="float16",
                     accum_dtype="float32", target="sm_80", bias_name="Bias") -> Program:
    """The GEMM, then ``C += bias[j]`` and ``row_max = max_j C``, both stored (``bias_name``: the global bias
    tensor's name; ``examples/gemm_bias_rowmax.py`` calls it ``bias``)."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, K), dtype)
    B = p.tensor("B", (K, N), dtype)
    Bias = p.tensor(bias_name, (N,), accum_dtype)
    C = p.tensor("C", (M, N), dtype)
    RowMax = p.tensor("RowMax", (M,), accum_dtype)
    A_s = p.alloc_shared("A_shared", (bM, bK), dtype)
    B_s = p.alloc_shared("B_shared", (bK, bN), dtype)
    C_l = p.alloc_fragment("C_local", (bM, bN), accum_dtype)
    bias = p.alloc_fragment("bias_frag", (bN,), accum_dtype)
    row_max = p.alloc_fragment("row_max", (bM,), accum_dtype)
    p.clear(C_l)
    with p.pipelined(num_stages=2):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l)
    p.copy(Bias[0], bias)
    p.parallel((bM, bN), writes=[(C_l, lambda i, j: (i, j))], reads=[(C_l, lambda i, j: (i, j)),
                                                                      (bias, lambda i, j: (j,))], compute="add")
    p.reduce(C_l, row_max, dim=1, kind="max")
    p.copy(C_l, C[0, 0])
    p.copy(row_max, RowMax[0])
    return p


def gemm_shared_epilogue(M=1024, N=1024, K=1024, bM=64, bN=64, bK=32, threads=128, dtype="float16",
                         accum_dtype="float32", target="sm_80", num_stages=2) -> Program:
    """The docs GEMM storing C through shared memory (``C_local -> C_shared -> C``): on sm_90 the
    shared -> global copy is a TMA store, which lays ``C_shared`` out as a Hopper swizzle."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, K), dtype)
    B = p.tensor("B", (K, N), dtype)
    C = p.tensor("C", (M, N), dtype)
    A_s = p.alloc_shared("A_shared", (bM, bK), dtype)
    B_s = p.alloc_shared("B_shared", (bK, bN), dtype)
    C_l = p.alloc_fragment("C_local", (bM, bN), accum_dtype)
    C_s = p.alloc_shared("C_shared", (bM, bN), dtype)
    p.clear(C_l)
    with p.pipelined(num_stages=num_stages):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l)
    p.copy(C_l, C_s)
    p.copy(C_s, C[0, 0])
    return p


def shared_symmetrize(M=1024, bM=64, threads=128, dtype="float16", target="sm_80") -> Program:
    """``x = s + s^T`` from a shared tile (the transposed read keeps the loop scalar)."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, M), dtype)
    B = p.tensor("B", (M, M), dtype)
    s = p.alloc_shared("s", (bM, bM), dtype)
    x = p.alloc_fragment("x", (bM, bM), dtype)
    p.copy(A[0, 0], s)
    p.parallel((bM, bM), writes=[(x, lambda i, j: (i, j))], reads=[(s, lambda i, j: (i, j)),
                                                                    (s, lambda i, j: (j, i))])
    p.copy(x, B[0, 0])
    return p


def fragment_transpose(M=1024, bM=64, bN=64, threads=128, dtype="float16", target="sm_80") -> Program:
    """``y = x^T`` between two fragments loaded from and stored to global memory."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, M), dtype)
    B = p.tensor("B", (M, M), dtype)
    x = p.alloc_fragment("x", (bN, bM), dtype)
    y = p.alloc_fragment("y", (bM, bN), dtype)
    p.copy(A[0, 0], x)
    p.parallel((bM, bN), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
    p.copy(y, B[0, 0])
    return p


def elementwise_cast(M=1024, N=1024, bM=64, bN=64, threads=128, in_dtype="float32", out_dtype="float16",
                     target="sm_80") -> Program:
    """The elementwise kernel converting ``in_dtype`` to ``out_dtype`` (the narrower vector wins)."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, N), in_dtype)
    B = p.tensor("B", (M, N), out_dtype)
    A_f = p.alloc_fragment("A_frag", (bM, bN), in_dtype)
    B_f = p.alloc_fragment("B_frag", (bM, bN), out_dtype)
    p.copy(A[0, 0], A_f)
    p.parallel((bM, bN), writes=[(B_f, lambda i, j: (i, j))], reads=[(A_f, lambda i, j: (i, j))])
    p.copy(B_f, B[0, 0])
    return p


def tile_reduce(M=1024, N=1024, bM=64, bN=128, dim=1, kind="sum", threads=128, dtype="float32",
                target="sm_80") -> Program:
    """Load a tile into a fragment and reduce it along ``dim`` into a 1-D fragment stored out."""
    p = Program(threads=threads, target=target)
    out_len = bM if dim == 1 else bN
    A = p.tensor("A", (M, N), dtype)
    R = p.tensor("R", (M * N // (bM * bN) * out_len,), dtype)
    x = p.alloc_fragment("x", (bM, bN), dtype)
    r = p.alloc_fragment("r", (out_len,), dtype)
    p.copy(A[0, 0], x)
    p.reduce(x, r, dim=dim, kind=kind)
    p.copy(r, R[0])
    return p


def softmax(M=1024, N=1024, bM=64, bN=128, threads=128, dtype="float32", target="sm_80") -> Program:
    """Row softmax of a tile: row max, ``exp(x - max)``, row sum, divide."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, N), dtype)
    B = p.tensor("B", (M, N), dtype)
    x = p.alloc_fragment("x", (bM, bN), dtype)
    m = p.alloc_fragment("m", (bM,), dtype)
    s = p.alloc_fragment("s", (bM,), dtype)
    p.copy(A[0, 0], x)
    p.reduce(x, m, dim=1, kind="max")
    p.parallel((bM, bN), writes=[(x, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j)), (m, lambda i, j: (i,))])
    p.reduce(x, s, dim=1, kind="sum")
    p.parallel((bM, bN), writes=[(x, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j)), (s, lambda i, j: (i,))])
    p.copy(x, B[0, 0])
    return p


def column_bias(M=1024, N=1024, bM=64, bN=64, threads=128, dtype="float32", target="sm_80") -> Program:
    """``x[i, j] += b[j]`` with ``b`` loaded from global memory into a fragment."""
    p = Program(threads=threads, target=target)
    A = p.tensor("A", (M, N), dtype)
    Bias = p.tensor("Bias", (N,), dtype)
    B = p.tensor("B", (M, N), dtype)
    x = p.alloc_fragment("x", (bM, bN), dtype)
    b = p.alloc_fragment("b", (bN,), dtype)
    p.copy(A[0, 0], x)
    p.copy(Bias[0], b)
    p.parallel((bM, bN), writes=[(x, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j)), (b, lambda i, j: (j,))])
    p.copy(x, B[0, 0])
    return p



def ascend_gemm(M=250, N=250, K=250, bm=128, bn=128, bk=128, dtype="float16", transpose_A=False,
                transpose_B=False, relu=False) -> Program:
    """An Ascend GEMM ``C = A @ B`` (``C`` float32), every tile unrolled, tails in any dimension:
    GM -> L1 -> L0A/L0B -> Cube (MAD) -> L0C -> GM.  ``relu`` routes each accumulator tile through UB
    and a SIMT vector region instead (``dual_copy`` to the two vector cores, ReLU, ``dual_copy`` out).

    >>> p = ascend_gemm(M=100, N=72, K=40, bm=64, bn=64, bk=32)
    >>> [op.kind for op in p.ops][:5], len(p.ops)
    (['copy', 'copy', 'copy', 'copy', 'gemm'], 44)
    """
    p = Program(target="ascend")
    A = p.tensor("A", (K, M) if transpose_A else (M, K), dtype)
    B = p.tensor("B", (N, K) if transpose_B else (K, N), dtype)
    C = p.tensor("C", (M, N), "float32")
    a1 = p.alloc("A_l1", (bk, bm) if transpose_A else (bm, bk), dtype, "l1")
    b1 = p.alloc("B_l1", (bn, bk) if transpose_B else (bk, bn), dtype, "l1")
    a0 = p.alloc("A_l0", a1.shape, dtype, "l0a")
    b0 = p.alloc("B_l0", b1.shape, dtype, "l0b")
    c0 = p.alloc("C_l0", (bm, bn), "float32", "l0c")
    c_ub = p.alloc("C_ub", (bm // 2, bn), "float32", "ub") if relu else None
    for m in range(0, M, bm):
        for n in range(0, N, bn):
            for k in range(0, K, bk):
                p.copy(A[k:k + bk, m:m + bm] if transpose_A else A[m:m + bm, k:k + bk], a1)
                p.copy(B[n:n + bn, k:k + bk] if transpose_B else B[k:k + bk, n:n + bn], b1)
                p.copy(a1, a0)
                p.copy(b1, b0)
                p.mad(a0, b0, c0, transpose_A=transpose_A, transpose_B=transpose_B, clear_accum=k == 0)
            if relu:
                p.dual_copy(c0, c_ub)
                with p.simt_vf(threads=128):
                    p.parallel((bm // 2, bn), writes=[(c_ub, "lambda i, j: (i, j)")],
                               reads=[(c_ub, "lambda i, j: (i, j)")], compute="relu")
                p.dual_copy(c_ub, C[m:m + bm, n:n + bn])
            else:
                p.copy(c0, C[m:m + bm, n:n + bn])
    return p


def fragment_transpose_reduce(M=1024, bM=16, bN=48, dim=0, kind="sum", threads=128, dtype="float32",
                              target="sm_80") -> Program:
    """``y = x^T`` between fragments, then ``y`` reduced along ``dim`` and the result stored.  Where
    the transposed source's thread map mixes the reduced dimension with the kept one, the reduced
    layout has no inverse and TileLang discards the attempt (``loops.has_inverse``).

    >>> p = fragment_transpose_reduce(bM=16, bN=48, dim=0)
    >>> [op.kind for op in p.ops], p.shape_of("r")
    (['copy', 'parallel', 'reduce', 'copy'], (48,))
    """
    p = Program(threads=threads, target=target)
    out_len = bM if dim == 1 else bN
    A = p.tensor("A", (M, M), dtype)
    R = p.tensor("R", (M * M // (bM * bN) * out_len,), dtype)
    x = p.alloc_fragment("x", (bN, bM), dtype)
    y = p.alloc_fragment("y", (bM, bN), dtype)
    r = p.alloc_fragment("r", (out_len,), dtype)
    p.copy(A[0, 0], x)
    p.parallel((bM, bN), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
    p.reduce(y, r, dim=dim, kind=kind)
    p.copy(r, R[0])
    return p


def from_record(kernel: dict, target: dict) -> Program:
    """The program of a ``gemm_inferred.json`` case (its ``kernel`` and ``target`` fields)."""
    k = dict(kernel)
    kind = k.pop("kernel")
    arch = target.get("arch", "sm_80")
    rename = {"block_M": "bM", "block_N": "bN", "block_K": "bK"}
    k = {rename.get(a, a): v for a, v in k.items()}
    if "policy" in k:
        k["policy"] = str(k["policy"]).lower()
    builders: dict[str, Callable[..., Program]] = {
        "gemm": gemm, "elementwise": elementwise, "gemm_bias_rowmax": gemm_rowmax_bias,
        "gemm_rowmax_bias": gemm_rowmax_bias, "gemm_shared_epilogue": gemm_shared_epilogue,
        "shared_symmetrize": shared_symmetrize, "fragment_transpose": fragment_transpose,
        "elementwise_cast": elementwise_cast, "tile_reduce": tile_reduce, "softmax": softmax,
        "column_bias": column_bias, "fragment_transpose_reduce": fragment_transpose_reduce}
    build = builders[kind]
    params = inspect.signature(build).parameters
    return build(target=arch, **{a: v for a, v in k.items() if a in params})
