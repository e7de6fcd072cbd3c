"""Code generation (NVIDIA): GEMM + bias + row max, reductions, bf16 / tf32 / int8 operands, checked by the numpy
executor against numpy and compiled with nvcc where it is installed."""

from __future__ import annotations

import runpy
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from layoutkit.algebra.nodes import Const
from layoutkit.backends.nv import ir
from layoutkit.backends.nv.cuda import print_module
from layoutkit.backends.nv.execute import from_bf16, np_dtype, run, to_bf16
from layoutkit.backends.nv.lower import lower as nv_lower
from layoutkit.codegen import execute, lower
from layoutkit.errors import UnsupportedError
from layoutkit.infer import infer_layouts, programs
from layoutkit.infer.program import Program

from .test_codegen import STAGED_BUFFERS, _with_c

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _gemm_operands(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def _last_tile(x, b, axis):
    """The part of ``x`` in the last tile along ``axis``: blocks of one band write the same reduce output rows,
    and the executor keeps the last block's (which is the tail tile, so this also checks the tail mask)."""
    n = x.shape[axis]
    start = (-(-n // b) - 1) * b
    return x[:, start:] if axis == 1 else x[start:, :]


ROWMAX = [  # M, N, K, tile, threads
    (64, 32, 64, 32, 128),
    (100, 64, 40, 64, 128),  # M tail
    (130, 128, 64, 128, 256),
    (150, 128, 64, 128, 128),
    (100, 150, 72, 64, 128),  # N tail: the last column tile's row max
]


@pytest.mark.parametrize("case", ROWMAX, ids=lambda c: "x".join(map(str, c)))
def test_gemm_bias_rowmax_equals_numpy(case):
    M, N, K, b, threads = case
    p = programs.gemm_rowmax_bias(M=M, N=N, K=K, bM=b, bN=b, bK=32, threads=threads)
    a, bm, ab = _gemm_operands(M, N, K)
    bias = (np.random.default_rng(1).standard_normal(N) - 4).astype(np.float32)  # mostly negative rows
    out = execute(p, infer_layouts(p), {"A": a, "B": bm, "Bias": bias})
    ref = ab + bias
    np.testing.assert_allclose(out["C"].astype(np.float64), ref, rtol=2.0**-10, atol=2.0**-12)
    np.testing.assert_allclose(out["RowMax"], _last_tile(ref, b, 1).max(axis=1), rtol=1e-5, atol=1e-5)


def test_int8_gemm_bias_rowmax_is_exact():
    p = programs.gemm_rowmax_bias(M=100, N=64, K=128, bM=64, bN=64, bK=64, dtype="int8", accum_dtype="int32")
    rng = np.random.default_rng(8)
    a, b = rng.integers(-128, 128, (100, 128)).astype(np.int8), rng.integers(-128, 128, (128, 64)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 64).astype(np.int32)
    out = execute(p, infer_layouts(p), {"A": a, "B": b, "Bias": bias})
    ref = a.astype(np.int64) @ b.astype(np.int64) + bias
    np.testing.assert_array_equal(out["RowMax"], ref.max(axis=1))
    np.testing.assert_array_equal(out["C"], ref.astype(np.int8))  # the int8 C wraps like the kernel's cast


def _scaled_rowsum():
    """A fragment program: ``O = A * s[j]`` (fp16, ``s`` a replicated 1-D fragment), ``R = sum_j O`` in fp16."""
    q = Program(threads=128)
    A, S = q.tensor("A", (100, 72), "float16"), q.tensor("S", (72,), "float16")
    R, O = q.tensor("R", (100,), "float16"), q.tensor("O", (100, 72), "float16")
    A_f, s_f = q.alloc_fragment("A_frag", (64, 64), "float16"), q.alloc_fragment("s_frag", (64,), "float16")
    r_f = q.alloc_fragment("r_frag", (64,), "float16")
    q.copy(A[0, 0], A_f)
    q.copy(S[0], s_f)
    q.parallel((64, 64), writes=[(A_f, lambda i, j: (i, j))], reads=[(A_f, lambda i, j: (i, j)),
                                                                      (s_f, lambda i, j: (j,))], compute="mul")
    q.reduce(A_f, r_f, dim=1, kind="sum")
    q.copy(A_f, O[0, 0])
    q.copy(r_f, R[0])
    return q


def test_fragment_program_with_a_broadcast_operand_and_a_reduce():
    q = _scaled_rowsum()
    rng = np.random.default_rng(9)
    a, sc = rng.standard_normal((100, 72)).astype(np.float16), rng.standard_normal(72).astype(np.float16)
    out = execute(q, infer_layouts(q), {"A": a, "S": sc})
    prod = (a.astype(np.float32) * sc.astype(np.float32)).astype(np.float16)  # fp32 multiply, fp16 result
    np.testing.assert_array_equal(out["O"], prod)
    # 8 fp16 partial sums per thread, then 8 lanes: fp16 rounding at each of ~11 steps
    np.testing.assert_allclose(out["R"].astype(np.float64), prod[:, 64:].astype(np.float64).sum(axis=1),
                               rtol=0, atol=2.0**-10 * 11 * np.abs(prod[:, 64:]).sum(axis=1).max())


def _reduce_program(M, N, K, b, kind, dim, clear, threads=128, init=1.5):
    """GEMM then ``reduce`` (``init`` filled first when ``clear`` is False) and both results stored."""
    p = Program(threads=threads)
    A, B = p.tensor("A", (M, K), "float16"), p.tensor("B", (K, N), "float16")
    C, R = p.tensor("C", (M, N), "float32"), p.tensor("R", ((M, N)[1 - dim],), "float32")
    A_s, B_s = p.alloc_shared("A_shared", (b, 32), "float16"), p.alloc_shared("B_shared", (32, b), "float16")
    C_l, r = p.alloc_fragment("C_local", (b, b), "float32"), p.alloc_fragment("r_frag", (b,), "float32")
    p.clear(C_l)
    with p.pipelined(num_stages=2):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l)
    if not clear:
        p.fill(r, init)
    p.reduce(C_l, r, dim=dim, kind=kind, clear=clear)
    p.copy(C_l, C[0, 0])
    p.copy(r, R[0])
    return p


@pytest.mark.parametrize("kind,dim,clear", [("sum", 1, True), ("min", 1, False), ("max", 0, True), ("sum", 0, False)])
@pytest.mark.parametrize("shape", [(100, 72, 64, 32, 128), (130, 150, 64, 128, 256)], ids=str)
def test_reduce_kinds_dims_and_clear(kind, dim, clear, shape):
    M, N, K, b, threads = shape
    p = _reduce_program(M, N, K, b, kind, dim, clear, threads)
    a, bm, ref = _gemm_operands(M, N, K, seed=2)
    out = execute(p, infer_layouts(p), {"A": a, "B": bm})
    np.testing.assert_allclose(out["C"], ref, rtol=1e-5, atol=1e-5)
    part = _last_tile(ref if dim == 1 else ref.T, b, 1)
    want = {"sum": part.sum(axis=1), "max": part.max(axis=1), "min": part.min(axis=1)}[kind]
    if not clear:
        want = want + 1.5 if kind == "sum" else {"max": np.maximum, "min": np.minimum}[kind](want, 1.5)
    np.testing.assert_allclose(out["R"], want, rtol=1e-5, atol=1e-4)


def _fragment_reduce(M, N, b, kind, dim, threads=128):
    p = Program(threads=threads)
    A, R = p.tensor("A", (M, N), "float32"), p.tensor("R", ((M, N)[1 - dim],), "float32")
    A_f, r = p.alloc_fragment("A_frag", (b, b), "float32"), p.alloc_fragment("r_frag", (b,), "float32")
    p.copy(A[0, 0], A_f)
    p.reduce(A_f, r, dim=dim, kind=kind)
    p.copy(r, R[0])
    return p


@pytest.mark.parametrize("case", [(64, 64, 64, "sum", 1, 128), (100, 72, 64, "max", 1, 128),
                                  (128, 128, 128, "sum", 0, 256), (70, 40, 32, "min", 0, 64)], ids=str)
def test_reduce_of_a_loaded_fragment(case):
    """Here a row spans 16 lanes, a column 2 lanes x 4 warps: shuffles and the shared step both run."""
    M, N, b, kind, dim, threads = case
    p = _fragment_reduce(M, N, b, kind, dim, threads)
    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32)
    part = _last_tile(a if dim == 1 else a.T, b, 1)
    want = {"sum": part.sum(axis=1), "max": part.max(axis=1), "min": part.min(axis=1)}[kind]
    np.testing.assert_allclose(execute(p, infer_layouts(p), {"A": a})["R"], want, rtol=1e-5, atol=1e-5)


def test_reduce_statements_follow_the_thread_map():
    """128x128 tile, 4 warps of 64x64: a row lives on 4 lanes (xor 1, 2) of 2 warps -> shared step."""
    p = programs.gemm_rowmax_bias(M=128, N=128, K=64, bM=128, bN=128, bK=32)
    k = lower(p, infer_layouts(p))
    masks = sorted({st.mask for st in k.body if isinstance(st, ir.ShflXor)})
    assert masks == [1, 2]
    assert [b.name for b in k.scoped("shared")] == ["A_s", "B_s", "row_max_red6"]
    assert k.buffer("row_max_red6").size == 128 * 4


def _warp_kernel(fn, mask):
    regs = ir.Buffer("r", "int32", 1, "reg")
    out = ir.Buffer("y", "int32", 64, "global")
    body = (ir.Load("r", Const(0), "x", ir.TID, 1), ir.ShflXor("r", 0, mask, fn),
            ir.Store("y", ir.TID, "r", Const(0), 1))
    return ir.Kernel("k", 64, (1, 1), (ir.Buffer("x", "int32", 64, "global"), out, regs), body)


@pytest.mark.parametrize("fn,mask", [("sub", 5), ("max", 16), ("add", 31)])
def test_shuffle_reads_every_lane_before_writing(fn, mask):
    x = (np.arange(64) * 7 % 23).astype(np.int32)
    y = run(_warp_kernel(fn, mask), {"x": x, "y": np.zeros(64, np.int32)})["y"]
    partner = x[np.arange(64) ^ mask]
    want = {"sub": x - partner, "max": np.maximum(x, partner), "add": x + partner}[fn]
    np.testing.assert_array_equal(y, want)


def test_bf16_bits_round_to_nearest_even():
    x = np.float32([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.0, np.inf])  # two ties: to the even neighbour
    assert to_bf16(x).tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC000, 0x7F80]
    assert from_bf16(to_bf16(x)).tolist() == [1.0, 1.0, 1.0 + 2**-6, -2.0, np.inf]


