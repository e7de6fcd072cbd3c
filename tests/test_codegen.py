"""Code generation: the numpy executor computes A @ B with the inferred layouts; the CUDA compiles."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest

from layoutkit.backends.nv import ir
from layoutkit.backends.nv.cuda import print_module
from layoutkit.backends.nv.epilogue_smem import BUFFERS as STAGED_BUFFERS
from layoutkit.backends.nv.execute import np_dtype, run
from layoutkit.codegen import emit, emit_cuda, execute, lower
from layoutkit.errors import RaceError, UnsupportedError
from layoutkit.infer import infer_layouts, programs
from layoutkit.infer.program import Program

FP16 = [  # M, N, K, bM, bN, bK, transpose_B
    (64, 64, 64, 32, 32, 32, False),
    (128, 128, 64, 64, 64, 32, False),
    (256, 256, 64, 128, 128, 32, False),
    (100, 72, 40, 32, 32, 32, False),
    (150, 130, 72, 64, 64, 32, False),
    (96, 80, 48, 32, 32, 32, True),
    (128, 128, 64, 128, 128, 64, True),
]
INT8 = [(64, 64, 128, 32, 32, 64, True), (100, 72, 96, 64, 64, 32, True), (128, 128, 64, 128, 128, 64, True)]


def _solve(M, N, K, bM, bN, bK, tb, dtype="float16", num_stages=2):
    accum = "int32" if dtype == "int8" else "float32"
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, dtype=dtype, accum_dtype=accum, transpose_B=tb,
                      num_stages=num_stages)
    return p, infer_layouts(p)


def _operands(M, N, K, tb, dtype, seed=0):
    rng = np.random.default_rng(seed)
    bshape = (N, K) if tb else (K, N)
    if dtype == "int8":
        return rng.integers(-128, 128, (M, K)).astype(np.int8), rng.integers(-128, 128, bshape).astype(np.int8)
    return rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal(bshape).astype(np.float16)


def _with_c(kernel: ir.Kernel, dtype: str) -> ir.Kernel:
    """The kernel with its output ``C`` widened to ``dtype`` (to see the accumulator before the cast), with the
    buffers of a staged epilogue store, which carry the output's dtype."""
    widen = ("C", *STAGED_BUFFERS)
    bufs = tuple(dataclasses.replace(b, dtype=dtype) if b.name in widen else b for b in kernel.buffers)
    return dataclasses.replace(kernel, buffers=bufs)


@pytest.mark.parametrize("case", FP16, ids=lambda c: "x".join(map(str, c[:6])) + ("_tb" if c[6] else ""))
def test_fp16_gemm_equals_numpy(case):
    M, N, K, bM, bN, bK, tb = case
    p, r = _solve(*case)
    a, b = _operands(M, N, K, tb, "float16")
    ref = a.astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    out = execute(p, r, {"A": a, "B": b})["C"]
    assert out.shape == (M, N) and out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2.0**-10, atol=2.0**-14)  # fp16 output rounding
    # the fp32 accumulator itself, before the fp16 cast: fp32 rounding only
    acc = run(_with_c(lower(p, r), "float32"), {"A": a, "B": b, "C": np.zeros((M, N), np.float32)})["C"]
    np.testing.assert_allclose(acc.reshape(M, N), ref, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def _ldmatrix_counts(body):
    for st in body:
        if isinstance(st, ir.For):
            yield from _ldmatrix_counts(st.body)
        elif isinstance(st, ir.Ldmatrix):
            yield st.num


@pytest.mark.parametrize("dtype,tb", [("float16", False), ("float16", True), ("int8", True)])
def test_x2_ldmatrix_for_n8_warp_tiles(dtype, tb):
    """``fullcol`` gives each warp an 8-wide N tile: B is read with ldmatrix.x2; small integers make it exact."""
    M, N, K, bK = 64, 40, 64, 32 if dtype == "float16" else 64
    p = programs.gemm(M=M, N=N, K=K, bM=64, bN=32, bK=bK, policy="fullcol", transpose_B=tb, dtype=dtype,
                      accum_dtype="int32" if dtype == "int8" else "float32")
    r = infer_layouts(p)
    assert 2 in set(_ldmatrix_counts(lower(p, r).body))
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 3, (M, K)).astype(dtype)
    b = rng.integers(-3, 3, (N, K) if tb else (K, N)).astype(dtype)
    out = execute(p, r, {"A": a, "B": b})["C"]
    ref = a.astype(np.int64) @ (b.T if tb else b).astype(np.int64)
    np.testing.assert_array_equal(out, ref.astype(dtype))  # an int8 C wraps as the kernel's cast does


