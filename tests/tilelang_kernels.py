"""TileLang kernels whose layouts layoutkit's TileLang adapter solves next to TileLang's own inference.

The first three are the kernels of the conformance data (the docs GEMM, the elementwise kernel and
GEMM + bias + row max); the rest are GEMM variants, elementwise (one with a dynamic row count),
row/column reductions, a softmax over a tile, GEMM + bias + ReLU, a tile atomic add, an annotated
swizzle, an attention head (a GEMM with its A operand in registers), two kernels written without
``threads=`` (TileLang's default 128), a shared-memory ``T.transpose``, a convolution over ``T.im2col``
tiles, copies between shapes that differ by unit dims, ``T.reshape`` / ``T.view`` aliases, shared
slices selected by a serial loop variable, copies whose sides' extents differ, fragments indexed by a
serial loop variable from outside their parallel loop (flash decoding's combine), GEMMs on sub-regions
of shared tiles, parallel loops with runtime extents (``T.min(n, 512)``), int4 dequantisation
(``B_local[i, j // 2]``), and two kernels TileLang 0.1.15's inference fails on (a 100 x 7 tile on
128 threads; a reduction over a 4 x 100 tile).

Importing this module never needs TileLang; calling a builder does.  :data:`KERNELS` maps a name to a
zero-argument builder returning the ``T.prim_func``; :data:`TILELANG_FAILS` names the kernels
TileLang cannot lay out by itself; :data:`BOTH_FAIL` holds kernels no layout fits.

>>> sorted(TILELANG_FAILS)
['reduce_4x100', 'tile_100x7']
>>> len(KERNELS) >= 13
True
"""

# No `from __future__ import annotations`: TileLang evaluates the T.Tensor annotations of each
# prim_func against the builder's closure, which string annotations would not capture.
from collections.abc import Callable

try:  # the builders need TileLang; importing the module (doctests, collection) must not
    import tilelang.language as T
    from tilelang.tileop.base import GemmWarpPolicy
except ImportError:  # pragma: no cover - exercised where TileLang is absent
    T = None
    GemmWarpPolicy = None


# ---- the three kernels of the conformance data ---------------------------------------------------

def gemm(M, N, K, bM, bN, bK, threads=128, num_stages=2, dtype="float16", accum_dtype="float32",
         policy=None, trans_B=False):
    policy = GemmWarpPolicy.Square if policy is None else policy

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(((N, K) if trans_B else (K, N)), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), dtype)
            B_shared = T.alloc_shared(((bN, bK) if trans_B else (bK, bN)), dtype)
            C_local = T.alloc_fragment((bM, bN), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=num_stages):
                T.copy(A[by * bM, ko * bK], A_shared)
                if trans_B:
                    T.copy(B[bx * bN, ko * bK], B_shared)
                else:
                    T.copy(B[ko * bK, bx * bN], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B, policy=policy)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def elementwise(M, N, bM, bN, threads=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_frag = T.alloc_fragment((bM, bN), dtype)
            B_frag = T.alloc_fragment((bM, bN), dtype)
            T.copy(A[by * bM, bx * bN], A_frag)
            for i, j in T.Parallel(bM, bN):
                B_frag[i, j] = A_frag[i, j] * T.cast(2, dtype)
            T.copy(B_frag, B[by * bM, bx * bN])
    return main


def gemm_rowmax_bias(M, N, K, bM, bN, bK, threads=128, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), Bias: T.Tensor((N,), accum_dtype),
             C: T.Tensor((M, N), dtype), RowMax: T.Tensor((M,), accum_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), dtype)
            B_shared = T.alloc_shared((bK, bN), dtype)
            C_local = T.alloc_fragment((bM, bN), accum_dtype)
            bias_frag = T.alloc_fragment((bN,), accum_dtype)
            row_max = T.alloc_fragment((bM,), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_shared)
                T.copy(B[ko * bK, bx * bN], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(Bias[bx * bN], bias_frag)
            for i, j in T.Parallel(bM, bN):
                C_local[i, j] = C_local[i, j] + bias_frag[j]
            T.reduce_max(C_local, row_max, dim=1)
            T.copy(C_local, C[by * bM, bx * bN])
            T.copy(row_max, RowMax[by * bM])
    return main


# ---- more kernels --------------------------------------------------------------------------------

def elementwise_add(M, N, bM, bN, threads=256, dtype="float32"):
    """``C = A + B`` through fragments, with a scalar epilogue in the loop."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_frag = T.alloc_fragment((bM, bN), dtype)
            B_frag = T.alloc_fragment((bM, bN), dtype)
            C_frag = T.alloc_fragment((bM, bN), dtype)
            T.copy(A[by * bM, bx * bN], A_frag)
            T.copy(B[by * bM, bx * bN], B_frag)
            for i, j in T.Parallel(bM, bN):
                C_frag[i, j] = A_frag[i, j] + B_frag[i, j]
            T.copy(C_frag, C[by * bM, bx * bN])
    return main


def elementwise_dynamic(N=64, bM=64, threads=128, dtype="float16"):
    """Elementwise scaling of an ``M x N`` tensor whose row count is dynamic (``T.dynamic``)."""
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), dtype)
            T.copy(A[bx * bM, 0], x)
            for i, j in T.Parallel(bM, N):
                x[i, j] = x[i, j] * T.cast(2, dtype)
            T.copy(x, B[bx * bM, 0])
    return main


def reduce_rows(M, N, bM, bN, kind="sum", threads=128, dtype="float32"):
    """Per-row sum or max of a tile (``dim=1``)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            A_frag = T.alloc_fragment((bM, bN), dtype)
            acc = T.alloc_fragment((bM,), dtype)
            T.copy(A[bx * bM, 0], A_frag)
            if kind == "sum":
                T.reduce_sum(A_frag, acc, dim=1)
            else:
                T.reduce_max(A_frag, acc, dim=1)
            T.copy(acc, Out[bx * bM])
    return main


def reduce_cols(M, N, bM, bN, kind="max", threads=128, dtype="float32"):
    """Per-column max or sum of a tile (``dim=0``)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, bN), threads=threads) as bx:
            A_frag = T.alloc_fragment((bM, bN), dtype)
            acc = T.alloc_fragment((bN,), dtype)
            T.copy(A[0, bx * bN], A_frag)
            if kind == "sum":
                T.reduce_sum(A_frag, acc, dim=0)
            else:
                T.reduce_max(A_frag, acc, dim=0)
            T.copy(acc, Out[bx * bN])
    return main


def softmax(M, N, bM, threads=128, dtype="float32"):
    """Row softmax over a ``bM x N`` tile: reduce max, exp, reduce sum, divide."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), dtype)
            row_max = T.alloc_fragment((bM,), dtype)
            row_sum = T.alloc_fragment((bM,), dtype)
            T.copy(A[bx * bM, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, B[bx * bM, 0])
    return main


def gemm_bias_relu(M, N, K, bM, bN, bK, threads=128, dtype="float16", accum_dtype="float32"):
    """GEMM with a bias + ReLU epilogue on the accumulator."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), Bias: T.Tensor((N,), accum_dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), dtype)
            B_shared = T.alloc_shared((bK, bN), dtype)
            C_local = T.alloc_fragment((bM, bN), accum_dtype)
            bias_frag = T.alloc_fragment((bN,), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=3):
                T.copy(A[by * bM, ko * bK], A_shared)
                T.copy(B[ko * bK, bx * bN], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(Bias[bx * bN], bias_frag)
            for i, j in T.Parallel(bM, bN):
                C_local[i, j] = T.max(C_local[i, j] + bias_frag[j], T.cast(0, accum_dtype))
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def gemm_annotated(M, N, K, bM, bN, bK, threads=128, dtype="float16", accum_dtype="float32"):
    """The docs GEMM with its shared tiles annotated (``T.annotate_layout``) with the swizzle TileLang
    would pick anyway."""
    from tilelang.layout import make_swizzled_layout

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), dtype)
            B_shared = T.alloc_shared((bK, bN), dtype)
            C_local = T.alloc_fragment((bM, bN), accum_dtype)
            T.annotate_layout({A_shared: make_swizzled_layout(A_shared), B_shared: make_swizzled_layout(B_shared)})
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_shared)
                T.copy(B[ko * bK, bx * bN], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def atomic_accumulate(M, N, bM, bN, threads=128, dtype="float32"):
    """Scale a tile in registers and add it into ``Out`` with a tile ``T.atomic_add``."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((bM, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_frag = T.alloc_fragment((bM, bN), dtype)
            T.copy(A[by * bM, bx * bN], A_frag)
            for i, j in T.Parallel(bM, bN):
                A_frag[i, j] = A_frag[i, j] * T.cast(0.5, dtype)
            T.atomic_add(Out[0, bx * bN], A_frag)
    return main


def cumsum_shared(n=128, threads=128, dtype="float32"):
    """``T.cumsum`` over a shared buffer: TileLang's scan pins it to the linear layout."""
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((n,), dtype)
            T.copy(A, s)
            T.cumsum(s, dim=0)
            T.copy(s, B)
    return main


def cumsum_view(rows=4, hidden=128, threads=128, dtype="float32"):
    """``T.cumsum`` over a ``T.view`` of a shared row (another rank): the view takes the linear layout."""
    @T.prim_func
    def main(x: T.Tensor((rows, hidden), dtype), y: T.Tensor((rows, hidden), dtype)):
        with T.Kernel(rows, threads=threads) as pid:
            s = T.alloc_shared((hidden,), dtype)
            T.copy(x[pid, :], s)
            T.cumsum(T.view(s, (1, hidden)), dim=1)
            T.copy(s, y[pid, :])
    return main


def atomic_max_tile(n=64, threads=128, dtype="float32"):
    """A tile ``T.atomic_max`` from a fragment: TileLang's AtomicMax proposes no layout, so the fragment
    takes its copy's."""
    @T.prim_func
    def main(A: T.Tensor((n, n), dtype), Out: T.Tensor((n, n), dtype)):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((n, n), dtype)
            T.copy(A, x)
            T.atomic_max(Out[0, 0], x)
    return main


def attention(seq=256, dim=64, bM=64, bN=64, threads=128, policy=None, dtype="float16", accum_dtype="float32"):
    """One attention head, flash style without the running rescale: S = Q K^T, row max, exp, row sum,
    P = S cast to fp16 in registers, O += P V (a GEMM whose A operand is a fragment), O /= row sum.
    With the Square warp policy S and P cannot share a layout (both solvers refuse); FullRow works."""
    policy = GemmWarpPolicy.FullRow if policy is None else policy

    @T.prim_func
    def main(Q: T.Tensor((seq, dim), dtype), K: T.Tensor((seq, dim), dtype), V: T.Tensor((seq, dim), dtype),
             O: T.Tensor((seq, dim), dtype)):
        with T.Kernel(T.ceildiv(seq, bM), threads=threads) as bx:
            Q_s = T.alloc_shared((bM, dim), dtype)
            K_s = T.alloc_shared((bN, dim), dtype)
            V_s = T.alloc_shared((bN, dim), dtype)
            S = T.alloc_fragment((bM, bN), accum_dtype)
            P = T.alloc_fragment((bM, bN), dtype)
            acc = T.alloc_fragment((bM, dim), accum_dtype)
            m = T.alloc_fragment((bM,), accum_dtype)
            lsum = T.alloc_fragment((bM,), accum_dtype)
            T.copy(Q[bx * bM, 0], Q_s)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(seq, bN), num_stages=1):
                T.copy(K[k * bN, 0], K_s)
                T.copy(V[k * bN, 0], V_s)
                T.clear(S)
                T.gemm(Q_s, K_s, S, transpose_B=True, policy=policy)
                T.reduce_max(S, m, dim=1)
                for i, j in T.Parallel(bM, bN):
                    S[i, j] = T.exp(S[i, j] - m[i])
                T.reduce_sum(S, lsum, dim=1)
                T.copy(S, P)
                T.gemm(P, V_s, acc, policy=policy)
            for i, j in T.Parallel(bM, dim):
                acc[i, j] = acc[i, j] / lsum[i]
            T.copy(acc, O[bx * bM, 0])
    return main


def flash_attention(batch=1, heads=2, seq=256, dim=64, bM=64, bN=64, threads=128, num_stages=1,
                    dtype="float16", accum_dtype="float32"):
    """Flash attention forward (the online softmax: running row max, rescale of the output and of
    the row sum every K/V block), laid out as in TileLang's own MHA example, at small sizes."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e): exp2 instead of exp
    shape = (batch, heads, seq, dim)
    policy = GemmWarpPolicy.FullRow

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             O: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq, bM), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((bM, dim), dtype)
            K_s = T.alloc_shared((bN, dim), dtype)
            V_s = T.alloc_shared((bN, dim), dtype)
            acc_s = T.alloc_fragment((bM, bN), accum_dtype)
            acc_s_cast = T.alloc_fragment((bM, bN), dtype)
            acc_o = T.alloc_fragment((bM, dim), accum_dtype)
            m = T.alloc_fragment((bM,), accum_dtype)
            m_prev = T.alloc_fragment((bM,), accum_dtype)
            rescale = T.alloc_fragment((bM,), accum_dtype)
            row_sum = T.alloc_fragment((bM,), accum_dtype)
            logsum = T.alloc_fragment((bM,), accum_dtype)
            T.copy(Q[bz, by, bx * bM:(bx + 1) * bM, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(m, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seq, bN), num_stages=num_stages):
                T.copy(K[bz, by, k * bN:(k + 1) * bN, :], K_s)
                T.clear(acc_s)
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=policy)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(bM):
                    rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(bM, dim):
                    acc_o[i, j] *= rescale[i]
                for i, j in T.Parallel(bM, bN):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.copy(acc_s, acc_s_cast)
                T.copy(V[bz, by, k * bN:(k + 1) * bN, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o, policy=policy)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(bM):
                    logsum[i] = logsum[i] * rescale[i] + row_sum[i]
            for i, j in T.Parallel(bM, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O[bz, by, bx * bM:(bx + 1) * bM, :])
    return main


def past_the_tensor(heads=32, dim=128, group=4, bM=64, threads=128, dtype="float16"):
    """A GQA-decode style copy of ``bM`` query rows starting at a head group: the regions run past the
    ``heads``-row tensor, which TileLang guards (global positions never enter layout inference)."""

    @T.prim_func
    def main(Q: T.Tensor((1, heads, dim), dtype), O: T.Tensor((1, heads, dim), dtype)):
        with T.Kernel(heads // group, threads=threads) as bx:
            Q_shared = T.alloc_shared((bM, dim), dtype)
            acc = T.alloc_fragment((bM, dim), "float32")
            T.copy(Q[0, bx * group:bx * group + bM, :], Q_shared)
            T.copy(Q_shared, acc)
            for i, j in T.Parallel(bM, dim):
                acc[i, j] = acc[i, j] * 2
            T.copy(acc, O[0, bx * group:bx * group + bM, :])
    return main


def tile_100x7(M=1000, N=7, threads=128, dtype="float32"):
    """A 100 x 7 fragment tile on 128 threads: 700 elements do not split evenly over the threads."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, 100), threads=threads) as bx:
            x = T.alloc_fragment((100, N), dtype)
            y = T.alloc_fragment((100, N), dtype)
            T.copy(A[bx * 100, 0], x)
            for i, j in T.Parallel(100, N):
                y[i, j] = x[i, j] * T.cast(3, dtype)
            T.copy(y, B[bx * 100, 0])
    return main


def reduce_4x100(M=400, N=100, threads=128, dtype="float32"):
    """A row sum over a 4 x 100 tile on 128 threads."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, 4), threads=threads) as bx:
            x = T.alloc_fragment((4, N), dtype)
            acc = T.alloc_fragment((4,), dtype)
            T.copy(A[bx * 4, 0], x)
            T.reduce_sum(x, acc, dim=1)
            T.copy(acc, Out[bx * 4])
    return main


def transpose(M=256, N=256, b=64, threads=128, dtype="float16"):
    """A ``b x b`` tile transposed in shared memory with ``T.transpose``, then scaled in registers."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, b), T.ceildiv(M, b), threads=threads) as (bx, by):
            x = T.alloc_shared((b, b), dtype)
            y = T.alloc_shared((b, b), dtype)
            f = T.alloc_fragment((b, b), dtype)
            T.copy(A[by * b, bx * b], x)
            T.transpose(x, y)
            T.copy(y, f)
            for i, j in T.Parallel(b, b):
                f[i, j] = f[i, j] * T.cast(2, dtype)
            T.copy(f, B[bx * b, by * b])
    return main


def conv_im2col(N=2, C=64, H=16, W=16, F=64, KS=3, S=1, D=1, P=1, bM=64, bN=64, bK=32, threads=128,
                dtype="float16", accum_dtype="float32", stages=2):
    """An NHWC 2-D convolution as an implicit GEMM over ``T.im2col`` tiles (after TileLang's
    examples/convolution/example_convolution.py, small parameters)."""
    OH = (H + 2 * P - D * (KS - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (KS - 1) - 1) // S + 1
    KK = KS * KS * C

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), dtype), kernel: T.Tensor((KK, F), dtype),
             out: T.Tensor((N * OH * OW, F), dtype)):
        with T.Kernel(T.ceildiv(F, bN), T.ceildiv(N * OH * OW, bM), threads=threads) as (bx, by):
            data_shared = T.alloc_shared((bM, bK), dtype)
            kernel_shared = T.alloc_shared((bK, bN), dtype)
            out_local = T.alloc_fragment((bM, bN), accum_dtype)
            T.clear(out_local)
            for k in T.Pipelined(T.ceildiv(KK, bK), num_stages=stages):
                T.im2col(data, data_shared, by, k, KS, S, D, P)
                T.copy(kernel[k * bK, bx * bN], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out[by * bM, bx * bN])
    return main