def _tf32(x):
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


GEMMS = [  # dtype, M, N, K, bM, bN, bK, transpose_B, policy
    ("bfloat16", 100, 72, 96, 64, 64, 32, False, "square"),
    ("bfloat16", 150, 130, 72, 64, 64, 32, True, "square"),
    ("bfloat16", 128, 128, 64, 128, 128, 32, False, "square"),
    ("float32", 100, 72, 40, 64, 64, 32, False, "square"),
    ("float32", 96, 80, 48, 32, 32, 16, True, "square"),
    ("float32", 64, 40, 64, 64, 32, 32, False, "fullcol"),
    ("int8", 100, 72, 96, 64, 64, 32, False, "square"),
    ("int8", 128, 128, 128, 128, 128, 64, False, "square"),
    ("int8", 64, 40, 64, 64, 32, 64, False, "fullcol"),
    ("uint8", 100, 72, 96, 64, 64, 32, False, "square"),
    ("uint8", 96, 80, 64, 32, 32, 32, True, "square"),
]


def _gemm_case(case, seed=4):
    dtype, M, N, K, bM, bN, bK, tb, policy = case
    acc = "int32" if dtype in ("int8", "uint8") else "float32"
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, dtype=dtype, accum_dtype=acc, transpose_B=tb, policy=policy)
    rng = np.random.default_rng(seed)
    bshape = (N, K) if tb else (K, N)
    if dtype in ("int8", "uint8"):
        lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
        a, b = (rng.integers(lo, hi, s).astype(dtype) for s in ((M, K), bshape))
        av, bv = a.astype(np.int64), b.astype(np.int64)
    elif dtype == "bfloat16":
        a, b = to_bf16(rng.standard_normal((M, K))), to_bf16(rng.standard_normal(bshape))
        av, bv = from_bf16(a).astype(np.float64), from_bf16(b).astype(np.float64)
    else:
        a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal(bshape).astype(np.float32)
        av, bv = _tf32(a).astype(np.float64), _tf32(b).astype(np.float64)  # what the tensor core multiplies
    return p, a, b, av @ (bv.T if tb else bv)