@pytest.mark.parametrize("stages", [1, 3, 4])
def test_pipeline_stages(stages):
    M, N, K = 100, 72, 160
    p, r = _solve(M, N, K, 64, 64, 32, False, num_stages=stages)
    a, b = _operands(M, N, K, False, "float16")
    acc = run(_with_c(lower(p, r), "float32"), {"A": a, "B": b, "C": np.zeros((M, N), np.float32)})["C"]
    np.testing.assert_allclose(acc.reshape(M, N), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


def _rewrite(body, fn):
    out = []
    for st in body:
        st = dataclasses.replace(st, body=_rewrite(st.body, fn)) if isinstance(st, ir.For) else fn(st)
        out.append(st)
    return tuple(out)


def test_executor_catches_a_pipeline_that_does_not_wait():
    """cp.async lands at its wait_group: waiting for one group too few reads a stale stage."""
    M, N, K = 64, 64, 128
    p, r = _solve(M, N, K, 32, 32, 32, False, num_stages=3)
    k = lower(p, r)
    broken = dataclasses.replace(k, body=_rewrite(k.body, lambda st: ir.WaitGroup(2) if st == ir.WaitGroup(1) else st))
    a, b = _operands(M, N, K, False, "float16")
    good = run(k, {"A": a, "B": b, "C": np.zeros((M, N), np.float16)})["C"]
    bad = run(broken, {"A": a, "B": b, "C": np.zeros((M, N), np.float16)})["C"]
    assert np.allclose(good.reshape(M, N), a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2)
    assert not np.allclose(bad.reshape(M, N), a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2)


def _drop_barrier(body, which: int):
    """``body`` without its ``which``-th ``Barrier`` (in program order, loops counted once)."""
    seen = [0]

    def keep(st):
        if isinstance(st, ir.Barrier):
            seen[0] += 1
            return seen[0] - 1 != which
        return True

    def walk(b):
        out = []
        for st in b:
            if isinstance(st, ir.For):
                out.append(dataclasses.replace(st, body=walk(st.body)))
            elif keep(st):
                out.append(st)
        return tuple(out)

    return walk(body)


@pytest.mark.parametrize("make", ["gemm", "rowmax"])
def test_executor_models_barriers(make):
    """A shared read of another thread's write with no barrier in between is a race, as on the GPU: removing
    any one barrier of the pipelined GEMM, or of the cross-warp reduction, raises RaceError."""
    if make == "gemm":
        p, r = _solve(100, 72, 160, 64, 64, 32, False, num_stages=3)
        arrays = dict(zip("AB", _operands(100, 72, 160, False, "float16")))
    else:
        p = programs.gemm_rowmax_bias(M=100, N=64, K=64, bM=64, bN=64, bK=32)
        r = infer_layouts(p)
        a, b = _operands(100, 64, 64, False, "float16")
        arrays = {"A": a, "B": b, "Bias": np.zeros(64, np.float32)}
    k = lower(p, r)
    full = {b.name: np.zeros(b.size, np_dtype(b.dtype)) for b in k.scoped("global")}
    full.update({n: v.reshape(-1) for n, v in arrays.items()})
    run(k, full)  # the kernel as lowered has every barrier it needs
    count = sum(1 for _ in _barriers(k.body))
    # one per steady step and drained tile, + the staged epilogue store's (gemm) or the reduction's (rowmax)
    assert count == {"gemm": 6, "rowmax": 3}[make]
    for i in range(count):
        with pytest.raises(RaceError, match="wrote it with no barrier between"):
            run(dataclasses.replace(k, body=_drop_barrier(k.body, i)), full)


def _barriers(body):
    for st in body:
        if isinstance(st, ir.For):
            yield from _barriers(st.body)
        elif isinstance(st, ir.Barrier):
            yield st


@pytest.mark.parametrize("case", INT8, ids=lambda c: "x".join(map(str, c[:6])))
def test_int8_gemm_is_exact(case):
    M, N, K, bM, bN, bK, tb = case
    p, r = _solve(*case, dtype="int8")
    a, b = _operands(M, N, K, tb, "int8")
    ref = a.astype(np.int64) @ b.T.astype(np.int64)
    out = execute(p, r, {"A": a, "B": b})["C"]
    np.testing.assert_array_equal(out, ref.astype(np.int8))  # the C cast wraps like the kernel's
    acc = run(_with_c(lower(p, r), "int32"), {"A": a, "B": b, "C": np.zeros((M, N), np.int32)})["C"]
    np.testing.assert_array_equal(acc.reshape(M, N), ref)


def test_shared_addresses_come_from_the_swizzled_layout():
    p, r = _solve(128, 128, 64, 128, 128, 32, False)
    src = emit_cuda(p, r)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in src and ".x4.trans" in src
    assert "cp.async.cg.shared.global" in src and " ^ " in src  # the xor swizzle
    assert "reinterpret_cast<uint4*>(&C[" in src  # the epilogue's 16-byte stores, staged through shared memory


@pytest.mark.parametrize("shape", [(128, 128, 64), (100, 72, 64), (64, 66, 32)], ids=str)
def test_elementwise_moves_every_element(shape):
    M, N, b = shape
    p = programs.elementwise(M=M, N=N, bM=b, bN=b)
    a = np.random.default_rng(1).standard_normal((M, N)).astype(np.float16)
    out = execute(p, infer_layouts(p), {"A": a})
    np.testing.assert_array_equal(out["B"], a)


def _relu_program(M, N, b):
    p = Program(threads=128)
    A, B = p.tensor("A", (M, N), "float16"), p.tensor("B", (M, N), "float16")
    A_f, B_f = p.alloc_fragment("A_frag", (b, b), "float16"), p.alloc_fragment("B_frag", (b, b), "float16")
    p.copy(A[0, 0], A_f)
    p.parallel((b, b), writes=[(B_f, lambda i, j: (i, j))], reads=[(A_f, lambda i, j: (i, j))], compute="relu")
    p.copy(B_f, B[0, 0])
    return p


def test_elementwise_relu():
    p = _relu_program(100, 72, 64)
    a = np.random.default_rng(2).standard_normal((100, 72)).astype(np.float16)
    np.testing.assert_array_equal(execute(p, infer_layouts(p), {"A": a})["B"], np.maximum(a, 0))


@pytest.mark.parametrize("cfg", [(256, 32, 64, 32, "sm_80"), (256, 128, 128, 32, "sm_80"), (64, 128, 64, 32, "sm_90"),
                                 (128, 64, 128, 64, "sm_90")], ids=str)
def test_thread_counts_and_targets(cfg):
    threads, bM, bN, bK, target = cfg
    M, N, K = 2 * bM - 7, 2 * bN - 3, 3 * bK - 8
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, threads=threads, target=target)
    a, b = _operands(M, N, K, False, "float16")
    out = execute(p, infer_layouts(p), {"A": a, "B": b})["C"]
    np.testing.assert_allclose(out.astype(np.float64), a.astype(np.float64) @ b, rtol=2.0**-10, atol=2.0**-14)