def unit_dim_copies(B=4, M=64, N=128, threads=128, dtype="float16"):
    """Copies between shapes that differ by unit dims: a 3-D global slice into a 2-D shared tile, a
    ``(1, M, N)`` shared / fragment tile to and from 2-D ones (TileLang drops unit dims)."""
    @T.prim_func
    def main(A: T.Tensor((B, M, N), dtype), C: T.Tensor((B, M, N), dtype)):
        with T.Kernel(B, threads=threads) as bz:
            s = T.alloc_shared((M, N), dtype)
            s3 = T.alloc_shared((1, M, N), dtype)
            f = T.alloc_fragment((M, N), dtype)
            g = T.alloc_fragment((1, M, N), dtype)
            T.copy(A[bz, :, :], s)
            T.copy(s, s3[0, :, :])
            T.copy(s3[0, :, :], f)
            for i, j in T.Parallel(M, N):
                f[i, j] = f[i, j] * T.cast(2, dtype)
            T.copy(f, g[0, :, :])
            T.copy(g[0, :, :], C[bz, :, :])
    return main


def reshaped(M=64, N=128, threads=128):
    """``T.reshape`` of a fragment (a 3-D loop over a 2-D tile) and ``T.view`` of a shared tile,
    flat and at another element width."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"), C: T.Tensor((M * N,), "float16"),
             D: T.Tensor((M, N // 2), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((M, N), "float16")
            s = T.alloc_shared((M, N), "float16")
            flat = T.alloc_fragment((M * N,), "float16")
            wide = T.alloc_fragment((M, N // 2), "float32")
            T.copy(A, f)
            g = T.reshape(f, (M, 2, N // 2))
            for i, j, k in T.Parallel(M, 2, N // 2):
                g[i, j, k] = g[i, j, k] * T.cast(2, "float16")
            T.copy(f, B)
            T.copy(A, s)
            T.copy(T.view(s, (M * N,)), flat)
            T.copy(flat, C)
            T.copy(T.view(s, (M, N // 2), dtype="float32"), wide)
            T.copy(wide, D)
    return main


def serial_slices(B=4, M=64, N=64, threads=128, dtype="float16"):
    """A shared tile of ``B`` slices, each selected by a serial loop variable: in a copy's start
    (``T.copy(s[b, :, :], f)``) and in a parallel loop's index (``s[b, i, j]``)."""
    @T.prim_func
    def main(A: T.Tensor((B, M, N), dtype), C: T.Tensor((B, M, N), dtype), D: T.Tensor((B, M, N), dtype)):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((B, M, N), dtype)
            f = T.alloc_fragment((M, N), dtype)
            g = T.alloc_fragment((M, N), dtype)
            T.copy(A, s)
            for b in T.serial(B):
                T.copy(s[b, :, :], f)
                T.copy(f, C[b, :, :])
                for i, j in T.Parallel(M, N):
                    g[i, j] = s[b, i, j] * T.cast(2, dtype)
                T.copy(g, D[b, :, :])
    return main


def copy_extents_differ(M=64, threads=128, dtype="float32"):
    """Copies whose two sides have different extents: TileLang loops over the fragment side's
    (``T.copy(A[:, 0:2], f[:, 0:3])`` reads three columns of ``A``)."""
    @T.prim_func
    def main(A: T.Tensor((M, 64), dtype), B: T.Tensor((M, 64), dtype)):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((M, 4), dtype)
            T.fill(f, 0)
            T.copy(A[:, 0:2], f[:, 0:3])
            for i, j in T.Parallel(M, 4):
                f[i, j] = f[i, j] + T.cast(1, dtype)
            T.copy(f[:, 0:4], B[:, 0:3])
    return main