@pytest.mark.parametrize("case", GEMMS, ids=lambda c: "_".join(map(str, c)))
def test_gemm_operand_types_equal_numpy(case):
    dtype, M, N = case[:3]
    p, a, b, ref = _gemm_case(case)
    r = infer_layouts(p)
    out = execute(p, r, {"A": a, "B": b})["C"]
    if dtype in ("int8", "uint8"):
        np.testing.assert_array_equal(out, ref.astype(np.int64).astype(dtype))  # C wraps like the kernel's cast
        acc = run(_with_c(lower(p, r), "int32"), {"A": a, "B": b, "C": np.zeros((M, N), np.int32)})["C"]
        np.testing.assert_array_equal(acc.reshape(M, N), ref)
        return
    if dtype == "bfloat16":  # a bf16 C: bf16 output rounding
        np.testing.assert_allclose(from_bf16(out), ref, rtol=2.0**-8, atol=2.0**-100)
    else:  # fp32 C from tf32 products: fp32 accumulation only
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.sqrt(M))
    acc = run(_with_c(lower(p, r), "float32"), {"A": a, "B": b, "C": np.zeros((M, N), np.float32)})["C"]
    np.testing.assert_allclose(acc.reshape(M, N), ref, rtol=1e-5, atol=1e-5 * np.sqrt(case[3]))