def test_unsupported_programs_raise():
    p = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32, target="sm_75", dtype="bfloat16")
    with pytest.raises(UnsupportedError, match="sm_80"):  # sm_75 lowers float16 only
        lower(p, infer_layouts(p))
    p = programs.gemm_rowmax_bias(M=64, N=64, K=64, bM=32, bN=32, bK=32)
    p.ops[6].args["kind"] = "prod"  # a reduce kind without a lowering
    with pytest.raises(UnsupportedError, match="reduce#6 reduces with 'prod'"):
        emit_cuda(p, infer_layouts(p))


def test_emit_writes_cu(tmp_path):
    p, r = _solve(64, 64, 64, 32, 32, 32, False)
    paths = emit(p, r, tmp_path / "out")
    assert len(paths) == 1 and paths[0].suffix == ".cu"
    assert "__global__" in paths[0].read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH: CUDA compile check skipped")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_emitted_cuda_compiles(tmp_path, arch):
    cases = [(c, "float16") for c in FP16[1:4] + FP16[5:]] + [(c, "int8") for c in INT8[:1]]
    progs = [programs.elementwise(M=M, N=N, bM=b, bN=b) for M, N, b in [(100, 72, 64), (64, 66, 32)]]
    progs.append(_relu_program(100, 72, 64))
    progs.append(programs.gemm(M=64, N=40, K=64, bM=64, bN=32, bK=32, policy="fullcol"))  # ldmatrix.x2.trans
    solved = [_solve(*c, dtype=dt) for c, dt in cases] + [_solve(100, 72, 160, 64, 64, 32, False, num_stages=s)
                                                          for s in (1, 3)]
    src = print_module([lower(*pr) for pr in solved] + [lower(p, infer_layouts(p)) for p in progs])
    cu = tmp_path / "gemm.cu"
    cu.write_text(src)
    res = subprocess.run([shutil.which("nvcc"), f"-arch={arch}", "-c", str(cu), "-o", str(tmp_path / "gemm.o")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-4000:]