def through_registers(dtype, M=64, N=64, threads=128):
    """``A`` copied into a fragment, copied in a parallel loop into another, and out: the layouts
    (their vector widths) depend on the element width only."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((M, N), dtype)
            g = T.alloc_fragment((M, N), dtype)
            T.copy(A, f)
            for i, j in T.Parallel(M, N):
                g[i, j] = f[i, j]
            T.copy(g, B)
    return main


TILELANG_DTYPES = ("bool", "int1", "uint1", "int2", "uint2", "int4", "uint4", "int8", "uint8", "int16", "uint16",
                   "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64", "float8_e4m3",
                   "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                   "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "float4_e2m1fnx2", "float8_e3m4",
                   "float8_e4m3b11fnuz", "custom[float4_e2m1_unpacked]8")
"""Element types a TileLang 0.1.15 ``T.Tensor`` / ``T.alloc_fragment`` accepts (``float4_e2m1fnx2`` is a
vector of two fp4 values per element; ``T.float4_e2m1_unpacked``, one fp4 value per byte, is a TVM custom
type, spelled as TVM prints it)."""


def shared_loops(M=256, N=128, bM=64, bN=128, threads=128, dtype="float16"):
    """Parallel loops touching shared and global memory only: TileLang fuses each nest into one loop
    before laying it out (and guards the padded points of its partition)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            S = T.alloc_shared((bM, bN), dtype)
            for i, j in T.Parallel(bM, bN):
                S[i, j] = A[bx * bM + i, j]
            for i, j in T.Parallel(bM, bN):
                B[bx * bM + i, j] = S[i, j] + S[i, j]
    return main


def split_combine(num_split=4, dim=128, heads=32, threads=128):
    """The combine step of TileLang's split-KV flash decoding (examples/flash_decoding, GQA decode):
    a ``(num_split, 128)`` fragment of partial log-sum-exps read a row at a time, ``lse_local[k, j]``,
    with ``k`` a serial loop around the parallel loop."""
    @T.prim_func
    def main(glse: T.Tensor((1, heads, num_split), "float16"), part: T.Tensor((1, heads, num_split, dim), "float16"),
             Output: T.Tensor((1, heads, dim), "float16")):
        with T.Kernel(heads, 1, threads=threads) as (by, bz):
            po_local = T.alloc_fragment([dim], "float16")
            o_accum_local = T.alloc_fragment([dim], "float32")
            lse_local = T.alloc_fragment([num_split, 128], "float16")
            lse_logsum_local = T.alloc_fragment([128], "float32")
            lse_max_local = T.alloc_fragment([128], "float32")
            scale_local = T.alloc_fragment([128], "float32")
            T.clear(lse_logsum_local)
            T.clear(o_accum_local)
            for k, j in T.Parallel(num_split, 128):
                lse_local[k, j] = glse[bz, by, k]
            T.reduce_max(lse_local, lse_max_local, dim=0, clear=True)
            for k in T.serial(num_split):
                for j in T.Parallel(128):
                    lse_logsum_local[j] += T.exp2(lse_local[k, j] - lse_max_local[j])
            for j in T.Parallel(128):
                lse_logsum_local[j] = T.log2(lse_logsum_local[j]) + lse_max_local[j]
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    po_local[i] = part[bz, by, k, i]
                for j in T.Parallel(128):
                    scale_local[j] = T.exp2(lse_local[k, j] - lse_logsum_local[j])
                for i in T.Parallel(dim):
                    o_accum_local[i] += po_local[i] * scale_local[i]
            for i in T.Parallel(dim):
                Output[bz, by, i] = o_accum_local[i]
    return main


def row_copies(rows=4, cols=128, threads=128):
    """A fragment copied a row at a time inside a pipelined loop, ``T.copy(x[k, :], y)`` (as TileLang's
    MHA inference combine does), after a column max over it."""
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float16"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((rows, cols), "float16")
            y = T.alloc_fragment((cols,), "float32")
            mx = T.alloc_fragment((cols,), "float32")
            T.copy(A, x)
            T.reduce_max(x, mx, dim=0, clear=True)
            for k in T.Pipelined(rows):
                T.copy(x[k, :], y)
                for i in T.Parallel(cols):
                    y[i] = y[i] - mx[i]
                T.copy(y, B[k, :])
    return main


def row_reads(rows=8, cols=64, threads=128):
    """A fragment a copy alone would lay out with rows spread over threads, read a row at a time by a
    serial loop: TileLang lays it out from that loop instead (one thread map for every row)."""
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((rows, cols), "float32")
            y = T.alloc_fragment((cols,), "float32")
            T.copy(A, x)
            for k in T.serial(rows):
                for j in T.Parallel(cols):
                    y[j] = x[k, j] * 2
                T.copy(y, B[k, :])
    return main


def gemm_strided(M=256, N=256, K=256, bM=64, bN=64, bK=32, threads=128):
    """TileLang's testing/python/kernel/test_tilelang_kernel_gemm_with_stride.py kernel: a GEMM on the
    right half of a ``(bM, 2 bK)`` shared tile, ``T.gemm(A_shared[:, bK:], B_shared[0:bK, 0:bN], C)``."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK * 2), "float16", scope="shared")
            B_shared = T.alloc_shared((bK, bN * 2), "float16", scope="shared")
            C_local = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_local)
            T.clear(B_shared)
            T.clear(A_shared)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=0):
                for i, k in T.Parallel(bM, bK):
                    A_shared[i, k + bK] = A[by * bM + i, ko * bK + k]
                for i, k in T.Parallel(bK, bN):
                    B_shared[i, k] = B[ko * bK + i, bx * bN + k]
                T.gemm(A_shared[:, bK:], B_shared[0:bK, 0:bN], C_local)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def gemm_stage_slices(M=256, N=256, K=256, bM=64, bN=64, bK=32, stages=2, threads=128):
    """Hand-staged shared tiles: each GEMM reads one stage, ``T.gemm(A_s[ko % 2, :, :], B_s[ko % 2, :, :], C)``."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), "float16")
            B_s = T.alloc_shared((stages, bK, bN), "float16")
            C_local = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_local)
            for ko in T.serial(T.ceildiv(K, bK)):
                T.copy(A[by * bM:(by + 1) * bM, ko * bK:(ko + 1) * bK], A_s[ko % stages, :, :])
                T.copy(B[ko * bK:(ko + 1) * bK, bx * bN:(bx + 1) * bN], B_s[ko % stages, :, :])
                T.gemm(A_s[ko % stages, :, :], B_s[ko % stages, :, :], C_local)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def gemm_k_halves(M=256, N=256, K=256, bM=64, bN=64, bK=64, threads=128):
    """Two GEMMs over the two K halves of the same shared tiles (as the DeepSeek sparse-MLA backward
    example splits ``Q_shared[:, :D]`` / ``Q_shared[:, D:]``), B transposed."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), "float16")
            B_shared = T.alloc_shared((bN, bK), "float16")
            C_local = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_shared)
                T.copy(B[bx * bN, ko * bK], B_shared)
                T.gemm(A_shared[:, :bK // 2], B_shared[:, :bK // 2], C_local, transpose_B=True)
                T.gemm(A_shared[:, bK // 2:], B_shared[:, bK // 2:], C_local, transpose_B=True)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def dynamic_extent(max_len=512, threads=256, dtype="float32"):
    """TileLang's testing/python/language/test_tilelang_language_parallel.py dynamic kernel: a parallel
    loop over ``T.min(valid_len, max_len)`` elements (a runtime extent with a constant bound)."""
    @T.prim_func
    def main(A: T.Tensor((max_len,), dtype), B: T.Tensor((max_len,), dtype), valid_len: T.int32):
        with T.Kernel(1, threads=threads):
            for i in T.Parallel(max_len):
                B[i] = T.cast(0, dtype)
            span = T.min(valid_len, max_len)
            for i in T.Parallel(span):
                B[i] = A[i] - T.cast(1, dtype)
    return main


def dynamic_rows(M=64, N=128, threads=128, dtype="float16"):
    """A 2-D nest whose outer extent is a runtime value, ``T.Parallel(T.min(rows, 64), 128)``, over a
    shared tile, and a clamped 1-D one, ``T.Parallel(T.max(T.min(n - bx * 256, 256), 0))``."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((1024,), dtype),
             D: T.Tensor((1024,), dtype), rows: T.int32, n: T.int32):
        with T.Kernel(4, threads=threads) as bx:
            s = T.alloc_shared((M, N), dtype)
            T.copy(A, s)
            for i, j in T.Parallel(T.min(rows, M), N):
                B[i, j] = s[i, j]
            for i in T.Parallel(T.max(T.min(n - bx * 256, 256), 0)):
                D[bx * 256 + i] = C[bx * 256 + i] + T.cast(1, dtype)
    return main