HOPPER = [(256, 256, 64, 128, 128, False), (200, 150, 72, 128, 256, False), (256, 256, 64, 128, 128, True)]


@pytest.mark.parametrize("case", HOPPER, ids=lambda c: "x".join(map(str, c)))
def test_sm90_wgmma_shaped_accumulator_runs_on_mma_sync(case):
    """On sm_90 the inferred accumulator is wgmma's (4 warps stacked along M, rows 64 apart per warp)."""
    M, N, K, b, threads, tb = case
    p = programs.gemm(M=M, N=N, K=K, bM=b, bN=b, bK=32, threads=threads, target="sm_90", transpose_B=tb)
    r = infer_layouts(p)
    assert "_i % 64 // 16 * 32" in r.layout_map["C_local"].describe()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    bm = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ (bm.T if tb else bm).astype(np.float64)
    kernel = lower(p, r, gemm_instruction="mma")  # the TMA-fed ones default to the wgmma kernel (test_hopper)
    acc = run(_with_c(kernel, "float32"), {"A": a, "B": bm, "C": np.zeros((M, N), np.float32)})["C"]
    np.testing.assert_allclose(acc.reshape(M, N), ref, rtol=1e-5, atol=1e-5 * np.sqrt(K))


TURING = [(100, 72, 96, 64, 2), (64, 64, 64, 32, 1), (150, 130, 72, 128, 3)]  # M, N, K, tile, stages


