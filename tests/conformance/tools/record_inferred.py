"""Record the layouts TileLang's own ``LayoutInference`` pass picks for a set of small kernels.

Run with a Python that has ``tilelang`` installed (it is never a dependency of layoutkit)::

    TILELANG_CACHE_DIR=$(mktemp -d) python tests/conformance/tools/record_inferred.py OUT.json.gz [--append OLD.json.gz]

Each kernel is lowered for CUDA (no GPU needed: the target is a dict and lowering stops right after
layout inference).  ``tilelang.transform.LayoutInference`` is replaced by a factory whose pass runs
the real one, keeps its output module and raises :class:`_Stop` to end lowering.  From that module
we read every buffer of the block annotation ``layout_map`` and every ``T.Parallel`` loop annotated
with ``parallel_loop_layout`` (plus ``parallel_loop_predicate`` when present).

Output (gzip JSON): ``{"tilelang_version", "group": "tilelang_inferred", "cases": [...]}``; each case
is a ``gemm_inferred.json`` case (``id``, ``kernel``, ``target``, ``lower_seconds``, ``buffers``,
``io_aware_identical``) plus ``pass_seconds`` (the pass alone) and ``loops``: one entry per
``T.Parallel`` nest in program order, ``{"loop_shape", "predicate": str | null, ...fragment record}``
(or ``equal_to`` an earlier ``"<case id>#<buffer>"`` / ``"<case id>#loop<k>"`` with the same repr).
A kernel TileLang cannot lower is an error case: ``{"id", "kernel", "target", "error", "message"}``.

Tables follow ``tests/conformance/data/SCHEMA.md`` (the format of ``gemm_inferred.json``): they are
computed from TileLang's own layout objects, by evaluating their forward expressions (TVM ``PrimExpr``
trees) over the whole input domain with numpy, and every table is spot-checked against TVM's
``IndexMap.map_indices`` on random coordinates.  Nothing comes from layoutkit.

The first three kernel builders, those of the conformance kernel source (the TileLang docs GEMM, the
elementwise kernel and GEMM + bias + row max), come from ``tests/tilelang_kernels.py``; the others
(a shared-memory epilogue, transposed reads, a converting elementwise kernel, reductions, softmax, a
column bias, a transpose feeding a reduction) are mirrored by ``layoutkit.infer.programs``.

Re-recording must leave every earlier case as it was (timings aside): ``--append OLD.json.gz`` keeps
the cases of ``OLD`` verbatim, checks that the fresh record of each equals it except for
``lower_seconds`` / ``pass_seconds``, and appends only the cases ``OLD`` lacks.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("TILELANG_CACHE_DIR", tempfile.mkdtemp(prefix="tl-cache-"))

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
import tilelang.transform as tl_transform  # noqa: E402
from tilelang import tvm  # noqa: E402
from tilelang.tileop.base import GemmWarpPolicy  # noqa: E402
from tvm import tirx  # noqa: E402

# The three kernels of the conformance source (the docs GEMM, elementwise, GEMM + bias + row max) are
# shared with the adapter's tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tests.tilelang_kernels import elementwise, gemm, gemm_rowmax_bias  # noqa: E402

# ---- the kernels (TileLang source of the recorded kernels) ---------------------------------------


# ---- more kernels (layoutkit's builders of the same names mirror them) ----------------------------


def gemm_shared_epilogue(M, N, K, bM, bN, bK, threads=128, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), dtype)
            B_shared = T.alloc_shared((bK, bN), dtype)
            C_local = T.alloc_fragment((bM, bN), accum_dtype)
            C_shared = T.alloc_shared((bM, bN), dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_shared)
                T.copy(B[ko * bK, bx * bN], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * bM, bx * bN])
    return main


def shared_symmetrize(M, bM, threads=128, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, M), dtype), B: T.Tensor((M, M), dtype)):
        with T.Kernel(T.ceildiv(M, bM), T.ceildiv(M, bM), threads=threads) as (bx, by):
            s = T.alloc_shared((bM, bM), dtype)
            x = T.alloc_fragment((bM, bM), dtype)
            T.copy(A[by * bM, bx * bM], s)
            for i, j in T.Parallel(bM, bM):
                x[i, j] = s[i, j] + s[j, i]
            T.copy(x, B[by * bM, bx * bM])
    return main


def fragment_transpose(M, bM, bN, threads=128, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, M), dtype), B: T.Tensor((M, M), dtype)):
        with T.Kernel(T.ceildiv(M, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            x = T.alloc_fragment((bN, bM), dtype)
            y = T.alloc_fragment((bM, bN), dtype)
            T.copy(A[bx * bN, by * bM], x)
            for i, j in T.Parallel(bM, bN):
                y[i, j] = x[j, i]
            T.copy(y, B[by * bM, bx * bN])
    return main


def elementwise_cast(M, N, bM, bN, threads=128, in_dtype=T.float32, out_dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_frag = T.alloc_fragment((bM, bN), in_dtype)
            B_frag = T.alloc_fragment((bM, bN), out_dtype)
            T.copy(A[by * bM, bx * bN], A_frag)
            for i, j in T.Parallel(bM, bN):
                B_frag[i, j] = T.cast(A_frag[i, j], out_dtype)
            T.copy(B_frag, B[by * bM, bx * bN])
    return main


def tile_reduce(M, N, bM, bN, dim=1, kind="sum", threads=128, dtype=T.float32):
    out_len = bM if dim == 1 else bN

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), R: T.Tensor((M * N // (bM * bN) * out_len,), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            x = T.alloc_fragment((bM, bN), dtype)
            r = T.alloc_fragment((out_len,), dtype)
            T.copy(A[by * bM, bx * bN], x)
            if kind == "sum":
                T.reduce_sum(x, r, dim=dim)
            else:
                T.reduce_max(x, r, dim=dim)
            T.copy(r, R[(by * T.ceildiv(N, bN) + bx) * out_len])
    return main


def softmax(M, N, bM, bN, threads=128, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            x = T.alloc_fragment((bM, bN), dtype)
            m = T.alloc_fragment((bM,), dtype)
            s = T.alloc_fragment((bM,), dtype)
            T.copy(A[by * bM, bx * bN], x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(bM, bN):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(bM, bN):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, B[by * bM, bx * bN])
    return main


def column_bias(M, N, bM, bN, threads=128, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Bias: T.Tensor((N,), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            x = T.alloc_fragment((bM, bN), dtype)
            b = T.alloc_fragment((bN,), dtype)
            T.copy(A[by * bM, bx * bN], x)
            T.copy(Bias[bx * bN], b)
            for i, j in T.Parallel(bM, bN):
                x[i, j] = x[i, j] + b[j]
            T.copy(x, B[by * bM, bx * bN])
    return main



def fragment_transpose_reduce(M, bM, bN, dim=1, kind="sum", threads=128, dtype=T.float32):
    """``y = x^T`` between fragments, then ``y`` reduced along ``dim``: when the transposed source's
    thread map mixes the reduced dimension with the kept one, the reduced layout puts several
    elements on one thread register and TileLang cannot invert it (see ``has_inverse``)."""
    out_len = bM if dim == 1 else bN

    @T.prim_func
    def main(A: T.Tensor((M, M), dtype), R: T.Tensor((M * M // (bM * bN) * out_len,), dtype)):
        with T.Kernel(T.ceildiv(M, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            x = T.alloc_fragment((bN, bM), dtype)
            y = T.alloc_fragment((bM, bN), dtype)
            r = T.alloc_fragment((out_len,), dtype)
            T.copy(A[bx * bN, by * bM], x)
            for i, j in T.Parallel(bM, bN):
                y[i, j] = x[j, i]
            if kind == "sum":
                T.reduce_sum(y, r, dim=dim)
            else:
                T.reduce_max(y, r, dim=dim)
            T.copy(r, R[(by * T.ceildiv(M, bN) + bx) * out_len])
    return main

# ---- the kernel set -------------------------------------------------------------------------------

SIZE = 1024


def _gemm_case(arch, tile, threads, policy="Square", transpose_B=False, dtype="float16",
               accum_dtype="float32", num_stages=2):
    bm, bn, bk = tile
    kernel = {"kernel": "gemm", "M": SIZE, "N": SIZE, "K": SIZE, "block_M": bm, "block_N": bn, "block_K": bk,
              "threads": threads, "num_stages": num_stages, "dtype": dtype, "accum_dtype": accum_dtype,
              "policy": policy, "transpose_B": transpose_B}
    cid = f"gemm/{arch}/{bm}x{bn}x{bk}_t{threads}/{policy}"
    if dtype != "float16" or accum_dtype != "float32":
        cid += f"/{dtype}_{accum_dtype}"
    if transpose_B:
        cid += "/transpose_B"
    if num_stages != 2:
        cid += f"/stages{num_stages}"
    return cid, kernel, arch


def _elementwise_case(arch, tile, threads, dtype="float16"):
    bm, bn = tile
    kernel = {"kernel": "elementwise", "M": SIZE, "N": SIZE, "block_M": bm, "block_N": bn, "threads": threads,
              "dtype": dtype}
    return f"elementwise/{arch}/{bm}x{bn}_t{threads}/{dtype}", kernel, arch


def _rowmax_case(arch, tile, threads, dtype="float16", accum_dtype="float32"):
    bm, bn, bk = tile
    kernel = {"kernel": "gemm_bias_rowmax", "M": SIZE, "N": SIZE, "K": SIZE, "block_M": bm, "block_N": bn,
              "block_K": bk, "threads": threads, "dtype": dtype, "accum_dtype": accum_dtype}
    return f"gemm_bias_rowmax/{arch}/{bm}x{bn}x{bk}_t{threads}", kernel, arch


def kernel_set() -> list[tuple[str, dict, str]]:
    """The 16 kernels of the conformance schema, then variants (threads, dtypes, shapes, archs)."""
    cases = []
    for tile, threads in (((32, 32, 32), 128), ((64, 64, 32), 128), ((128, 128, 32), 256)):
        for policy in ("Square", "FullRow", "FullCol"):
            cases.append(_gemm_case("sm_80", tile, threads, policy))
    cases += [
        _gemm_case("sm_80", (64, 64, 32), 128, transpose_B=True),
        _gemm_case("sm_80", (64, 64, 64), 128, transpose_B=True, dtype="int8", accum_dtype="int32"),
        _gemm_case("sm_70", (64, 64, 32), 128),
        _gemm_case("sm_90", (64, 64, 32), 128),
        _elementwise_case("sm_80", (64, 64), 128),
        _elementwise_case("sm_80", (128, 128), 128),
        _rowmax_case("sm_80", (64, 64, 32), 128),
    ]
    # variants beyond the 16
    cases += [
        _gemm_case("sm_80", (32, 32, 32), 64),
        _gemm_case("sm_80", (64, 64, 32), 64),
        _gemm_case("sm_80", (64, 64, 32), 256),
        _gemm_case("sm_80", (64, 64, 32), 256, "FullRow"),
        _gemm_case("sm_80", (64, 64, 32), 256, "FullCol"),
        _gemm_case("sm_80", (128, 64, 32), 128),
        _gemm_case("sm_80", (64, 128, 32), 128, "FullRow"),
        _gemm_case("sm_80", (64, 64, 32), 128, dtype="bfloat16"),
        _gemm_case("sm_80", (64, 64, 32), 128, dtype="float32"),
        _gemm_case("sm_80", (64, 64, 32), 128, num_stages=3),
        _gemm_case("sm_80", (64, 64, 32), 128, "FullRow", transpose_B=True),
        _gemm_case("sm_80", (128, 128, 32), 128),
        _gemm_case("sm_70", (32, 32, 32), 128),
        _gemm_case("sm_90", (128, 128, 32), 128),
        _gemm_case("sm_90", (128, 128, 32), 256),
        _gemm_case("sm_90", (64, 64, 32), 128, transpose_B=True),
        _elementwise_case("sm_80", (32, 128), 128),
        _elementwise_case("sm_80", (128, 64), 128),
        _elementwise_case("sm_80", (16, 256), 128),
        _elementwise_case("sm_80", (64, 64), 256),
        _elementwise_case("sm_80", (64, 64), 64),
        _elementwise_case("sm_80", (64, 64), 128, "float32"),
        _elementwise_case("sm_80", (32, 32), 128, "bfloat16"),
        _elementwise_case("sm_80", (8, 8), 128),
        _rowmax_case("sm_80", (32, 32, 32), 128),
        _rowmax_case("sm_80", (128, 128, 32), 128),
        _rowmax_case("sm_80", (64, 64, 32), 256),
        _rowmax_case("sm_80", (128, 128, 32), 256),
        _rowmax_case("sm_80", (64, 128, 32), 128),
        _rowmax_case("sm_70", (64, 64, 32), 128),
        _rowmax_case("sm_90", (64, 64, 32), 128),
        _gemm_case("sm_80", (16, 64, 32), 128),
        _gemm_case("sm_80", (64, 16, 32), 128, "FullRow"),
        _gemm_case("sm_80", (64, 64, 64), 128, dtype="int8", accum_dtype="int32"),
        _gemm_case("sm_75", (64, 64, 32), 128),
        _gemm_case("sm_89", (64, 64, 32), 128),
        _gemm_case("sm_80", (128, 256, 32), 256),
        _gemm_case("sm_80", (64, 64, 32), 128, num_stages=1),
        _gemm_case("sm_70", (128, 128, 32), 256, "FullRow"),
        # free-mode partition corners: fewer elements than threads (replication), vector widths
        # limited by the row length, rows straddling vectors, ragged totals (TileLang fails there)
        _elementwise_case("sm_80", (16, 16), 128),
        _elementwise_case("sm_80", (4, 32), 128),
        _elementwise_case("sm_80", (8, 8), 128, "float32"),
        _elementwise_case("sm_80", (3, 5), 32),
        _elementwise_case("sm_80", (128, 24), 128),
        _elementwise_case("sm_80", (256, 4), 128),
        _elementwise_case("sm_80", (12, 32), 128),
        _elementwise_case("sm_80", (64, 12), 128),
        _elementwise_case("sm_80", (128, 7), 128, "float32"),
        _elementwise_case("sm_80", (100, 7), 128),
        _elementwise_case("sm_80", (24, 40), 128),
        # shared-memory epilogues (a TMA store lays C_shared out on sm_90), scalar loops from
        # transposed reads (ties between roots: the earliest wins), mixed-width vectors
        _other_case("gemm_shared_epilogue", "sm_80", "64x64x32_t128", M=SIZE, N=SIZE, K=SIZE, block_M=64,
                    block_N=64, block_K=32, threads=128, dtype="float16", accum_dtype="float32"),
        _other_case("gemm_shared_epilogue", "sm_90", "64x64x32_t128", M=SIZE, N=SIZE, K=SIZE, block_M=64,
                    block_N=64, block_K=32, threads=128, dtype="float16", accum_dtype="float32"),
        _other_case("gemm_shared_epilogue", "sm_90", "128x128x32_t256", M=SIZE, N=SIZE, K=SIZE, block_M=128,
                    block_N=128, block_K=32, threads=256, dtype="float16", accum_dtype="float32"),
        _other_case("shared_symmetrize", "sm_80", "64_t128", M=SIZE, block_M=64, threads=128, dtype="float16"),
        _other_case("shared_symmetrize", "sm_90", "32_t128", M=SIZE, block_M=32, threads=128, dtype="float32"),
        _other_case("fragment_transpose", "sm_80", "64x64_t128", M=SIZE, block_M=64, block_N=64, threads=128,
                    dtype="float16"),
        _other_case("fragment_transpose", "sm_80", "32x64_t128", M=SIZE, block_M=32, block_N=64, threads=128,
                    dtype="float16"),
        _other_case("fragment_transpose", "sm_80", "64x16_t128", M=SIZE, block_M=64, block_N=16, threads=128,
                    dtype="float32"),
        # thread maps of fused iterators, ``(_j * 12 + _i // 4) % 32``: the register index keeps the
        # fused iterator's unused digit
        _other_case("fragment_transpose", "sm_80", "48x24_t32", M=SIZE, block_M=48, block_N=24, threads=32,
                    dtype="float32"),
        _other_case("fragment_transpose", "sm_80", "96x8_t256", M=SIZE, block_M=96, block_N=8, threads=256,
                    dtype="float16"),
        _other_case("fragment_transpose", "sm_80", "96x16_t32", M=SIZE, block_M=96, block_N=16, threads=32,
                    dtype="float32"),
        _other_case("elementwise_cast", "sm_80", "64x64_t128/float32_float16", M=SIZE, N=SIZE, block_M=64,
                    block_N=64, threads=128, in_dtype="float32", out_dtype="float16"),
        _other_case("elementwise_cast", "sm_80", "32x128_t128/float16_float32", M=SIZE, N=SIZE, block_M=32,
                    block_N=128, threads=128, in_dtype="float16", out_dtype="float32"),
        _other_case("elementwise_cast", "sm_80", "16x64_t128/int8_float16", M=SIZE, N=SIZE, block_M=16,
                    block_N=64, threads=128, in_dtype="int8", out_dtype="float16"),
        # sm_90 warp specialisation with a producer copy that cannot be TMA (a 2008-byte row stride):
        # the producer partition is as wide as the consumers
        ("gemm/sm_90/128x128x32_t256/Square/N1004", {**_gemm_case("sm_90", (128, 128, 32), 256)[1], "N": 1004},
         "sm_90"),
        ("gemm/sm_90/64x64x32_t128/Square/K1004", {**_gemm_case("sm_90", (64, 64, 32), 128)[1], "K": 1004},
         "sm_90"),
        # reductions, softmax, a broadcast column bias
        _other_case("tile_reduce", "sm_80", "64x128_t128/dim1_sum", M=SIZE, N=SIZE, block_M=64, block_N=128,
                    dim=1, kind="sum", threads=128, dtype="float32"),
        _other_case("tile_reduce", "sm_80", "64x128_t128/dim0_max", M=SIZE, N=SIZE, block_M=64, block_N=128,
                    dim=0, kind="max", threads=128, dtype="float32"),
        _other_case("tile_reduce", "sm_80", "32x32_t128/dim1_max", M=SIZE, N=SIZE, block_M=32, block_N=32,
                    dim=1, kind="max", threads=128, dtype="float16"),
        _other_case("tile_reduce", "sm_80", "128x16_t256/dim1_sum", M=SIZE, N=SIZE, block_M=128, block_N=16,
                    dim=1, kind="sum", threads=256, dtype="float32"),
        # a replicated source (64 elements on 128 threads): the reduced layout's replica digits are
        # re-ordered by CondenseReplicateVar
        _other_case("tile_reduce", "sm_80", "8x8_t128/dim1_sum", M=SIZE, N=SIZE, block_M=8, block_N=8,
                    dim=1, kind="sum", threads=128, dtype="bfloat16"),
        _other_case("tile_reduce", "sm_80", "8x8_t128/dim0_max", M=SIZE, N=SIZE, block_M=8, block_N=8,
                    dim=0, kind="max", threads=128, dtype="float32"),
        _other_case("softmax", "sm_80", "64x128_t128", M=SIZE, N=SIZE, block_M=64, block_N=128, threads=128,
                    dtype="float32"),
        _other_case("softmax", "sm_80", "16x256_t128", M=SIZE, N=SIZE, block_M=16, block_N=256, threads=128,
                    dtype="float32"),
        _other_case("column_bias", "sm_80", "64x64_t128", M=SIZE, N=SIZE, block_M=64, block_N=64, threads=128,
                    dtype="float32"),
        _other_case("column_bias", "sm_80", "32x128_t128", M=SIZE, N=SIZE, block_M=32, block_N=128, threads=128,
                    dtype="float16"),
    ]
    # a transpose feeding a reduction: attempts whose reduced layout TileLang cannot invert are
    # discarded, so the root differs from the cheapest-looking one (all but the last)
    for bm, bn, dim, kind, threads in ((16, 48, 0, "sum", 128), (48, 16, 1, "max", 256), (8, 96, 0, "sum", 256),
                                       (96, 8, 1, "max", 128), (16, 80, 0, "max", 256), (12, 16, 1, "sum", 64),
                                       (64, 32, 0, "max", 128)):
        cases.append(_other_case("fragment_transpose_reduce", "sm_80", f"{bm}x{bn}_t{threads}/dim{dim}_{kind}",
                                 M=960, block_M=bm, block_N=bn, dim=dim, kind=kind, threads=threads,
                                 dtype="float32"))
    return cases


def _other_case(kernel: str, arch: str, tag: str, **params):
    return f"{kernel}/{arch}/{tag}", {"kernel": kernel, **params}, arch


def build(kernel: dict):
    k = dict(kernel)
    kind = k.pop("kernel")
    if kind == "gemm":
        return gemm(k["M"], k["N"], k["K"], k["block_M"], k["block_N"], k["block_K"], threads=k["threads"],
                    num_stages=k["num_stages"], dtype=k["dtype"], accum_dtype=k["accum_dtype"],
                    policy=getattr(GemmWarpPolicy, k["policy"]), trans_B=k["transpose_B"])
    if kind == "elementwise":
        return elementwise(k["M"], k["N"], k["block_M"], k["block_N"], threads=k["threads"], dtype=k["dtype"])
    if kind == "gemm_shared_epilogue":
        return gemm_shared_epilogue(k["M"], k["N"], k["K"], k["block_M"], k["block_N"], k["block_K"],
                                    threads=k["threads"], dtype=k["dtype"], accum_dtype=k["accum_dtype"])
    if kind == "shared_symmetrize":
        return shared_symmetrize(k["M"], k["block_M"], threads=k["threads"], dtype=k["dtype"])
    if kind == "fragment_transpose":
        return fragment_transpose(k["M"], k["block_M"], k["block_N"], threads=k["threads"], dtype=k["dtype"])
    if kind == "elementwise_cast":
        return elementwise_cast(k["M"], k["N"], k["block_M"], k["block_N"], threads=k["threads"],
                                in_dtype=k["in_dtype"], out_dtype=k["out_dtype"])
    if kind == "tile_reduce":
        return tile_reduce(k["M"], k["N"], k["block_M"], k["block_N"], dim=k["dim"], kind=k["kind"],
                           threads=k["threads"], dtype=k["dtype"])
    if kind == "softmax":
        return softmax(k["M"], k["N"], k["block_M"], k["block_N"], threads=k["threads"], dtype=k["dtype"])
    if kind == "fragment_transpose_reduce":
        return fragment_transpose_reduce(k["M"], k["block_M"], k["block_N"], dim=k["dim"], kind=k["kind"],
                                         threads=k["threads"], dtype=k["dtype"])
    if kind == "column_bias":
        return column_bias(k["M"], k["N"], k["block_M"], k["block_N"], threads=k["threads"], dtype=k["dtype"])
    return gemm_rowmax_bias(k["M"], k["N"], k["K"], k["block_M"], k["block_N"], k["block_K"], threads=k["threads"],
                            dtype=k["dtype"], accum_dtype=k["accum_dtype"])


# ---- capturing the pass output -------------------------------------------------------------------


class _Stop(Exception):
    """Raised by the wrapped pass: lowering ends right after layout inference."""


def inferred_module(kernel: dict, arch: str, pass_configs: dict | None = None):
    """The IRModule LayoutInference returns for ``kernel``, and the pass time in seconds."""
    captured = {}
    real = tl_transform.LayoutInference

    def factory():
        inner = real()

        def run(mod):
            t0 = time.perf_counter()
            captured["mod"] = inner(mod)
            captured["seconds"] = time.perf_counter() - t0
            raise _Stop

        return run

    target = {"kind": "cuda", "arch": arch}
    tl_transform.LayoutInference = factory
    try:
        with tvm.transform.PassContext(config=pass_configs or {}), tvm.target.Target(target):
            try:
                tilelang.lower(build(kernel), target=target)
            except _Stop:
                pass
    finally:
        tl_transform.LayoutInference = real
    if "mod" not in captured:
        raise RuntimeError(f"lowering {kernel} never reached LayoutInference")
    return captured["mod"], captured["seconds"]


def collect(mod):
    """``({buffer name: (Buffer, layout)}, [(For, loop layout, predicate)])`` in program order."""
    layouts: dict = {}
    loops: list = []
    func = mod["main"]

    def visit(node):
        ann = getattr(node, "annotations", None)
        if ann is None:
            return
        if "layout_map" in ann:
            for buf, lay in ann["layout_map"].items():
                layouts.setdefault(buf.name, (buf, lay))
        if isinstance(node, tirx.For) and "parallel_loop_layout" in ann:
            loops.append((node, ann["parallel_loop_layout"], ann.get("parallel_loop_predicate")))

    # only the outermost loop of a nest is annotated, so post-order keeps the nests in source order
    tirx.stmt_functor.post_order_visit(func.body, visit)
    return layouts, loops


# ---- evaluating TileLang's expressions over a whole domain ---------------------------------------

_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide, "FloorMod": np.mod,
    "Min": np.minimum, "Max": np.maximum, "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
}
_CALLS = {"tirx.bitwise_xor": np.bitwise_xor, "tirx.bitwise_and": np.bitwise_and,
          "tirx.bitwise_or": np.bitwise_or, "tirx.shift_right": np.right_shift, "tirx.shift_left": np.left_shift}


def evaluate(expr, env: dict) -> np.ndarray:
    """Evaluate a TVM integer ``PrimExpr`` with numpy; ``env`` maps variable names to arrays."""
    kind = type(expr).__name__
    if kind == "IntImm":
        return np.int64(expr.value)
    if kind == "Var":
        return env[expr.name]
    if kind in _BINARY:
        return _BINARY[kind](evaluate(expr.a, env), evaluate(expr.b, env)).astype(np.int64)
    if kind in ("Div", "Mod"):
        a, b = evaluate(expr.a, env), evaluate(expr.b, env)
        if np.any(a < 0):
            raise ValueError(f"truncated {kind} of a negative value in {expr}")
        return a // b if kind == "Div" else a % b
    if kind == "Cast":
        return evaluate(expr.value, env)
    if kind == "Not":
        return np.logical_not(evaluate(expr.a, env)).astype(np.int64)
    if kind == "Select":
        return np.where(evaluate(expr.condition, env), evaluate(expr.true_value, env),
                        evaluate(expr.false_value, env)).astype(np.int64)
    if kind == "Call" and str(expr.op.name) in _CALLS:
        args = [evaluate(a, env) for a in expr.args]
        return _CALLS[str(expr.op.name)](*args).astype(np.int64)
    raise TypeError(f"cannot evaluate {kind}: {expr}")


def _vars(layout):
    out = []
    for v in layout.get_forward_vars():
        out.append(v.var if hasattr(v, "var") else v)
    return out


def _domain(layout, shape, rep=None):
    """``env`` for every coordinate (row-major), optionally for replica ``rep``."""
    grids = np.indices(shape).reshape(len(shape), -1).astype(np.int64)
    env, k = {}, 0
    for v in _vars(layout):
        if v.name == "_rep":
            env[v.name] = np.full(grids.shape[1], rep or 0, dtype=np.int64)
        else:
            env[v.name] = grids[k]
            k += 1
    return env


def _broadcast(x, n):
    return np.broadcast_to(np.asarray(x, dtype=np.int64), (n,))


def _linear(cols, out_shape) -> np.ndarray:
    flat = np.zeros_like(cols[0])
    for c, n in zip(cols, out_shape):
        if np.any((c < 0) | (c >= n)):
            raise ValueError(f"output {c.min()}..{c.max()} outside bound {n}")
        flat = flat * n + c
    return flat


def _spot_check(layout, shape, exprs, table_cols, rng, rep_values=(None,)):
    """Compare the numpy tables with ``IndexMap.map_indices`` on random coordinates."""
    fvars = layout.get_forward_vars()
    imap = tirx.IndexMap(initial_indices=fvars, final_indices=list(exprs), inverse_index_map=None)
    n = int(np.prod(shape))
    for rep in rep_values:
        for flat in rng.choice(n, size=min(n, 24), replace=False):
            coord = [int(c) for c in np.unravel_index(flat, shape)]
            args = ([rep] if rep is not None else []) + coord
            got = [int(x) for x in imap.map_indices([tvm.tirx.IntImm("int32", a) for a in args])]
            want = [int(col[(rep or 0)][flat]) for col in table_cols]
            if got != want:
                raise AssertionError(f"numpy evaluation {want} != map_indices {got} at {args} of {layout}")


def layout_record(layout, shape, rng) -> dict:
    shape = [int(x) for x in layout.get_input_shape()]
    out_shape = [int(x) for x in layout.get_output_shape()]
    index = list(layout.index)
    env = _domain(layout, shape)
    n = int(np.prod(shape))
    cols = [_broadcast(evaluate(e, env), n) for e in index]
    _spot_check(layout, shape, index, [[c] for c in cols], rng)
    return {"kind": "layout", "type_key": "Layout", "input_shape": shape, "output_shape": out_shape,
            "forward_expr": [str(e) for e in index], "forward_linear": _linear(cols, out_shape).tolist()}


def fragment_record(frag, rng) -> dict:
    shape = [int(x) for x in frag.get_input_shape()]
    out_shape = [int(x) for x in frag.get_output_shape()]
    R = int(frag.replicate_size)
    n = int(np.prod(shape))
    index = list(frag.index)
    threads, idx_rows = [], []
    for r in range(R):
        env = _domain(frag, shape, r)
        threads.append(_broadcast(evaluate(frag.thread, env), n))
        idx_rows.append(_linear([_broadcast(evaluate(e, env), n) for e in index], out_shape))
    depends = any(not np.array_equal(idx_rows[0], row) for row in idx_rows[1:])
    reps = [None] if R == 1 else [0, R - 1]
    _spot_check(frag, shape, [frag.thread], [threads], rng, reps)
    rng_ = frag.thread_range
    rec = {"kind": "fragment", "type_key": "Fragment", "input_shape": shape, "output_shape": out_shape,
           "replicate": R, "thread_extent": int(frag.get_thread_size()),
           "thread_range": None if rng_ is None else [int(rng_.min), int(rng_.extent)],
           "forward_thread_expr": str(frag.thread), "forward_index_expr": [str(e) for e in index],
           "thread": np.concatenate(threads).tolist(),
           "index_linear": (np.concatenate(idx_rows) if depends else idx_rows[0]).tolist(),
           "index_depends_on_rep": bool(depends)}
    return rec


def record_of(layout, rng) -> dict:
    is_fragment = type(layout).__name__ == "Fragment"
    rec = fragment_record(layout, rng) if is_fragment else layout_record(layout, None, rng)
    rec["repr"] = str(layout)
    return rec


# ---- one case -------------------------------------------------------------------------------------


def _signature(layouts, loops) -> list[str]:
    return [f"{k}: {v[1]}" for k, v in sorted(layouts.items())] + [str(lay) for _f, lay, _p in loops]


def record_case(cid: str, kernel: dict, arch: str, seen: dict, rng) -> dict:
    t0 = time.perf_counter()
    mod, seconds = inferred_module(kernel, arch)
    lower_seconds = time.perf_counter() - t0
    layouts, loops = collect(mod)
    buffers = {}
    for name, (buf, lay) in layouts.items():
        head = {"buffer_shape": [int(x) for x in buf.shape], "dtype": str(buf.dtype), "scope": buf.scope()}
        key = str(lay)
        if key in seen:
            buffers[name] = {**head, "kind": seen[key][1], "repr": key, "equal_to": seen[key][0]}
            continue
        rec = record_of(lay, rng)
        seen[key] = (f"{cid}#{name}", rec["kind"])
        buffers[name] = {**head, **rec}
    loop_recs = []
    for k, (node, lay, pred) in enumerate(loops):
        key = str(lay)
        extents = [int(node.extent)]
        body = node.body
        while isinstance(body, tirx.For):
            extents.append(int(body.extent))
            body = body.body
        entry = {"loop_shape": extents, "predicate": None if pred is None else str(pred)}
        if key in seen:
            entry.update(kind=seen[key][1], repr=key, equal_to=seen[key][0])
        else:
            rec = record_of(lay, rng)
            seen[key] = (f"{cid}#loop{k}", rec["kind"])
            entry.update(rec)
        loop_recs.append(entry)
    io_mod, _ = inferred_module(kernel, arch, {"tl.layout_cost_model": "io-aware"})
    io_layouts, io_loops = collect(io_mod)
    return {"id": cid, "kernel": kernel, "target": {"kind": "cuda", "arch": arch},
            "lower_seconds": round(lower_seconds, 3), "pass_seconds": round(seconds, 4),
            "buffers": buffers, "loops": loop_recs,
            "io_aware_identical": _signature(layouts, loops) == _signature(io_layouts, io_loops)}


_TIMINGS = ("lower_seconds", "pass_seconds")


def _untimed(case: dict) -> dict:
    return {k: v for k, v in case.items() if k not in _TIMINGS}


def keep_recorded(fresh: list[dict], old: list[dict]) -> list[dict]:
    """The cases of ``old`` verbatim, then the ``fresh`` ones it lacks; a fresh record of an old case
    that differs in anything but its timings is an error (TileLang or this tool changed)."""
    by_id = {c["id"]: c for c in old}
    for case in fresh:
        was = by_id.get(case["id"])
        if was is not None and _untimed(was) != _untimed(case):
            raise SystemExit(f"{case['id']}: the fresh record differs from the recorded one")
    return list(old) + [c for c in fresh if c["id"] not in by_id]


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--append"):
        print(__doc__)
        return 2
    out_path = argv[1]
    rng = np.random.default_rng(0)
    seen: dict = {}
    cases = []
    for cid, kernel, arch in kernel_set():
        try:
            cases.append(record_case(cid, kernel, arch, seen, rng))
        except Exception as err:  # a kernel TileLang cannot lower is recorded as such
            cases.append({"id": cid, "kernel": kernel, "target": {"kind": "cuda", "arch": arch},
                          "error": type(err).__name__, "message": str(err).strip().splitlines()[-1][:400]})
        print(cid, "error" if "error" in cases[-1] else "ok", file=sys.stderr)
    if len(argv) == 4:
        with gzip.open(argv[3], "rt") as fh:
            cases = keep_recorded(cases, json.load(fh)["cases"])
    doc = {"tilelang_version": tilelang.__version__, "group": "tilelang_inferred", "cases": cases,
           "note": "recorded by tests/conformance/tools/record_inferred.py"}
    with gzip.open(out_path, "wt") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