def dequant_int4(N=256, K=256, bN=64, bK=64, threads=128, pack_rows=1):
    """Int4 weights unpacked in registers as TileLang's ``examples/dequantize_gemm`` write it:
    ``B_deq[i, j] = f(B_local[i // pack_rows, j // 2])``.  The loop reads no digit ``j % 2`` (nor
    ``i % pack_rows``) of ``B_local``'s index, which TileLang's ``CompleteBufferFragment`` makes
    replication of ``B_local`` (replicated where those digits pick a thread)."""

    @T.prim_func
    def main(B: T.Tensor((N // pack_rows, K // 2), "uint8"), C: T.Tensor((N, K), "float16")):
        with T.Kernel(T.ceildiv(N, bN), threads=threads) as bx:
            B_shared = T.alloc_shared((bN // pack_rows, bK // 2), "uint8")
            B_local = T.alloc_fragment((bN // pack_rows, bK // 2), "uint8")
            B_deq = T.alloc_fragment((bN, bK), "float16")
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=1):
                T.copy(B[bx * bN // pack_rows, k * bK // 2], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(bN, bK):
                    nibble = (B_local[i // pack_rows, j // 2] >> (T.cast(j % 2, "uint8") * T.uint8(4))) & T.uint8(15)
                    B_deq[i, j] = T.cast(nibble, "float16")
                T.copy(B_deq, C[bx * bN, k * bK])
    return main


def row_sum_reducer(M=128, N=64, threads=128, legacy=False, dtype="float32", op="sum", batch=1):
    """A row sum through a reducer (``T.alloc_reducer``): the first-class form (``T.reducer_init`` /
    ``T.reducer_update`` / ``T.finalize_reducer(acc, dst)``) or, with ``legacy``, the deprecated
    ``replication="all"`` form TileLang rewrites into it before layout inference (``op="max"``: a row
    max, ``acc[i] = T.max(acc[i], ...)``; ``batch``: the finalize collective's batch).  TileLang lays the
    reducer out as a ``PartialFragment`` (replicas awaiting the finalize collective)."""

    if legacy:
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
            with T.Kernel(1, threads=threads) as _:
                acc = T.alloc_reducer(M, dtype, op=op, replication="all")
                A_frag = T.alloc_fragment((M, N), dtype)
                T.clear(acc)
                T.copy(A, A_frag)
                for i, j in T.Parallel(M, N):
                    if op == "max":
                        acc[i] = T.max(acc[i], A_frag[i, j])
                    else:
                        acc[i] += A_frag[i, j]
                T.finalize_reducer(acc, batch=batch)
                T.copy(acc, B)
        return main

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=threads) as _:
            acc = T.alloc_reducer(M, dtype, op="sum")
            A_frag = T.alloc_fragment((M, N), dtype)
            dst = T.alloc_fragment((M,), dtype)
            T.reducer_init(acc)
            T.copy(A, A_frag)
            for i, j in T.Parallel(M, N):
                T.reducer_update(acc[i], A_frag[i, j])
            T.finalize_reducer(acc, dst)
            T.copy(dst, B)
    return main


def pinned_loop(M=128, N=32, threads=128, dtype="float32"):
    """``T.Parallel(..., loop_layout=)``: TileLang takes the given loop layout (row i on thread i) before
    inferring anything, and lays the fragment the loop writes out from it."""
    layout = T.Fragment((M, N), forward_fn=lambda i, j: (i, j))

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((M, N), dtype)
            for i, j in T.Parallel(M, N, loop_layout=layout):
                x[i, j] = A[i, j] * T.cast(2.0, dtype)
            T.copy(x, B)
    return main


def pinned_copy_loop(M=128, N=32, threads=128, dtype="float32"):
    """``T.copy(..., loop_layout=)`` with a replicated loop layout (two replicas of 64 threads)."""
    layout = T.Fragment((M, N), forward_fn=lambda i, j, rep: ((i * N + j) // 4 % 64 + rep * 64,
                                                               (i * N + j) % 4 + (i * N + j) // 256 * 4),
                        replicate=2)

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            T.copy(A, B, loop_layout=layout)
    return main


def assumed_strides(rows=64, tokens=138, feat=576, threads=128, dtype="uint8"):
    """Global tensors with runtime strides known only as multiples of 8 (``T.assume``), indexed by a
    block variable and a computed row: TileLang vectorises no wider than the 8 elements it can prove
    aligned (16 uint8 would fit in 128 bits)."""
    s0, s1 = T.dynamic("s0"), T.dynamic("s1")
    t0, t1 = T.dynamic("t0"), T.dynamic("t1")

    @T.prim_func
    def main(A: T.StridedTensor((4, tokens, feat), (s0, s1, 1), dtype),
             B: T.StridedTensor((4, tokens, feat), (t0, t1, 1), dtype), shift: T.int32):
        T.assume(A.strides[0] % 8 == 0)
        T.assume(A.strides[1] % 8 == 0)
        T.assume(B.strides[0] % 8 == 0)
        T.assume(B.strides[1] % 8 == 0)
        with T.Kernel(4, T.ceildiv(tokens, rows), threads=threads) as (bx, by):
            for i, j in T.Parallel(rows, feat):
                row = by * rows + i
                if row < tokens:
                    B[bx, row, j] = A[bx, (row + shift) % tokens, j]
    return main


def element_atomics(M=128, N=128, b=32, threads=32, dtype="float32"):
    """``T.atomic_add(B[i, j], x)`` per element in a parallel loop (``atomic_add_elem_op``): no wider
    atomic than 2 x 16-bit (or 4 x float32 on sm_90+ global memory), so TileLang plans the loop at that
    width."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, b), T.ceildiv(M, b), threads=threads) as (bx, by):
            s = T.alloc_shared((b, b), dtype)
            T.copy(A[by * b, bx * b], s)
            for i, j in T.Parallel(b, b):
                T.atomic_add(B[by * b + i, bx * b + j], s[i, j])
    return main


def tma_atomic_add(shape=(16, 16), dtype="float32"):
    """``T.atomic_add(out, shared, use_tma=True)``: TileLang's TMA reduce-add lays out its shared source
    (a bank swizzle) and runs no loop."""
    @T.prim_func
    def main(out: T.Tensor(shape, dtype)):
        with T.Kernel(1):
            s = T.alloc_shared(shape, dtype)
            T.fill(s, 1)
            T.atomic_add(out, s, use_tma=True)
    return main


def masked(M=128, N=128, threads=256, upper=False, dtype="float16"):
    """Ops under ``if tx < 128`` (``upper``: ``if tx >= 128``) of a 256-thread block: TileLang lays them out
    on the 128 threads the condition leaves (its thread bounds), bound to that range."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), dtype)
            x = T.alloc_fragment((M, N), "float32")
            tx = T.get_thread_binding(0)
            if (tx >= 128) if upper else (tx < 128):
                for i, j in T.Parallel(M, N):
                    s[i, j] = A[i, j]
                T.copy(s, x)
                for i, j in T.Parallel(M, N):
                    x[i, j] = x[i, j] * 2
                T.copy(x, B)
    return main


def view_past_the_tensor(C=64, F=64, KS=3, bK=32, bN=128, threads=128, dtype="float16"):
    """A ``T.Tensor(shape, dtype, data)`` view of a parameter (the 4-D kernel tensor of a convolution seen
    as 2-D) read by a region running past it (``bN`` columns of an ``F``-column view): TileLang guards it."""
    @T.prim_func
    def main(W: T.Tensor((KS, KS, C, F), dtype), Out: T.Tensor((KS * KS * C, bN), dtype)):
        with T.Kernel(T.ceildiv(F, bN), threads=threads) as bx:
            flat = T.Tensor((KS * KS * C, F), dtype, W.data)
            s = T.alloc_shared((bK, bN), dtype)
            x = T.alloc_fragment((bK, bN), "float32")
            for k in T.Pipelined(T.ceildiv(KS * KS * C, bK), num_stages=2):
                T.copy(flat[k * bK, bx * bN], s)
                T.copy(s, x)
                T.copy(x, Out[k * bK, 0])
    return main


def no_launch(N=128, dtype="float32"):
    """A kernel written without ``T.Kernel``: TileLang's inference lays it out on its thread bounds
    ``[0, 1)``, one thread holding every element."""
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        x = T.alloc_fragment((N,), dtype)
        T.copy(A, x)
        for i in T.Parallel(N):
            B[i] = x[i] + 1.0
    return main


def element_atomics_scalar(M=64, N=64, b=16, threads=32, dtype="float32"):
    """Element ``T.atomic_max`` / ``atomic_min`` / ``atomic_load`` / ``atomic_store`` and ``T.atomic_add(...,
    return_prev=True)`` in parallel loops: no vector form, so TileLang plans the loops at width 1."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype),
             D: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, b), T.ceildiv(M, b), threads=threads) as (bx, by):
            s = T.alloc_shared((b, b), dtype)
            T.copy(A[by * b, bx * b], s)
            for i, j in T.Parallel(b, b):
                T.atomic_max(B[by * b + i, bx * b + j], s[i, j])
            for i, j in T.Parallel(b, b):
                T.atomic_min(C[by * b + i, bx * b + j], s[i, j])
            for i, j in T.Parallel(b, b):
                v = T.atomic_load(A[by * b + i, bx * b + j])
                T.atomic_store(D[by * b + i, bx * b + j], v)
            for i, j in T.Parallel(b, b):
                D[by * b + i, bx * b + j] = T.atomic_add(B[by * b + i, bx * b + j], s[i, j], return_prev=True)
    return main


def region_atomics(M=128, N=128, b=32, threads=128, dtype="float32"):
    """Tile ``T.atomic_max`` / ``atomic_min`` from shared memory and scalars atomically added / maxed onto
    whole regions (``T.atomic_add(A[0:32, 0:32], 1.0)``), next to a fragment the tile ``T.atomic_max``
    reads (laid out by its copy: TileLang's AtomicMax proposes nothing)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, b), T.ceildiv(M, b), threads=threads) as (bx, by):
            s = T.alloc_shared((b, b), dtype)
            x = T.alloc_fragment((b, b), dtype)
            T.copy(A[by * b, bx * b], s)
            T.copy(A[by * b, bx * b], x)
            T.atomic_max(B[by * b, bx * b], s)
            T.atomic_min(B[by * b, bx * b], s)
            T.atomic_max(B[by * b, bx * b], x)
            T.atomic_add(A[by * b:(by + 1) * b, bx * b:(bx + 1) * b], 1.0)
            T.atomic_max(A[by * b:(by + 1) * b, bx * b:(bx + 1) * b], 0.5)
    return main


def wgmma_gemm(M=64, N=64, K=64, k_tiles=1, threads=128):
    """``T.wgmma_gemm``: TileLang's GEMM forced onto WGMMA (sm_90), here over K slices a serial loop
    selects (``A_s[:, k * bK:(k + 1) * bK]``)."""
    bK = K // k_tiles

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), D: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((N, K), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            for k in T.serial(k_tiles):
                T.wgmma_gemm(a[:, k * bK:(k + 1) * bK], b[:, k * bK:(k + 1) * bK], c, transpose_B=True)
            T.wait_wgmma(0)
            T.copy(c, D)
    return main


def sparse_gemm(forced_wgmma=False):
    """``T.gemm_sp`` (a 2:4 structured-sparse GEMM, ``mma.sp`` on sm_80): the compressed A ``(64, 16)`` holds
    half of a ``64 x 32`` operand, E its uint8 metadata (one element per 8 columns).  ``forced_wgmma``: the
    same through ``T.wgmma_gemm_sp`` (sm_90 only), which the adapter refuses by name."""
    from tilelang.language.experimental.gemm_sp_op import gemm_sp, wgmma_gemm_sp

    @T.prim_func
    def main(A: T.Tensor((64, 16), "float16"), E: T.Tensor((64, 4), "uint8"), B: T.Tensor((32, 64), "float16"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 16), "float16")
            e = T.alloc_shared((64, 4), "uint8")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(E, e)
            T.copy(B, b)
            if forced_wgmma:
                wgmma_gemm_sp(a, e, b, c, clear_accum=True)
                T.wait_wgmma(0)
            else:
                gemm_sp(a, e, b, c, clear_accum=True)
            T.copy(c, C)
    return main


def outer_strided(M=64, K=64, N=64, step=8, threads=128, dtype="float16"):
    """TileLang's examples/deepseek_mhc/example_mhc_pre.py access: a serial loop ``jj`` around a parallel
    loop whose fragment index is ``jj * step + j`` (x_frag, laid out by the GEMM it feeds as operand A)."""
    @T.prim_func
    def main(X: T.Tensor((M, K), dtype), W: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32"),
             S: T.Tensor((M, step), "float32")):
        with T.Kernel(1, threads=threads):
            x_shared = T.alloc_shared((M, K), dtype)
            w_shared = T.alloc_shared((N, K), dtype)
            x_frag = T.alloc_fragment((M, K), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            part = T.alloc_fragment((M, step), "float32")
            T.copy(X, x_shared)
            T.copy(W, w_shared)
            T.copy(x_shared, x_frag)
            T.fill(part, 0)
            for jj in T.serial(K // step):
                for i, j in T.Parallel(M, step):
                    part[i, j] += T.cast(x_frag[i, jj * step + j], "float32") * T.cast(x_frag[i, jj * step + j],
                                                                                      "float32")
            T.clear(acc)
            T.gemm(x_frag, w_shared, acc, transpose_B=True)
            T.copy(acc, C)
            T.copy(part, S)
    return main


def pointer_rows(rows=13, K=64, bM=64, bK=32, threads=128):
    """A tensor made in the body over a pointer (``T.make_tensor(ptrs[g], (rows, K))``, a grouped GEMM's
    per-group matrix) read ``bM`` rows at a time from a runtime start, ``bM`` wider than the tensor's own
    ``rows``: TileLang guards each row, and layout inference never sees global positions."""
    @T.prim_func
    def main(ptrs: T.Tensor((2,), T.ptr), starts: T.Tensor((2,), "int32"), Out: T.Tensor((2, bM, K), "float16")):
        with T.Kernel(2, threads=threads) as g:
            A = T.make_tensor(ptrs[g], (rows, K), "float16")
            s = T.alloc_shared((bM, bK), "float16")
            x = T.alloc_fragment((bM, bK), "float32")
            for k in T.serial(K // bK):
                T.copy(A[starts[g], k * bK], s)
                T.copy(s, x)
                T.copy(x, Out[g, 0, k * bK])
    return main


def warp_group_gemms(M=64, N=64, K=64, bK=32):
    """Two GEMMs on two warp groups of a 256-thread block (``T.ws(0)`` / ``T.ws(1)``), each into its own
    accumulator half: TileLang lays each accumulator out over the 128 threads of its group only."""
    half = N // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=256):
            a = T.alloc_shared((M, bK), "float16")
            b0 = T.alloc_shared((bK, half), "float16")
            b1 = T.alloc_shared((bK, half), "float16")
            c0 = T.alloc_fragment((M, half), "float32")
            c1 = T.alloc_fragment((M, half), "float32")
            with T.ws(0):
                T.clear(c0)
            with T.ws(1):
                T.clear(c1)
            for k in T.Pipelined(K // bK, num_stages=0):
                T.copy(A[0, k * bK], a)
                with T.ws(0):
                    T.copy(B[k * bK, 0], b0)
                    T.gemm(a, b0, c0)
                with T.ws(1):
                    T.copy(B[k * bK, half], b1)
                    T.gemm(a, b1, c1)
            with T.ws(0):
                T.copy(c0, C[0, 0])
            with T.ws(1):
                T.copy(c1, C[0, half])
    return main


def column_slices(M=64, N=64, K=256, kt=64, threads=128):
    """sm_90: ``T.tma_copy`` into column slices ``a[:, j * kt:(j + 1) * kt]`` of a shared buffer in an unrolled
    loop over ``j`` (a start moving in a dim wider than one element), each slice fed to a ``T.wgmma_gemm``
    whose ``clear_accum`` is ``j == 0`` (decided at run time)."""
    tiles = K // kt

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), D: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((N, K), "float16")
            c = T.alloc_fragment((M, N), "float32")
            ready = T.alloc_barrier(arrive_count=[threads] * tiles)
            for j in T.unroll(tiles):
                T.tma_copy(A[0:M, j * kt:(j + 1) * kt], a[:, j * kt:(j + 1) * kt], barrier=ready[j])
                T.tma_copy(B[0:N, j * kt:(j + 1) * kt], b[:, j * kt:(j + 1) * kt], barrier=ready[j])
            for j in T.unroll(tiles):
                T.mbarrier_wait_parity(ready[j], 0)
                T.wgmma_gemm(a[:, j * kt:(j + 1) * kt], b[:, j * kt:(j + 1) * kt], c, transpose_B=True,
                             clear_accum=j == 0)
            T.wait_wgmma(0)
            T.copy(c, D)
    return main


def _policy(name: str):
    return getattr(GemmWarpPolicy, name)


KERNELS: dict[str, Callable] = {
    "gemm_32": lambda: gemm(1024, 1024, 1024, 32, 32, 32),
    "elementwise_64": lambda: elementwise(1024, 1024, 64, 64),
    "gemm_rowmax_bias": lambda: gemm_rowmax_bias(1024, 1024, 1024, 64, 64, 32),
    "gemm_64": lambda: gemm(1024, 1024, 1024, 64, 64, 32),
    "gemm_128": lambda: gemm(1024, 1024, 1024, 128, 128, 32),
    "gemm_128_fullrow": lambda: gemm(1024, 1024, 1024, 128, 128, 32, policy=_policy("FullRow")),
    "gemm_64_transpose_b": lambda: gemm(1024, 1024, 1024, 64, 64, 32, trans_B=True),
    "gemm_64x128_3stage_256t": lambda: gemm(1024, 1024, 1024, 64, 128, 32, threads=256, num_stages=3),
    "gemm_64_int8": lambda: gemm(1024, 1024, 1024, 64, 64, 64, dtype="int8", accum_dtype="int32", trans_B=True),
    # T.tfloat32 is TVM's custom type `custom[tfloat32]`
    "gemm_64_tf32": lambda: gemm(1024, 1024, 1024, 64, 64, 32, dtype=T.tfloat32, trans_B=True),
    "gemm_128x64_bf16_fullcol": lambda: gemm(1024, 1024, 1024, 128, 64, 32, dtype="bfloat16",
                                             policy=_policy("FullCol")),
    "elementwise_add_128": lambda: elementwise_add(1024, 1024, 128, 128),
    "elementwise_dynamic_m": lambda: elementwise_dynamic(),
    "reduce_sum_rows": lambda: reduce_rows(1024, 64, 64, 64, kind="sum"),
    "reduce_max_rows": lambda: reduce_rows(1024, 128, 32, 128, kind="max"),
    "reduce_max_cols": lambda: reduce_cols(64, 1024, 64, 64, kind="max"),
    "reduce_sum_cols": lambda: reduce_cols(32, 1024, 32, 128, kind="sum"),
    "softmax_64x128": lambda: softmax(1024, 128, 64),
    "gemm_bias_relu": lambda: gemm_bias_relu(1024, 1024, 1024, 64, 64, 32),
    "gemm_annotated": lambda: gemm_annotated(1024, 1024, 1024, 64, 64, 32),
    "atomic_accumulate": lambda: atomic_accumulate(1024, 1024, 64, 64),
    "attention_fullrow": lambda: attention(),
    "flash_attention": lambda: flash_attention(),
    "past_the_tensor": lambda: past_the_tensor(),
    # T.Kernel without threads=: TileLang's CUDA backend launches its default of 128 threads
    "gemm_64_default_threads": lambda: gemm(1024, 1024, 1024, 64, 64, 32, threads=None),
    "softmax_default_threads": lambda: softmax(1024, 128, 64, threads=None),
    "transpose_shared": lambda: transpose(),
    "conv_im2col": lambda: conv_im2col(),
    "unit_dim_copies": lambda: unit_dim_copies(),
    "reshaped": lambda: reshaped(),
    "serial_slices": lambda: serial_slices(),
    "copy_extents_differ": lambda: copy_extents_differ(),
    # fragments indexed by a loop variable from outside their parallel loop (flash decoding)
    "split_combine": lambda: split_combine(),
    "row_copies": lambda: row_copies(),
    "row_reads": lambda: row_reads(),
    # GEMMs on sub-regions of shared buffers
    "gemm_strided": lambda: gemm_strided(),
    "gemm_stage_slices": lambda: gemm_stage_slices(),
    "gemm_k_halves": lambda: gemm_k_halves(),
    # parallel loops with runtime extents bounded by a constant
    "dynamic_extent": lambda: dynamic_extent(),
    "dynamic_rows": lambda: dynamic_rows(),
    "dequant_int4": lambda: dequant_int4(),
    "dequant_int4_replicated": lambda: dequant_int4(bN=16, bK=8),
    "dequant_int4_packed_rows": lambda: dequant_int4(bN=16, bK=8, pack_rows=2),
    "cumsum_shared": lambda: cumsum_shared(),
    "cumsum_view": lambda: cumsum_view(),
    "pinned_loop": lambda: pinned_loop(),
    "element_atomics_f32": lambda: element_atomics(),
    "element_atomics_f16": lambda: element_atomics(dtype="float16"),
    # K = 0: an empty A and B (no element is reached); laid out as any GEMM
    "gemm_zero_k": lambda: gemm(512, 1024, 0, 128, 256, 32),
    # ops under a condition on threadIdx.x: laid out on the threads it leaves
    "masked_lower": lambda: masked(),
    "masked_upper": lambda: masked(upper=True),
    "element_atomics_scalar": lambda: element_atomics_scalar(),
    "region_atomics": lambda: region_atomics(),
    "atomic_max_tile": lambda: atomic_max_tile(),
    "view_past_the_tensor": lambda: view_past_the_tensor(),
    "tile_100x7": lambda: tile_100x7(),
    "reduce_4x100": lambda: reduce_4x100(),
    # a pointer-made tensor read past its own rows (grouped GEMM over a pointer table)
    "pointer_rows": lambda: pointer_rows(),
    # two GEMMs on two warp groups (T.ws): each accumulator over its own group's threads
    "warp_group_gemms": lambda: warp_group_gemms(),
}
"""Every kernel by name; each value builds the ``T.prim_func``."""

TILELANG_FAILS = frozenset({"tile_100x7", "reduce_4x100"})
"""Kernels whose layouts TileLang 0.1.15's LayoutInference cannot find."""

BOTH_FAIL: dict[str, Callable] = {
    "attention_square": lambda: attention(policy=_policy("Square")),
}
"""Kernels with no consistent layout: both solvers must refuse them (layoutkit names the conflict)."""

NOT_LOWERED: dict[str, Callable] = {
    "assumed_strides": lambda: assumed_strides(),
    "no_launch": lambda: no_launch(),
}
"""Kernels compared table for table with TileLang but not lowered with layoutkit's annotations: TileLang
0.1.15's lowering proves the annotated loop layout bijective from its expression, and layoutkit spells
``assumed_strides``'s (equal tables) as ``(i * 576 + j) // 1024`` where TileLang's own is
``(i * 72 + j // 8) // 128``, which its iterator-map check cannot follow; ``no_launch`` (no ``T.Kernel``)
has no thread launch, which TileLang's CUDA lowering itself rejects (its memory verification finds the
tensors accessed from the host)."""

FUSED: dict[str, Callable] = {
    "shared_loops": lambda: shared_loops(),
}
"""Kernels whose parallel loops TileLang fuses before laying them out (no fragment in the nest): its
loop layouts are over the fused loop, so they are compared through the lowered kernel, not table by
table with the source loops."""


# ---- Blackwell tensor memory (sm_100): not in KERNELS, which are compared and lowered at sm_80 ---------

def tcgen05_gemm(M=128, N=128, K=128, threads=128, dtype="bfloat16", accum_dtype="float32", split=1,
                 explicit=False):
    """A TCGEN05 GEMM (sm_100): A and B in shared memory, the accumulator in tensor memory
    (``T.alloc_tmem``), read back into a fragment by ``split`` (1 or 2) copies of column slices (``tcgen05.ld``);
    ``explicit``: ``T.tcgen05_gemm`` instead of ``T.gemm``."""
    part = N // split

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), D: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(1, threads=threads):
            A_shared = T.alloc_shared((M, K), dtype)
            B_shared = T.alloc_shared((N, K), dtype)
            C_tmem = T.alloc_tmem((M, N), accum_dtype)
            mbar = T.alloc_barrier(1)
            C_local = T.alloc_fragment((M, N), accum_dtype)
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            if explicit:
                T.tcgen05_gemm(A_shared, B_shared, C_tmem, transpose_B=True, mbar=mbar, clear_accum=True)
            else:
                T.gemm(A_shared, B_shared, C_tmem, transpose_B=True, mbar=mbar, clear_accum=True)
            T.mbarrier_wait_parity(mbar, 0)
            T.copy(C_tmem[:, 0:part], C_local[:, 0:part])
            if split == 2:
                T.copy(C_tmem[:, part:N], C_local[:, part:N])
            T.copy(C_local, D)
    return main


def tcgen05_ts_gemm(M=128, N=64, K=128, threads=128, dtype="bfloat16"):
    """A TCGEN05 TS GEMM: A stored from a fragment into tensor memory (``tcgen05.st``), B in shared memory,
    the accumulator in tensor memory."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            A_local = T.alloc_fragment((M, K), dtype)
            A_tmem = T.alloc_tmem((M, K), dtype)
            B_shared = T.alloc_shared((K, N), dtype)
            C_tmem = T.alloc_tmem((M, N), "float32")
            mbar = T.alloc_barrier(1)
            C_local = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_local)
            T.copy(A_local, A_tmem)
            T.copy(B, B_shared)
            T.gemm(A_tmem, B_shared, C_tmem, mbar=mbar, clear_accum=True)
            T.mbarrier_wait_parity(mbar, 0)
            T.copy(C_tmem, C_local)
            T.copy(C_local, D)
    return main


def sparse_gemm_tiles(M=128, N=128, K=64, bM=128, bN=128, bK=32, trans_A=False, trans_B=False, dtype="float16",
                      accum_dtype="float32", e_dtype="int16", stages=2, threads=128, registers="",
                      annotate_e=False, linear_a=False):
    """A pipelined ``T.gemm_sp`` over ``bM x bN x bK`` tiles (TileLang's tilelibrary sparse GEMM tests'
    shapes): the compressed A tile is ``bK/2`` wide, E ``bK/factor`` (16-bit metadata of 16-bit A covers 16
    columns, 32-bit of 8-bit A 32); ``registers`` names the operands (``"A"``, ``"B"``, ``"AB"``) copied into
    fragments first, their shared tiles annotated with TileLang's swizzle; ``annotate_e`` lays E out with
    CUTLASS's sm_8x metadata layout; ``linear_a`` pins the shared A tile to the linear layout (the GEMM keeps
    a layout it finds)."""
    import tilelang.layout as tl_layout
    from tilelang.language.experimental.gemm_sp_op import gemm_sp

    factor = {8: 4, 16: 4, 32: 2}[T.dtype(dtype).bits] * T.dtype(e_dtype).bits // 4
    a_tile = (bK // 2, bM) if trans_A else (bM, bK // 2)
    e_tile = (bK // factor, bM) if trans_A else (bM, bK // factor)
    b_tile = (bN, bK) if trans_B else (bK, bN)
    use_a, use_b = "A" in registers, "B" in registers
    annotate = use_a or use_b or annotate_e or linear_a

    @T.prim_func
    def main(A: T.Tensor((K // 2, M) if trans_A else (M, K // 2), dtype),
             E: T.Tensor((K // factor, M) if trans_A else (M, K // factor), e_dtype),
             B: T.Tensor((N, K) if trans_B else (K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            a_s = T.alloc_shared(a_tile, dtype)
            e_s = T.alloc_shared(e_tile, e_dtype)
            b_s = T.alloc_shared(b_tile, dtype)
            c = T.alloc_fragment((bM, bN), accum_dtype)
            if use_a:
                a_r = T.alloc_fragment(a_tile, dtype)
            if use_b:
                b_r = T.alloc_fragment(b_tile, dtype)
            if annotate:
                T.annotate_layout({**({a_s: tl_layout.make_swizzled_layout(a_s)} if use_a else {}),
                                   **({a_s: tl_layout.make_linear_layout(a_s)} if linear_a else {}),
                                   **({b_s: tl_layout.make_swizzled_layout(b_s)} if use_b else {}),
                                   **({e_s: tl_layout.make_cutlass_metadata_layout(e_s, mma_dtype=dtype, arch="8.0")}
                                      if annotate_e else {})})
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_A:
                    T.copy(E[k * bK // factor, by * bM], e_s)
                    T.copy(A[k * bK // 2, by * bM], a_s)
                else:
                    T.copy(E[by * bM, k * bK // factor], e_s)
                    T.copy(A[by * bM, k * bK // 2], a_s)
                if trans_B:
                    T.copy(B[bx * bN, k * bK], b_s)
                else:
                    T.copy(B[k * bK, bx * bN], b_s)
                if use_a:
                    T.copy(a_s, a_r)
                if use_b:
                    T.copy(b_s, b_r)
                gemm_sp(a_r if use_a else a_s, e_s, b_r if use_b else b_s, c, trans_A, trans_A, trans_B)
            T.copy(c, C[by * bM, bx * bN])
    return main


def sum_reducer_sites(n=8, threads=128, second=0, serial=1, dtype="float32"):
    """A scalar sum through a reducer: ``T.Parallel(n)`` updates ``acc[0]`` (on 128 threads the loop is
    replicated, so the partial has copy groups as well as addend lanes) and, with ``second``, a loop of
    that extent updates it again (the two sites induce different partials: TileLang widens to every thread
    an addend).  ``serial`` > 1 repeats the first site in a serial loop (one epoch across tiles)."""

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((max(second, 1),), dtype), C: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=threads) as _:
            a = T.alloc_fragment((n,), dtype)
            b = T.alloc_fragment((max(second, 1),), dtype)
            T.copy(A, a)
            T.copy(B, b)
            acc = T.alloc_reducer((1,), dtype, op="max")
            T.reducer_init(acc)
            for _s in T.serial(serial):
                for i in T.Parallel(n):
                    T.reducer_update(acc[0], a[i])
            if second:
                for j in T.Parallel(second):
                    T.reducer_update(acc[0], b[j])
            out = T.alloc_fragment((1,), dtype)
            T.finalize_reducer(acc, out)
            T.copy(out, C)
    return main


KERNELS.update({
    # reducers (TileLang's PartialFragment): a row sum, its legacy form, scalar sums over one / two sites
    "row_sum_reducer": lambda: row_sum_reducer(),
    "row_sum_reducer_64": lambda: row_sum_reducer(M=32, N=128, threads=64),
    "scalar_reducer": lambda: sum_reducer_sites(serial=4),
    "two_site_reducer": lambda: sum_reducer_sites(second=16),
})


def dynamic_shared_copy(threads=32):
    """A shared buffer of a runtime length (dynamic shared memory) filled from global memory and
    copied back: TileLang lays nothing out for it, nor for the copies of runtime extent."""
    n = T.dynamic("n", "int32")

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=threads) as _:
            s = T.alloc_shared((n,), dtype="int32")
            T.copy(A, s)
            T.copy(s, B)
    return main


def dynamic_shared_in_loop(threads=32):
    """The same buffer touched by a parallel loop, which layoutkit refuses by name."""
    n = T.dynamic("n", "int32")

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=threads) as _:
            s = T.alloc_shared((n,), dtype="int32")
            T.copy(A, s)
            for i in T.Parallel(64):
                B[i] = s[i]
    return main


# ---- GEMM operands outside registers and shared memory: not in KERNELS (MMA refuses them at sm_80) --------

def local_gemm(M=128, N=96, K=64, bM=32, bN=32, bK=16, trans_A=False, trans_B=False, threads=128,
               dtype="float32", accum_dtype="float32"):
    """``T.gemm`` of per-thread ``T.alloc_local`` A / B into a ``local`` C (TileLang's CPU scalar-GEMM tests'
    kernel): on sm_80 TileLang selects MMA, which reads no local operand; where no MMA fits the dtypes (float32
    on sm_75) the FMA fallback takes it and lays none of the three out."""
    a_shape = (bK, bM) if trans_A else (bM, bK)
    b_shape = (bN, bK) if trans_B else (bK, bN)

    @T.prim_func
    def main(A: T.Tensor(((K, M) if trans_A else (M, K)), dtype), B: T.Tensor(((N, K) if trans_B else (K, N)), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_local = T.alloc_local(a_shape, dtype)
            B_local = T.alloc_local(b_shape, dtype)
            C_local = T.alloc_local((bM, bN), accum_dtype)
            T.clear(C_local)
            for ko in T.serial(T.ceildiv(K, bK)):
                if trans_A:
                    T.copy(A[ko * bK, by * bM], A_local)
                else:
                    T.copy(A[by * bM, ko * bK], A_local)
                if trans_B:
                    T.copy(B[bx * bN, ko * bK], B_local)
                else:
                    T.copy(B[ko * bK, bx * bN], B_local)
                T.gemm(A_local, B_local, C_local, trans_A, trans_B)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


def shared_accumulator_gemm(M=128, N=128, K=128, bM=32, bN=32, bK=32, threads=128, a_fragment=False,
                            dtype="float16", accum_dtype="float32"):
    """``T.gemm`` of shared A / B into a shared C (TileLang's Metal GEMM tests' kernel, C allocated with
    ``T.alloc_shared(..., scope="shared")``); ``a_fragment``: A is copied into a fragment first.  MMA and WGMMA
    accumulate into fragments only (TileLang's inference stops); the FMA fallback accumulates anywhere."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), dtype, scope="shared")
            B_shared = T.alloc_shared((bK, bN), dtype, scope="shared")
            C_shared = T.alloc_shared((bM, bN), accum_dtype, scope="shared")
            A_frag = T.alloc_fragment((bM, bK), dtype)
            T.clear(C_shared)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=0):
                T.copy(A[by * bM, ko * bK], A_shared)
                T.copy(B[ko * bK, bx * bN], B_shared)
                if a_fragment:
                    T.copy(A_shared, A_frag)
                    T.gemm(A_frag, B_shared, C_shared)
                else:
                    T.gemm(A_shared, B_shared, C_shared)
            T.copy(C_shared, C[by * bM, bx * bN])
    return main


GEMM_SCOPES: dict[str, tuple[Callable, str, str | None]] = {
    "local_sm80": (lambda: local_gemm(), "sm_80", "A/B"),
    "local_trans_a_sm80": (lambda: local_gemm(trans_A=True), "sm_80", "A/B"),
    "local_fma_sm75": (lambda: local_gemm(), "sm_75", None),
    "local_fma_trans_b_sm75": (lambda: local_gemm(trans_B=True), "sm_75", None),
    "local_fp16_fma_sm70": (lambda: local_gemm(dtype="float16"), "sm_70", None),
    "shared_c_sm80": (lambda: shared_accumulator_gemm(), "sm_80", "C"),
    "shared_c_wgmma_sm90": (lambda: shared_accumulator_gemm(M=128, bM=64, bN=64), "sm_90", "C"),
    "shared_c_volta_sm70": (lambda: shared_accumulator_gemm(), "sm_70", "C"),
    "shared_c_16x16_sm80": (lambda: shared_accumulator_gemm(bM=16, bN=16, bK=16), "sm_80", "partition"),
    "shared_c_fma_sm75": (lambda: shared_accumulator_gemm(dtype="float32"), "sm_75", None),
    "fragment_a_shared_c_fma_sm75": (lambda: shared_accumulator_gemm(dtype="float32", a_fragment=True), "sm_75",
                                     None),
}
"""GEMMs whose operands or accumulator live outside what MMA reads: name -> (builder, target, what both
TileLang and layoutkit refuse: ``"A/B"`` the operand pairing, ``"C"`` the accumulator, ``"partition"`` the
warp partition; None where both solve it, through the FMA fallback)."""


def fused_copy_rows(n=192, threads=256):
    """A parallel copy into shared memory over rows of ``n`` columns, ``n`` no power of two (flash
    attention's head dim 192): TileLang's loop layout splits the fused index by the vector first."""

    @T.prim_func
    def main(Q: T.Tensor((256, n), "float16"), O: T.Tensor((256, n), "float16")):
        with T.Kernel(2, threads=threads) as bx:
            Q_shared = T.alloc_shared((128, n), "float16")
            for i, d in T.Parallel(128, n):
                Q_shared[i, d] = Q[bx * 128 + i, d]
            T.copy(Q_shared, O[bx * 128, 0])
    return main


KERNELS.update({"fused_copy_192": lambda: fused_copy_rows()})


def transpose_region(src_shape=(2, 3, 4), dst_shape=(2, 4, 3), src_region=None, dst_region=None,
                     fill=True, dtype="float32"):
    """``T.transpose`` of global tensors of rank >= 2 (TileLang's CPU transpose tests): whole tensors, or the
    regions ``((starts), (extents))`` given, which may have unit dims and run past the tensor (TileLang
    masks those elements with a boundary predicate); ``fill`` first fills the destination."""
    def part(buf, region):
        if region is None:
            return buf
        return buf[tuple(slice(s, s + e) for s, e in zip(*region))]

    @T.prim_func
    def main(src: T.Tensor(src_shape, dtype), dst: T.Tensor(dst_shape, dtype)):
        with T.Kernel(1):
            if fill:
                T.fill(dst, -1.0)
            T.transpose(part(src, src_region), part(dst, dst_region))
    return main


def transpose_shared_3d(M=256, b=32, threads=128, dtype="float16"):
    """A ``b x b`` tile of a ``(1, M, M)`` tensor staged in shared buffers of shape ``(1, b, b)`` and transposed
    there (a rank-3 ``T.transpose`` whose unit dim adds no loop), then scaled in registers as
    :func:`transpose` does."""
    @T.prim_func
    def main(A: T.Tensor((1, M, M), dtype), B: T.Tensor((1, M, M), dtype)):
        with T.Kernel(T.ceildiv(M, b), T.ceildiv(M, b), threads=threads) as (bx, by):
            x = T.alloc_shared((1, b, b), dtype)
            y = T.alloc_shared((1, b, b), dtype)
            f = T.alloc_fragment((1, b, b), dtype)
            T.copy(A[0, by * b, bx * b], x)
            T.transpose(x, y)
            T.copy(y, f)
            for i, j in T.Parallel(b, b):
                f[0, i, j] = f[0, i, j] * T.cast(2, dtype)
            T.copy(f, B[0, bx * b, by * b])
    return main


def serial_inner_gemm(M=256, N=256, K=256, block=16, threads=128, dtype="float32", accum_dtype="float32"):
    """A SIMT GEMM (TileLang's Metal codegen test): ``C_local[i, j] += A_s[i, k] * B_s[k, j]`` over a serial
    ``k`` inside ``T.Parallel(block, block)``.  TileLang's vectoriser plans along ``k``: the accumulator store
    does not move with it, so the loop is scalar."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            B_s = T.alloc_shared((block, block), dtype)
            C_local = T.alloc_fragment((block, block), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block), num_stages=0):
                T.copy(A[by * block, ko * block], A_s)
                T.copy(B[ko * block, bx * block], B_s)
                for i, j in T.Parallel(block, block):
                    for k in T.serial(block):
                        C_local[i, j] += A_s[i, k] * B_s[k, j]
            T.copy(C_local, C[by * block, bx * block])
    return main


def serial_inner_store(M=64, rows=16, groups=4, width=4, threads=128, dtype="float32"):
    """A fragment ``f[i, g]`` spread over a serial inner loop into shared memory, ``s[i, g, k] = f[i, g]``: the
    store moves with ``k``, and the loop follows the layout the copy gave ``f``."""
    @T.prim_func
    def main(A: T.Tensor((M, groups), dtype), B: T.Tensor((M, groups, width), dtype)):
        with T.Kernel(T.ceildiv(M, rows), threads=threads) as bx:
            f = T.alloc_fragment((rows, groups), dtype)
            s = T.alloc_shared((rows, groups, width), dtype)
            T.copy(A[bx * rows, 0], f)
            for i, g in T.Parallel(rows, groups):
                for k in T.serial(width):
                    s[i, g, k] = f[i, g]
            T.copy(s, B[bx * rows, 0, 0])
    return main


def serial_inner_copy(M=64, rows=8, groups=8, width=4, threads=128, dtype="float32"):
    """Global to shared through a serial inner loop, ``s[i, g, k] = A[.., g, k]``, no fragment: TileLang
    vectorises along ``k`` (width 4) and its plan, which picks the width of least padding, divides the loop's
    size down the chain of bodies, ``rows * groups * width`` = 256 (width 2; over the 64 parallel points
    alone it would be 1)."""
    @T.prim_func
    def main(A: T.Tensor((M, groups, width), dtype), B: T.Tensor((M, groups, width), dtype)):
        with T.Kernel(T.ceildiv(M, rows), threads=threads) as bx:
            s = T.alloc_shared((rows, groups, width), dtype)
            for i, g in T.Parallel(rows, groups):
                for k in T.serial(width):
                    s[i, g, k] = A[bx * rows + i, g, k]
            T.copy(s, B[bx * rows, 0, 0])
    return main


def serial_inner_after_init(M=64, hc=4, h=64, threads=128, dtype="float32"):
    """DeepSeek mHC's post mix: ``x[i, j] = c[i] * d[j]`` and then ``x[i, j] += a[k, i] * b[k, j]`` over a
    serial ``k``.  TileLang judges the first store along ``j`` and the second along ``k``, which does not
    move it: the loop is scalar."""
    @T.prim_func
    def main(A: T.Tensor((hc, hc), dtype), Bt: T.Tensor((hc, h), dtype), C: T.Tensor((hc,), dtype),
             D: T.Tensor((h,), dtype), X: T.Tensor((M, hc, h), dtype)):
        with T.Kernel(M, threads=threads) as bx:
            a = T.alloc_fragment((hc, hc), dtype)
            b = T.alloc_fragment((hc, h), dtype)
            c = T.alloc_fragment((hc,), dtype)
            d = T.alloc_fragment((h,), dtype)
            x = T.alloc_fragment((hc, h), dtype)
            T.copy(A, a)
            T.copy(Bt, b)
            T.copy(C, c)
            T.copy(D, d)
            for i, j in T.Parallel(hc, h):
                x[i, j] = c[i] * d[j]
                for k in T.serial(hc):
                    x[i, j] += a[k, i] * b[k, j]
            T.copy(x, X[bx, 0, 0])
    return main


GLOBAL_TRANSPOSES: dict[str, Callable] = {
    "transpose_rank3": lambda: transpose_region(fill=False),
    "transpose_rank4": lambda: transpose_region((2, 3, 4, 5), (2, 3, 5, 4), fill=False),
    "transpose_dst_predicate": lambda: transpose_region(src_region=((0, 0, 0), (2, 3, 4)),
                                                        dst_region=((0, 0, 1), (2, 4, 3))),
    "transpose_singleton_dst": lambda: transpose_region((2, 3, 1), (2, 1, 3), ((0, 0, 0), (2, 3, 1)),
                                                        ((0, 1, 0), (2, 1, 3))),
    "transpose_singleton_src": lambda: transpose_region((2, 3, 1), (2, 1, 3), ((0, 0, 1), (2, 3, 1)),
                                                        ((0, 0, 0), (2, 1, 3)), fill=False),
}
"""``T.transpose`` of global tensors of rank 3 and 4 (TileLang's CPU transpose tests): TileLang's tables are
empty (its transpose and fill propose no layout), so they are not in :data:`KERNELS`, whose comparison
expects a layout; ``tests/test_frontend_tilelang_inner.py`` compares them."""

KERNELS.update({
    # a rank-3 shared T.transpose whose unit dim adds no loop
    "transpose_shared_3d": lambda: transpose_shared_3d(),
    # parallel loops around serial inner loops: TileLang vectorises along the innermost loop
    "serial_inner_gemm": lambda: serial_inner_gemm(),
    "serial_inner_gemm_f16": lambda: serial_inner_gemm(dtype="float16"),
    "serial_inner_store": lambda: serial_inner_store(),
    "serial_inner_copy": lambda: serial_inner_copy(),
    "serial_inner_after_init": lambda: serial_inner_after_init(),
})


# ---- parallel loops: opaque calls, conditions that pin a loop variable, a ragged copy root -------------

def opaque_calls(M=64, N=64, bM=16, bN=16, group=1, dtype="float32", threads=128):
    """A call TileLang's vectoriser cannot vectorise (``T.ieee_add`` / ``T.ieee_fsqrt``: no
    ``TVectorizable`` attribute) inside a parallel loop over global tensors: TileLang vectorises no wider
    than the width over which every address the call reads stays the same, 1 when it reads ``A[i, j]``;
    ``group`` > 1 reads ``S[i, j // group]`` instead (invariant over ``group`` lanes) beside a plain
    ``A[i, j]``, so the loop is ``group`` wide."""
    if group == 1:
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
                for i, j in T.Parallel(bM, bN):
                    C[by * bM + i, bx * bN + j] = T.ieee_add(A[by * bM + i, bx * bN + j],
                                                             B[by * bM + i, bx * bN + j], "rn")
        return main

    @T.prim_func
    def grouped(A: T.Tensor((M, N), dtype), S: T.Tensor((M, N // group), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            for i, j in T.Parallel(bM, bN):
                C[by * bM + i, bx * bN + j] = A[by * bM + i, bx * bN + j] + T.ieee_fsqrt(
                    S[by * bM + i, (bx * bN + j) // group], "rn")
    return grouped


def pinned_row(rows=48, feat=8192, dtype="uint8", else_branch=False, condition=True):
    """A parallel loop over tensors with a runtime row stride known only even (``T.assume``), under
    ``if token < 1``: TileLang's analyzer knows ``token`` is 0 there, so the stride drops out of the
    address and the loop is 16 uint8 wide (without the ``condition``: 2).  ``else_branch`` writes in the
    else branch of ``if token >= 1`` (the negated condition pins it the same way).  With a power-of-two
    ``rows`` (64: TileLang's issue 2883 kernel) TileLang fuses the nest into one loop before planning it
    and never sees the stride: 16 wide with or without the condition."""
    stride = T.dynamic("stride")
    height = 1 if condition else rows  # the tensors hold the rows the loop stores

    @T.prim_func
    def main(dst: T.StridedTensor((height, feat), (stride, 1), dtype),
             src: T.StridedTensor((height, feat), (stride, 1), dtype)):
        T.assume(stride % 2 == 0)
        with T.Kernel(1):
            for token, feature in T.Parallel(rows, feat):
                if else_branch:
                    if token >= 1:
                        T.evaluate(0)
                    else:
                        dst[token, feature] = src[token, feature]
                elif condition:
                    if token < 1:
                        dst[token, feature] = src[token, feature]
                else:
                    dst[token, feature] = src[token, feature]
    return main


def ragged_copy_root(rows=16, cols=14, group=32, threads=128, dtype="int32"):
    """A ``rows x cols`` fragment copied in (a plan of ``rows * cols`` points, not a multiple of the
    threads: TileLang's attempt from that copy fails) and read as ``A_local[i, j // group]`` by a
    ``rows x cols * group`` loop: TileLang lays the loop out first and completes the fragment from it
    (replicated over the threads that share a column group)."""

    @T.prim_func
    def main(A: T.Tensor((rows, cols), dtype), B: T.Tensor((rows, cols * group), dtype)):
        with T.Kernel(1, threads=threads) as _:
            A_local = T.alloc_fragment((rows, cols), dtype)
            T.copy(A, A_local)
            for i, j in T.Parallel(rows, cols * group):
                B[i, j] += A_local[i, j // group]
    return main


def conditioned(kind="bound", rows=64, cols=64, threads=128, dtype="float16"):
    """A parallel loop under a condition on its inner variable: TileLang vectorises an ``if`` (or an
    ``if_then_else``) only as wide as the condition stays the same: ``bound`` checks the column against a
    runtime width (scalar), ``mod`` is ``j % 4 < 2`` (2 wide), ``select`` is ``T.if_then_else(j < 8, ...)``
    (8 wide, as without it)."""
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((rows, N), dtype), B: T.Tensor((rows, N), dtype)):
        with T.Kernel(T.ceildiv(N, cols), threads=threads) as bx:
            for i, j in T.Parallel(rows, cols):
                if kind == "bound":
                    if bx * cols + j < N:
                        B[i, bx * cols + j] = A[i, bx * cols + j]
                elif kind == "mod":
                    if j % 4 < 2:
                        B[i, bx * cols + j] = A[i, bx * cols + j]
                else:
                    B[i, bx * cols + j] = T.if_then_else(j < 8, A[i, bx * cols + j], T.cast(0, dtype))
    return main


KERNELS.update({
    # conditions on the inner loop variable: vectorised only as wide as they stay the same
    "condition_bound": lambda: conditioned(),
    "condition_mod": lambda: conditioned("mod"),
    "condition_select": lambda: conditioned("select"),
    # opaque calls (no TVectorizable): vectorised only as wide as their addresses stay the same
    "opaque_call_f32": lambda: opaque_calls(),
    "opaque_call_f16": lambda: opaque_calls(dtype="float16"),
    "opaque_call_grouped": lambda: opaque_calls(group=2, dtype="float16"),
    # a ragged fragment copy: TileLang's attempt from it fails, the loop's succeeds
    "ragged_copy_root": lambda: ragged_copy_root(),
})
NOT_LOWERED.update({
    # runtime strides (not lowered, as assumed_strides): a condition pins the row of a 48-row nest; a
    # 64-row nest is fused by TileLang, with or without it
    "pinned_row": lambda: pinned_row(),
    "pinned_row_else": lambda: pinned_row(else_branch=True),
    "unpinned_row": lambda: pinned_row(condition=False),
    "fused_pinned_row": lambda: pinned_row(rows=64),
    "fused_unpinned_row": lambda: pinned_row(rows=64, condition=False),
})


def tma_store_runtime_row(threads=128):
    """A tile stored through shared memory to rows chosen at run time (``r = Idx[0]``): TileLang 0.1.15
    cannot prove the store in bounds, so at sm_90 it picks a 2-D TMA store and swizzles ``C_shared``;
    layoutkit reads the start at 0 and leaves ``C_shared`` row-major (a 1-D store's layout)."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), Idx: T.Tensor((1,), "int32"), D: T.Tensor((256, 64), "float16")):
        with T.Kernel(1, threads=threads) as _:
            r = Idx[0]
            C_local = T.alloc_fragment((64, 64), "float16")
            C_shared = T.alloc_shared((64, 64), "float16")
            T.copy(A, C_local)
            for i, j in T.Parallel(64, 64):
                C_local[i, j] = C_local[i, j] * 2
            T.copy(C_local, C_shared)
            T.copy(C_shared, D[r * 64:(r + 1) * 64, :])
    return main


def pinned_nest_copy(vec=1, threads=128):
    """A global copy over a 128 x 32 nest with ``loop_layout=`` pinned (TileLang's annotate-loop-layout
    tests): the nest touches no fragment, so it is fused first and the pinned layout read over the fused
    loop, row-major.  ``vec`` 1: row ``i`` in thread ``i``; 4: float4 vectors dealt round-robin."""
    if vec == 1:
        def fn(i, j):
            return i, j
    else:
        def fn(i, j):
            e = i * 32 + j
            return (e // vec) % threads, e % vec + (e // (vec * threads)) * vec
    layout = T.Fragment((128, 32), forward_fn=fn)

    @T.prim_func
    def main(A: T.Tensor((128, 32), "float32"), B: T.Tensor((128, 32), "float32")):
        with T.Kernel(1, threads=threads):
            for i, j in T.Parallel(128, 32, loop_layout=layout):
                B[i, j] = A[i, j]
    return main


KERNELS.update({"pinned_nest_rows": lambda: pinned_nest_copy(), "pinned_nest_vec4": lambda: pinned_nest_copy(4)})


def replicated_readback(n=128, threads=128, use_copy=False):
    """A fully replicated fragment (``make_fully_replicated_layout_fragment``) filled one element at a time
    by a serial loop (``x[i] = A[i]``: TileLang wraps the statement in a parallel loop of extent 1 that
    indexes ``x`` only by ``i``, from outside it) and stored back by ``T.Parallel`` or ``T.copy``: every
    thread holds every element, so TileLang lays the wrapped loop out on every thread and stores once per
    element (replica 0)."""
    import tilelang

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads) as _:
            x = T.alloc_fragment((n,), "float32")
            T.annotate_layout({x: tilelang.layout.make_fully_replicated_layout_fragment(x, threads)})
            for i in T.serial(n):
                x[i] = A[i]
            if use_copy:
                T.copy(x, B)
            else:
                for i in T.Parallel(n):
                    B[i] = x[i]
    return main


def outer_index_scale(rows=4, n=128, threads=128, reduced=False):
    """Row ``k`` of a tile scaled by ``s[k]`` for ``k`` in a serial loop around ``T.Parallel(n)``: ``s`` is
    read only at the outer ``k``, so every thread reads the same element.  ``s`` is a fill's (TileLang
    completes it fully replicated from the loop) or, with ``reduced``, a column sum of a fragment (also
    on every thread)."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), C: T.Tensor((n, rows), "float32"),
             B: T.Tensor((rows, n), "float32")):
        with T.Kernel(1, threads=threads) as _:
            s = T.alloc_fragment((rows,), "float32")
            y = T.alloc_fragment((n,), "float32")
            if reduced:
                c = T.alloc_fragment((n, rows), "float32")
                T.copy(C, c)
                T.reduce_sum(c, s, dim=0)
            else:
                T.fill(s, 2)
            for k in T.serial(rows):
                T.copy(A[k, :], y)
                for j in T.Parallel(n):
                    y[j] = y[j] * s[k]
                T.copy(y, B[k, :])
    return main


def gemv_reducer(M=256, N=256, bM=128, bN=128, threads=256, dtype="float16", accum_dtype="float32"):
    """A GEMV through a legacy reducer (``replication="all"``, ``acc[i] += ...``, ``T.finalize_reducer(acc)``)
    over pipelined tiles, the update a product of two fragments: the shape of TileLang's
    ``examples/gemv`` reducer kernel."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), x: T.Tensor((N,), dtype), o: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bm:
            acc = T.alloc_reducer(bM, accum_dtype, replication="all")
            T.clear(acc)
            for kn in T.Pipelined(T.ceildiv(N, bN), num_stages=2):
                A_shared = T.alloc_shared((bM, bN), dtype)
                T.copy(A[bm * bM, kn * bN], A_shared)
                A_frag = T.alloc_fragment((bM, bN), dtype)
                T.copy(A_shared, A_frag)
                x_frag = T.alloc_fragment(bN, dtype)
                T.copy(x[kn * bN], x_frag)
                for i, j in T.Parallel(bM, bN):
                    acc[i] += A_frag[i, j] * x_frag[j]
            T.finalize_reducer(acc)
            T.copy(acc, o[bm * bM])
    return main


KERNELS.update({
    # fragments read or written only at indices from outside their parallel loop
    "replicated_readback": lambda: replicated_readback(),
    "replicated_readback_copy": lambda: replicated_readback(use_copy=True),
    "outer_index_fill": lambda: outer_index_scale(),
    "outer_index_reduced": lambda: outer_index_scale(reduced=True),
    # a reducer over pipelined tiles (TileLang's gemv example); a legacy row max finalized in batches
    "gemv_reducer": lambda: gemv_reducer(),
    "row_max_reducer_batched": lambda: row_sum_reducer(threads=256, legacy=True, op="max", batch=4),
})