@pytest.mark.parametrize("case", TURING, ids=lambda c: "x".join(map(str, c)))
def test_sm75_gemm_runs_two_k8_mmas_per_k16(case):
    M, N, K, b, stages = case
    p = programs.gemm(M=M, N=N, K=K, bM=b, bN=b, bK=32, num_stages=stages, target="sm_75")
    r = infer_layouts(p)
    k = lower(p, r)
    src = print_module([k])
    assert "m16n8k8.row.col.f32.f16.f16.f32" in src and "cp.async" not in src  # Turing has no cp.async
    a, bm, ref = _gemm_operands(M, N, K, seed=6)
    acc = run(_with_c(k, "float32"), {"A": a, "B": bm, "C": np.zeros((M, N), np.float32)})["C"]
    np.testing.assert_allclose(acc.reshape(M, N), ref, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def _leaves(body):
    for st in body:
        yield from _leaves(st.body) if isinstance(st, ir.For) else (st,)


@pytest.mark.parametrize("i", [6, 3])
def test_kn_b_of_8_and_32_bits_is_read_in_words(i):
    """An int8 / tf32 B stored [K, N]: 4-element (32- / 128-bit) shared loads of relabelled columns, int8 words
    transposed by prmt; the kernel equals numpy.  Without the staged epilogue, per-lane element loads."""
    p, a, b, ref = _gemm_case(GEMMS[i])
    r = infer_layouts(p)
    k = nv_lower(p, r)
    loads = [st for st in _leaves(k.body) if isinstance(st, ir.Load) and st.src == "B_s"]
    prmts = [st for st in _leaves(k.body) if isinstance(st, ir.Prmt)]
    assert loads and {st.vec for st in loads} == {4}
    assert len(prmts) == (2 * len(loads) if GEMMS[i][0] == "int8" else 0)  # 8 prmt per 4 words
    assert not any(isinstance(st, ir.Ldmatrix) and st.src == "B_s" for st in _leaves(k.body))
    M, N = ref.shape
    acc = "int32" if GEMMS[i][0] == "int8" else "float32"
    out = run(_with_c(k, acc), {"A": a, "B": b, "C": np.zeros((M, N), np_dtype(acc))})["C"].reshape(M, N)
    if acc == "int32":
        np.testing.assert_array_equal(out, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.sqrt(GEMMS[i][3]))
    plain = nv_lower(p, r, staged_epilogue=False)
    assert {st.vec for st in _leaves(plain.body) if isinstance(st, ir.Load) and st.src == "B_s"} == {1}


@pytest.mark.parametrize("dtype,vec", [("float16", 8), ("bfloat16", 8), ("float32", 4)])
def test_epilogue_stores_16_byte_rows_through_shared_memory(dtype, vec):
    """The accumulator goes to a padded shared tile, then each thread stores 16-byte row runs (guarded at the
    tails: M = 100, N = 72); ``staged_epilogue=False`` keeps the direct pair stores."""
    p, a, b, ref = _gemm_case((dtype, 100, 72, 64, 64, 64, 32, False, "square"))
    if dtype == "float16":  # the case's operands are fp32 then
        a, b = a.astype(np.float16), b.astype(np.float16)
        ref = a.astype(np.float64) @ b.astype(np.float64)
    r = infer_layouts(p)
    k = nv_lower(p, r)
    stores = [st for st in _leaves(k.body) if isinstance(st, ir.Store) and st.dst == "C"]
    assert [st.vec for st in stores] == [vec] and len(stores[0].guard) == 2  # rows and column runs of the tail
    assert k.buffer(STAGED_BUFFERS[0]).scope == "shared"
    out = run(k, {"A": a, "B": b, "C": np.zeros(100 * 72, np_dtype(dtype))})["C"].reshape(100, 72)
    plain = nv_lower(p, r, staged_epilogue=False)
    assert {st.vec for st in _leaves(plain.body) if isinstance(st, ir.Store) and st.dst == "C"} == {2}
    direct = run(plain, {"A": a, "B": b, "C": np.zeros(100 * 72, np_dtype(dtype))})["C"].reshape(100, 72)
    np.testing.assert_array_equal(out, direct)  # the same values, rounded once
    got = from_bf16(out) if dtype == "bfloat16" else out.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=2.0**-7, atol=2.0**-7 * np.sqrt(64))


def test_elementwise_example_multiplies():
    p = runpy.run_path(str(EXAMPLES / "elementwise.py"))["program"]()
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((1024, 1024)).astype(np.float16) for _ in range(2))
    out = execute(p, infer_layouts(p), {"A": a, "B": b})
    np.testing.assert_array_equal(out["C"], (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16))


def test_parallel_without_compute_names_the_fix():
    p = programs.gemm_rowmax_bias(M=64, N=64, K=64, bM=32, bN=32, bK=32)
    op = p.ops[5]
    del op.args["compute"]
    with pytest.raises(UnsupportedError, match="compute="):
        lower(p, infer_layouts(p))


def _compile(tmp_path, src, arch):
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    res = subprocess.run([shutil.which("nvcc"), f"-arch={arch}", "-c", str(cu), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-4000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH: CUDA compile check skipped")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_epilogues_and_operand_types_compile(tmp_path, arch):
    progs = [programs.gemm_rowmax_bias(M=M, N=N, K=K, bM=b, bN=b, bK=32, threads=t) for M, N, K, b, t in ROWMAX[1:3]]
    progs += [_reduce_program(100, 72, 64, 32, "sum", 0, False),
              _reduce_program(130, 150, 64, 128, "min", 1, True, 256)]
    progs += [_fragment_reduce(128, 128, 128, "sum", 0, 256), _fragment_reduce(100, 72, 64, "max", 1)]
    progs += [_gemm_case(GEMMS[i])[0] for i in (0, 1, 3, 4, 6, 8, 10)]  # every operand type, B both ways
    progs += [programs.gemm(M=M, N=N, K=K, bM=b, bN=b, bK=32, threads=t, target="sm_90", transpose_B=tb)
              for M, N, K, b, t, tb in HOPPER[:2]]
    progs.append(programs.gemm_rowmax_bias(M=130, N=128, K=64, bM=128, bN=128, bK=32, target="sm_90"))
    progs += [_scaled_rowsum(), programs.gemm_rowmax_bias(M=100, N=64, K=128, bM=64, bN=64, bK=64, dtype="int8",
                                                          accum_dtype="int32")]
    progs += [runpy.run_path(str(EXAMPLES / f))["program"]() for f in ("gemm_bias_rowmax.py", "elementwise.py")]
    _compile(tmp_path, print_module([lower(p, infer_layouts(p), gemm_instruction="mma") for p in progs]), arch)


def test_cli_emits_the_examples(tmp_path):
    """``layoutkit infer EXAMPLE --emit DIR`` writes one kernel per example; they compile where nvcc is."""
    from layoutkit.cli import main

    for name in ("gemm_bias_rowmax.py", "elementwise.py"):
        assert main(["infer", str(EXAMPLES / name), "--emit", str(tmp_path)]) == 0
    paths = sorted(tmp_path.glob("*.cu"))
    assert [p.name.split("_")[0] for p in paths] == ["elementwise", "gemm"]
    text = paths[1].read_text()
    assert "__shfl_xor_sync" in text and "fmaxf" in text and "RowMax" in text
    if shutil.which("nvcc"):
        _compile(tmp_path, "\n".join(p.read_text() for p in paths), "sm_80")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH: CUDA compile check skipped")
def test_sm75_gemm_compiles(tmp_path):
    progs = [programs.gemm(M=M, N=N, K=K, bM=b, bN=b, bK=32, num_stages=s, target="sm_75") for M, N, K, b, s in TURING]
    progs.append(programs.gemm_rowmax_bias(M=100, N=64, K=64, bM=64, bN=64, bK=32, target="sm_75"))
    _compile(tmp_path, print_module([lower(p, infer_layouts(p)) for p in progs]), "sm_75")
