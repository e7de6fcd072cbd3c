"""Ascend C code generation: lowering parameters (hand-checked), the printed source against the CPU model
of the Ascend C API (g++ syntax check), and the statement executor against numpy and the op-level executor."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutkit import codegen
from layoutkit.backends.ascend import ir
from layoutkit.backends.ascend.ascend_c import print_kernel
from layoutkit.backends.ascend.execute import PipeRaceError, run
from layoutkit.backends.ascend.lower import load_plan, lower, staged_image
from layoutkit.backends.ascend.passes import run_ascend_passes
from layoutkit.backends.ascend.reference import UninitialisedReadError, bf16_bits, bf16_value, run_ascend
from layoutkit.cli import main
from layoutkit.errors import UnsupportedError
from layoutkit.infer import Program, infer_layouts, programs
from layoutkit.targets import ascend
from layoutkit.testing import ascend_cpu

ROOT = Path(__file__).resolve().parents[1]
# the CPU model of the Ascend C API (layoutkit.testing.ascend_cpu) declares every call the printer emits
MODEL = Path(ascend_cpu.__file__).resolve().parent


def gemm(M, N, K, bm, bn, bk, dtype="float16", tA=False, tB=False, relu=False) -> Program:
    return programs.ascend_gemm(M, N, K, bm, bn, bk, dtype, transpose_A=tA, transpose_B=tB, relu=relu)


def inputs(M, N, K, dtype="float16", tA=False, tB=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (K, M) if tA else (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (N, K) if tB else (K, N)).astype(np.float32)
    if dtype == "float16":
        a, b = a.astype(np.float16), b.astype(np.float16)
        va, vb = a.astype(np.float32), b.astype(np.float32)
    else:
        va, vb = bf16_value(bf16_bits(a)), bf16_value(bf16_bits(b))
    return a, b, (va.T if tA else va) @ (vb.T if tB else vb)


def by_label(kernel: ir.Kernel, label: str, kind: type) -> list:
    return [s for s in kernel.body if isinstance(s, kind) and s.label == label]


@pytest.fixture(scope="module")
def tail_kernel():
    """100 x 72 x 40 in 64 x 64 x 32 tiles: tails in M (36), N (8) and K (8); unrolled (``roll=False``), one
    statement list with every tile's own parameters."""
    p = gemm(100, 72, 40, 64, 64, 32)
    return p, lower(p, infer_layouts(p), roll=False)


# ---- parameters, hand-checked -------------------------------------------------------------------

def test_nd2nz_params_of_tail_tiles(tail_kernel):
    p, k = tail_kernel
    ops = {op.name: op for op in p.ops}
    # tile (m=64, n=0): k=0 copies A[64:128, 0:32] (36 valid rows) and k=32 copies A[64:128, 32:64] (36 x 8)
    names = [n for n, op in ops.items() if op.kind == "copy" and op.args["src"] == "A"]
    a_m64_k0, a_m64_k32 = names[4], names[5]
    (c,) = by_label(k, a_m64_k0, ir.CopyGmToL1)
    assert c.params == ascend.Nd2NzParams(nd_num=1, n_value=36, d_value=32, src_nd_matrix_stride=0, src_d_value=40,
                                          dst_nz_c0_stride=64, dst_nz_n_stride=1, dst_nz_matrix_stride=0)
    assert (c.src, c.src_offset, c.dst, c.dst_offset) == ("A", 64 * 40, "A_l1", 0)
    (c,) = by_label(k, a_m64_k32, ir.CopyGmToL1)
    assert (c.params.n_value, c.params.d_value, c.src_offset) == (36, 8, 64 * 40 + 32)
    # a clamped copy first zeroes the tile: 2 column blocks of C0 = 16, 64 rows (one 32-byte block each)
    (z,) = by_label(k, a_m64_k32, ir.InitConstValue)
    assert z.params == ir.InitConstValueParams(repeat_times=2, block_num=64, dst_gap=0, init_value=0.0)
    # B[32:64, 64:128] (8 x 8 valid) into the 32 x 64 B tile, staged MajorK: column blocks 32 rows apart
    b_names = [n for n, op in ops.items() if op.kind == "copy" and op.args["src"] == "B"]
    (c,) = by_label(k, b_names[3], ir.CopyGmToL1)
    assert (c.params.n_value, c.params.d_value, c.params.src_d_value, c.params.dst_nz_c0_stride) == (8, 8, 72, 32)
    assert c.src_offset == 32 * 72 + 64
    # untouched tiles carry no InitConstValue
    assert by_label(k, names[0], ir.InitConstValue) == []


def test_fixpipe_and_mmad_params(tail_kernel):
    p, k = tail_kernel
    fix = [s for s in k.body if isinstance(s, ir.Fixpipe)]
    assert [(f.params.m_size, f.params.n_size, f.dst_offset) for f in fix] == [
        (64, 64, 0), (64, 8, 64), (36, 64, 64 * 72), (36, 8, 64 * 72 + 64)]
    assert {(f.params.src_stride, f.params.dst_stride, f.params.quant_pre) for f in fix} == {(64, 72, "NoQuant")}
    mm = [s.params for s in k.body if isinstance(s, ir.Mmad)]
    assert mm[:2] == [ir.MmadParams(64, 64, 32, True), ir.MmadParams(64, 64, 32, False)]
    assert len(mm) == 8


def test_load_plan_transposes_b_fractals(tail_kernel):
    _, k = tail_kernel
    # B (32 x 64, K x N) is MajorMN in L0B: fractal (kb, nb) is the transposed staged fractal nb * 2 + kb
    loads = [s for s in k.body if isinstance(s, ir.LoadData) and s.dst == "B_l0"][:2]
    assert [(s.dst_offset, s.params) for s in loads] == [
        (0, ir.LoadData2DParams(start_index=0, repeat_times=4, src_stride=2, dst_gap=0, if_transpose=True)),
        (4 * 256, ir.LoadData2DParams(start_index=1, repeat_times=4, src_stride=2, dst_gap=0, if_transpose=True))]
    # A (64 x 32) goes zZ into L0A, as Mmad reads it: each 16-row band's two K fractals (L1 fractals mb, mb + 4)
    a_loads = [(s.dst_offset, s.params) for s in k.body if isinstance(s, ir.LoadData) and s.dst == "A_l0"][:4]
    assert a_loads == [(2 * mb * 256, ir.LoadData2DParams(mb, 2, 4, 0, False)) for mb in range(4)]
    assert k.buffer("B_l1").image.kind.name == "MAJOR_K" and k.buffer("B_l0").image.kind.name == "MAJOR_MN"
    assert [b.position for b in k.buffers] == ["A1", "B1", "A2", "B2", "CO1"]


def test_load_plan_splits_runs_at_255():
    info = ascend.fractal_info(ascend.make_ascend_nz_layout((512, 512), "float16"))   # 1024 fractals
    plan = load_plan(info, info, "x")
    assert [(t, q.start_index, q.repeat_times) for t, q in plan] == [
        (0, 0, 255), (255, 255, 255), (510, 510, 255), (765, 765, 255), (1020, 1020, 4)]


def test_staged_image_refuses_transpose_of_32_bit_fractals():
    mn = ascend.make_ascend_major_mn_layout((32, 32), "float32")
    with pytest.raises(UnsupportedError, match="16 x 16 fractals"):
        load_plan(staged_image(mn, "float32"), ascend.fractal_info(mn), "copy#9")


def test_sync_pairs_follow_the_pipes(tail_kernel):
    _, k = tail_kernel
    events = [s.event for s in k.body if isinstance(s, ir.WaitFlag)]
    assert set(events) == {"MTE2_MTE1", "MTE1_M", "M_MTE1", "MTE1_MTE2", "M_FIX", "FIX_M"}
    sets = [i for i, s in enumerate(k.body) if isinstance(s, ir.SetFlag)]
    assert all(isinstance(k.body[i + 1], ir.WaitFlag) and k.body[i + 1].event == k.body[i].event for i in sets)
    # the first Mmad waits for the L0 loads; the first Fixpipe for the Mmads
    first_mmad = next(i for i, s in enumerate(k.body) if isinstance(s, ir.Mmad))
    assert k.body[first_mmad - 1] == ir.WaitFlag("MTE1", "M")
    first_fix = next(i for i, s in enumerate(k.body) if isinstance(s, ir.Fixpipe))
    assert k.body[first_fix - 1] == ir.WaitFlag("M", "FIX")


# ---- execution ----------------------------------------------------------------------------------

CASES = [
    (64, 64, 64, 64, 64, 64, "float16", False, False),
    (100, 72, 40, 64, 64, 32, "float16", False, False),
    (250, 250, 250, 128, 128, 128, "float16", False, False),
    (50, 50, 50, 24, 24, 24, "float16", False, False),          # tiles padded to whole fractals
    (70, 40, 90, 32, 32, 32, "bfloat16", False, False),
    (70, 40, 90, 32, 32, 32, "float16", True, False),           # A MajorMN: transposing load into L0A
    (70, 40, 90, 32, 32, 32, "float16", False, True),           # B MajorK: plain load
    (70, 40, 90, 32, 32, 32, "float16", True, True),
]


@pytest.mark.parametrize("M,N,K,bm,bn,bk,dtype,tA,tB", CASES)
def test_executor_equals_numpy_and_run_ascend(M, N, K, bm, bn, bk, dtype, tA, tB):
    p = gemm(M, N, K, bm, bn, bk, dtype, tA, tB)
    r = infer_layouts(p)
    a, b, want = inputs(M, N, K, dtype, tA, tB)
    got = run(lower(p, r), {"A": a, "B": b})["C"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * K)
    q, _ = run_ascend_passes(p, r)
    # bitwise, on any machine: both executors accumulate through layoutkit.numerics.mad (a fixed k order, no
    # BLAS) in the same K steps, so the same bits by construction; numpy's matmul above only agrees to rounding
    assert np.array_equal(got, run_ascend(q, {"A": a, "B": b})["C"])


def test_lowering_a_processed_program_is_the_same():
    p = gemm(100, 72, 40, 64, 64, 32)
    r = infer_layouts(p)
    q, _ = run_ascend_passes(p, r)
    assert lower(q) == lower(p, r)


def test_fixpipe_equals_the_movement_model():
    L = ascend.make_ascend_l0c_layout((48, 32))
    info = ascend.fractal_info(L)
    acc = np.random.default_rng(3).normal(size=(48, 32)).astype(np.float32)
    k = ir.Kernel("k", (ir.GlobalParam("C", "float32", (60, 50)),),
                  (ir.LocalBuffer("c", "float32", "CO1", 48 * 32, info),),
                  (ir.Fixpipe("C", 20 * 50 + 30, "c", 0, ir.FixpipeParamsV220(20, 40, 48, 50)),))
    m_image = ascend.to_storage(acc, info)
    from layoutkit.backends.ascend import execute as execute_ascend
    machine = execute_ascend._Machine(k, {})
    machine.mem["c"] = np.ascontiguousarray(m_image).reshape(-1)
    machine.op_Fixpipe(k.body[0], 0)
    want = ascend.fixpipe_l0c_to_gm(m_image, L, np.zeros((60, 50), np.float32), gm_coord=(20, 30), valid=(40, 20))
    assert np.array_equal(machine.mem["C"].reshape(60, 50), want)


def test_dropped_wait_is_a_pipe_race(tail_kernel):
    _, k = tail_kernel
    i = next(i for i, s in enumerate(k.body) if isinstance(s, ir.WaitFlag) and s.event == "MTE1_M")
    broken = dataclasses.replace(k, body=k.body[:i] + k.body[i + 1:])
    a, b, _ = inputs(100, 72, 40)
    with pytest.raises(PipeRaceError, match="pipe M touches A_l0 after pipe MTE1"):
        run(broken, {"A": a, "B": b})


def test_dropped_zero_init_is_an_uninitialised_read():
    p = gemm(20, 16, 16, 32, 16, 16)        # the first A copy is clamped: rows 20..31 of A_l1 never written
    k = lower(p, infer_layouts(p), roll=False)
    broken = dataclasses.replace(k, body=tuple(s for s in k.body if not isinstance(s, ir.InitConstValue)))
    a, b, want = inputs(20, 16, 16)
    with pytest.raises(UninitialisedReadError) as err:
        run(broken, {"A": a, "B": b})
    assert (err.value.op, err.value.buffer) == ("gemm#4", "A_l0")
    np.testing.assert_allclose(run(k, {"A": a, "B": b})["C"], want, rtol=1e-5, atol=1e-5)


def test_dropped_zero_init_reads_stale_data(tail_kernel):
    _, k = tail_kernel                      # a reused L1 tile keeps the previous tile's data: wrong numbers
    broken = dataclasses.replace(k, body=tuple(s for s in k.body if not isinstance(s, ir.InitConstValue)))
    a, b, want = inputs(100, 72, 40)
    assert not np.allclose(run(broken, {"A": a, "B": b})["C"], want, atol=1e-3)


def test_full_k_steps_roll_into_a_loop(tmp_path):
    p = gemm(128, 64, 1024, 128, 64, 128)             # 8 K steps: the first clears C, 7 accumulate
    k = lower(p, infer_layouts(p))
    (tiles,) = [s for s in k.body if isinstance(s, ir.TileLoop)]     # one 128 x 64 output tile
    (loop,) = [s for s in tiles.body if isinstance(s, ir.For) and s.var == "kt0"]
    assert (loop.var, loop.extent) == ("kt0", 7)
    copies = [s for s in loop.body if isinstance(s, ir.CopyGmToL1)]
    assert [(c.src, c.src_offset) for c in copies] == [("A", ir.Offset(128, 128, "kt0")),
                                                       ("B", ir.Offset(128 * 64, 128 * 64, "kt0"))]
    assert k.count(ir.Mmad) == 2 and [s.params.cmatrix_init_val for s in ir.flatten(k.body)
                                      if isinstance(s, ir.Mmad)] == [True, False]
    a, b, want = inputs(128, 64, 1024)
    np.testing.assert_allclose(run(k, {"A": a, "B": b})["C"], want, rtol=1e-5, atol=1e-2)
    src = print_kernel(k)
    assert "for (uint32_t kt0 = 0; kt0 < 7; ++kt0) {" in src and "A_gm[128 + kt0 * 128]" in src
    _syntax_check(src, tmp_path)


def split_k(M, N, K, bm, bn, bk) -> Program:
    """C += A @ B over two K halves, each stored with the atomic add mode (split-K)."""
    p = Program(target="ascend")
    A, B, C = p.tensor("A", (M, K), "float16"), p.tensor("B", (K, N), "float16"), p.tensor("C", (M, N), "float32")
    a1, b1 = p.alloc("A_l1", (bm, bk), "float16", "l1"), p.alloc("B_l1", (bk, bn), "float16", "l1")
    a0, b0 = p.alloc("A_l0", (bm, bk), "float16", "l0a"), p.alloc("B_l0", (bk, bn), "float16", "l0b")
    c0 = p.alloc("C_l0", (bm, bn), "float32", "l0c")
    for m in range(0, M, bm):
        for n in range(0, N, bn):
            for k in range(0, K, bk):
                p.copy(A[m:m + bm, k:k + bk], a1)
                p.copy(B[k:k + bk, n:n + bn], b1)
                p.copy(a1, a0)
                p.copy(b1, b0)
                p.mad(a0, b0, c0, clear_accum=True)
                p.set_atomic("add", "float32")
                p.copy(c0, C[m:m + bm, n:n + bn])
                p.set_atomic_none()
    return p


def test_atomic_add_accumulates_split_k(tmp_path):
    p = split_k(40, 24, 72, 32, 32, 32)
    r = infer_layouts(p)
    k = lower(p, r, roll=False)
    assert k.count(ir.SetAtomic) == 2 * 3 * 2 and k.count(ir.Fixpipe) == 2 * 3
    a, b, want = inputs(40, 24, 72)
    c = np.random.default_rng(5).normal(size=(40, 24)).astype(np.float32)
    got = run(k, {"A": a, "B": b, "C": c})["C"]
    np.testing.assert_allclose(got, c + want, rtol=1e-5, atol=1e-4)
    rolled = lower(p, r)  # the two full K steps of each M tile roll into a loop: the same stores
    assert rolled.count(ir.Fixpipe) < k.count(ir.Fixpipe)
    # bitwise: one executor, the same MADs in the same K steps (rolling changes the loop, not the arithmetic)
    assert np.array_equal(run(rolled, {"A": a, "B": b, "C": c})["C"], got)
    q, _ = run_ascend_passes(p, r)
    # bitwise on any machine: both executors accumulate through layoutkit.numerics.mad in the same K steps
    assert np.array_equal(got, run_ascend(q, {"A": a, "B": b, "C": c})["C"])
    src = print_kernel(k)
    assert src.count("AscendC::SetAtomicAdd<float>();") == 6 and src.count("AscendC::SetAtomicNone();") == 6
    _syntax_check(src, tmp_path)


# ---- errors -------------------------------------------------------------------------------------

def test_unsupported_program_names_the_op():
    p = gemm(64, 64, 32, 64, 64, 32, relu=True)
    uid = next(iter(p.regions))
    p.regions[uid] = [dataclasses.replace(p.regions[uid][0], args={"compute": "exp"})]
    with pytest.raises(UnsupportedError, match=r"parallel#\d+: the vector epilogue lowers .*'exp'"):
        lower(p, infer_layouts(p))
    p = gemm(32, 32, 32, 32, 32, 32)
    p.set_atomic("add", "float16")
    p.set_atomic_none()
    with pytest.raises(UnsupportedError, match=r"set_atomic#6: .*found 'add' on float16"):
        lower(p, infer_layouts(p))
    nv = Program(target="sm_80")
    with pytest.raises(UnsupportedError, match="target='ascend'"):
        lower(nv)


@pytest.mark.parametrize("shape", [(100, 72, 40, 64, 64, 32), (250, 250, 250, 128, 128, 128)])
def test_relu_epilogue_fuses_into_fixpipe(shape):
    p = gemm(*shape, relu=True)
    r = infer_layouts(p)
    k = lower(p, r, roll=False)
    fix = [s.params for s in k.body if isinstance(s, ir.Fixpipe)]
    assert all(f.relu_en for f in fix) and len(fix) == 4
    assert (fix[-1].m_size, fix[-1].n_size) == (shape[0] - shape[3], shape[1] - shape[4])
    a, b, want = inputs(*shape[:3])
    got = run(k, {"A": a, "B": b})["C"]
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-5, atol=1e-5 * shape[2])
    q, _ = run_ascend_passes(p, r)
    assert np.array_equal(got, run_ascend(q, {"A": a, "B": b})["C"])
    rolled = lower(p, r)  # one Fixpipe for every tile: its extent is the tile's origin shape
    (fixpipe,) = [s for s in ir.flatten(rolled.body) if isinstance(s, ir.Fixpipe)]
    assert fixpipe.params.relu_en and fixpipe.params.m_size == ir.Offset(0, 1, "mActual")
    assert np.array_equal(run(rolled, {"A": a, "B": b})["C"], got)
    assert "p.reluEn = true;" in print_kernel(rolled) and "p.mSize = mActual;" in print_kernel(rolled)


def test_nonzero_pad_value_is_refused():
    p = gemm(20, 16, 16, 32, 16, 16)
    r = infer_layouts(p)
    q, _ = run_ascend_passes(p, r, pad_value=1.0)
    with pytest.raises(UnsupportedError, match=r"fill#\d+: the OOB pad value must be 0"):
        lower(q)


# ---- printing and wiring ------------------------------------------------------------------------

def test_printed_source_uses_the_ascend_c_api(tail_kernel):
    _, k = tail_kernel
    src = print_kernel(k)
    assert src.count("AscendC::DataCopy(") == k.count(ir.CopyGmToL1) == 16
    assert src.count("AscendC::Mmad(") == 8
    assert src.count("AscendC::Fixpipe<float, float, AscendC::CFG_ROW_MAJOR>(") == 4
    assert 'extern "C" __global__ __aicore__ void ascend_gemm(GM_ADDR A, GM_ADDR B, GM_ADDR C)' in src
    assert "p.nValue = 36; p.dValue = 8; p.srcNdMatrixStride = 0; p.srcDValue = 40;" in src
    assert ("p.nSize = 8; p.mSize = 36; p.srcStride = 64; p.dstStride = 72; "
            "p.quantPre = AscendC::QuantMode_t::NoQuant;") in src
    assert "AscendC::LoadData(B_l0[1024], B_l1[0], p);" in src
    assert "AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);" in src
    assert "AscendC::TBuf<AscendC::TPosition::CO1> C_l0_buf;" in src and "pipe.InitBuffer(C_l0_buf, 16384);" in src


def _syntax_check(src: str, tmp_path: Path) -> None:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found: the Ascend C syntax check needs a C++17 compiler")
    path = tmp_path / "kernel.cpp"
    path.write_text(src)
    done = subprocess.run([gxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", f"-I{MODEL}", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("case", [CASES[1], CASES[4], CASES[7]], ids=["fp16-tails", "bf16", "transposed"])
def test_emitted_source_compiles_against_the_cpu_model(case, tmp_path):
    M, N, K, bm, bn, bk, dtype, tA, tB = case
    p = gemm(M, N, K, bm, bn, bk, dtype, tA, tB)
    _syntax_check(codegen.emit_ascend_c(p, infer_layouts(p)), tmp_path)


def test_codegen_dispatches_ascend_programs(tmp_path):
    p = gemm(40, 24, 72, 32, 32, 32)
    r = infer_layouts(p)
    assert isinstance(codegen.lower(p, r), ir.Kernel)
    a, b, want = inputs(40, 24, 72)
    np.testing.assert_allclose(codegen.execute(p, r, {"A": a, "B": b})["C"], want, rtol=1e-5, atol=1e-4)
    (path,) = codegen.emit(p, r, tmp_path)
    assert path.name == "ascend_gemm.cpp" and "AscendC::Mmad(" in path.read_text()


def test_cli_infer_emits_ascend_c(tmp_path, capsys):
    assert main(["infer", str(ROOT / "examples" / "ascend_gemm.py"), "--emit", str(tmp_path)]) == 0
    (cpp,) = tmp_path.glob("*.cpp")
    text = cpp.read_text()
    # 100 x 72 x 40 in 64 x 64 x 32 tiles: one tile body (a full and a tail K step) over GetBlockNum() cores
    assert cpp.name == "ascend_gemm.cpp" and text.count("AscendC::Mmad(") == 2
    assert "AscendC::GetBlockIdx()" in text and "t += AscendC::GetBlockNum()" in text
    _syntax_check(text, tmp_path)


# ---- vector epilogues on the AIV cores (mixed kernels) -------------------------------------------

IJ = "lambda i, j: (i, j)"


def epilogue_gemm(M, N, K, bm, bn, bk, computes, bias=True, c_dtype="float32") -> Program:
    """A tiled GEMM whose L0C tile goes through UB: ``computes`` are the region's ``parallel`` ops in order
    (``"add"`` reads the bias row, broadcast over the rows); a tail bias tile is zero-filled first."""
    p = Program(target="ascend")
    A, B = p.tensor("A", (M, K), "float16"), p.tensor("B", (K, N), "float16")
    C = p.tensor("C", (M, N), c_dtype)
    bias_gm = p.tensor("Bias", (N,), "float32") if bias else None
    a1, b1 = p.alloc("A_l1", (bm, bk), "float16", "l1"), p.alloc("B_l1", (bk, bn), "float16", "l1")
    a0, b0 = p.alloc("A_l0", (bm, bk), "float16", "l0a"), p.alloc("B_l0", (bk, bn), "float16", "l0b")
    c0 = p.alloc("C_l0", (bm, bn), "float32", "l0c")
    c_ub = p.alloc("C_ub", (bm // 2, bn), "float32", "ub")
    bias_ub = p.alloc("Bias_ub", (bn,), "float32", "ub") if bias else None
    for m in range(0, M, bm):
        for n in range(0, N, bn):
            for k in range(0, K, bk):
                p.copy(A[m:m + bm, k:k + bk], a1)
                p.copy(B[k:k + bk, n:n + bn], b1)
                p.copy(a1, a0)
                p.copy(b1, b0)
                p.mad(a0, b0, c0, clear_accum=k == 0)
            if bias:
                if n + bn > N:
                    p.fill(bias_ub, 0.0)
                p.copy(bias_gm[n:n + bn], bias_ub)
            p.dual_copy(c0, c_ub)
            with p.simd_vf():
                for fn in computes:
                    row = [(bias_ub, "lambda i, j: (j,)")] if fn == "add" else []
                    p.parallel((bm // 2, bn), writes=[(c_ub, IJ)], reads=[(c_ub, IJ)] + row, compute=fn)
            p.dual_copy(c_ub, C[m:m + bm, n:n + bn])
    return p


def _epilogue_case(M, N, K, bm, bn, bk, computes, bias=True, c_dtype="float32"):
    p = epilogue_gemm(M, N, K, bm, bn, bk, computes, bias, c_dtype)
    r = infer_layouts(p)
    a, b, prod = inputs(M, N, K)
    arrays = {"A": a, "B": b}
    if bias:
        arrays["Bias"] = np.random.default_rng(7).uniform(-1, 1, N).astype(np.float32)
    return p, r, arrays, prod


@pytest.mark.parametrize("shape", [(100, 72, 40, 64, 64, 32), (130, 96, 50, 64, 32, 32), (64, 64, 64, 64, 64, 64)])
def test_bias_relu_epilogue_runs_on_the_vector_cores(shape, tmp_path):
    p, r, arrays, prod = _epilogue_case(*shape, ["add", "relu"])
    k = lower(p, r)
    # one tile-sized workspace slice per AI core
    assert k.vector and k.param("workspace").shape == (k.block_dim * shape[3], shape[4])
    assert [b.name for b in k.buffers if b.is_ub] == ["Bias_ub", "C_ub"]
    got = run(k, arrays)["C"]
    np.testing.assert_allclose(got, np.maximum(prod + arrays["Bias"], 0), rtol=1e-5, atol=1e-5 * shape[2])
    q, _ = run_ascend_passes(p, r)
    assert np.array_equal(got, run_ascend(q, arrays)["C"])
    src = print_kernel(k)
    assert "if ASCEND_IS_AIC {" in src and "if ASCEND_IS_AIV {" in src
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);" in src
    assert "AscendC::CrossCoreSetFlag<0x2, PIPE_FIX>(0);" in src and "AscendC::CrossCoreWaitFlag(0);" in src
    assert f"AscendC::Add(C_ub[r * {shape[4]}], C_ub[r * {shape[4]}], Bias_ub[0], {shape[4]});" in src
    assert f"AscendC::Relu(C_ub[0], C_ub[0], {shape[3] // 2 * shape[4]});" in src
    _syntax_check(src, tmp_path)


def test_epilogue_tail_parameters():
    """100 x 72 in 64 x 64 tiles: the last tile has 36 rows (32 on core 0, 4 on core 1) and 8 columns."""
    p, r, _, _ = _epilogue_case(100, 72, 40, 64, 64, 32, ["add", "relu"])
    k = lower(p, r, roll=False)
    stores = [s for s in k.vector if isinstance(s, ir.CopyUbToGm)]
    assert [(s.dst_offset, s.params) for s in stores] == [
        (ir.Offset(0, 32 * 72, "sub"), ir.DataCopyExtParams(32, 256, 0, 8 * 4)),
        (ir.Offset(64, 32 * 72, "sub"), ir.DataCopyExtParams(32, 32, 7, 64 * 4)),
        (ir.Offset(64 * 72, 32 * 72, "sub"), ir.DataCopyExtParams(ir.PerCore((32, 4)), 256, 0, 8 * 4)),
        (ir.Offset(64 * 72 + 64, 32 * 72, "sub"), ir.DataCopyExtParams(ir.PerCore((32, 4)), 32, 7, 64 * 4))]
    loads = [s for s in k.vector if isinstance(s, ir.CopyGmToUb)]
    assert loads[0] == ir.CopyGmToUb("Bias_ub", 0, "Bias", 0, ir.DataCopyExtParams(1, 256, 0, 0), loads[0].label)
    assert (loads[1].src, loads[1].src_offset, loads[1].params) == (
        "workspace", ir.Offset(0, 32 * 64, "sub", (("core", 64 * 64),)), ir.DataCopyExtParams(1, 32 * 64 * 4, 0, 0))
    # the tail bias tile is zeroed (Duplicate) before its 8-element DataCopyPad
    dup = [s for s in k.vector if isinstance(s, ir.VecOp) and s.op == "Duplicate"]
    assert [(d.dst, d.count, d.scalar) for d in dup] == [("Bias_ub", 64, 0.0)] * 2
    # the cube waits for the vector cores before every tile's workspace store (they hand it over once before
    # their first tile) and takes their last hand-back at the end
    assert k.count(ir.CrossCoreWaitFlag) == 4 + 5 and k.count(ir.CrossCoreSetFlag) == 4 + 5
    assert k.vector[0] == ir.CrossCoreSetFlag(1, "MTE2") and k.body[-2] == ir.CrossCoreWaitFlag(1)
    src = print_kernel(k)
    assert "p.blockCount = (sub == 0 ? 32 : 4);" in src and "if (p.blockCount > 0)" not in src
    # 80 rows: the second M tile has 16 rows, all on core 0; core 1 stores nothing
    p, r, arrays, prod = _epilogue_case(80, 64, 32, 64, 64, 32, ["add", "relu"])
    assert [s.params.block_count for s in lower(p, r, roll=False).vector if isinstance(s, ir.CopyUbToGm)] == [
        32, ir.PerCore((16, 0))]
    k = lower(p, r)  # one store for both tiles: each vector core's rows of the tile (the origin-shape rule)
    assert [s.params.block_count for s in ir.flatten(k.vector) if isinstance(s, ir.CopyUbToGm)] == [
        ir.Offset(0, 1, "subM")]
    text = print_kernel(k)
    assert "if (p.blockCount > 0) AscendC::DataCopyPad(C_gm[" in text and "p.blockCount = subM;" in text
    assert "uint32_t subM = mActual > sub * 32 ? (mActual - sub * 32 < 32 ? mActual - sub * 32 : 32) : 0;" in text
    np.testing.assert_allclose(run(k, arrays)["C"], np.maximum(prod + arrays["Bias"], 0), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("c_dtype", ["float16", "bfloat16"])
def test_epilogue_casts_to_a_16_bit_output(c_dtype, tmp_path):
    p, r, arrays, prod = _epilogue_case(100, 72, 40, 64, 64, 32, ["add", "relu"], c_dtype=c_dtype)
    k = lower(p, r)
    assert k.buffer("C_ub_" + c_dtype).dtype == c_dtype and k.buffer("C_ub_" + c_dtype).size == 32 * 64
    got = np.asarray(run(k, arrays)["C"], np.float32)
    exact = np.maximum(prod + arrays["Bias"], 0)
    want = exact.astype(np.float16).astype(np.float32) if c_dtype == "float16" else bf16_value(bf16_bits(exact))
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)
    q, _ = run_ascend_passes(p, r)
    assert np.array_equal(got, np.asarray(run_ascend(q, arrays)["C"], np.float32))
    src = print_kernel(k)
    t = {"float16": "half", "bfloat16": "bfloat16_t"}[c_dtype]
    assert f"AscendC::Cast(C_ub_{c_dtype}[0], C_ub[0], AscendC::RoundMode::CAST_RINT, 2048);" in src
    assert f"AscendC::LocalTensor<{t}> C_ub_{c_dtype} = C_ub_{c_dtype}_buf.Get<{t}>();" in src
    stores = [s.params for s in lower(p, r, roll=False).vector if isinstance(s, ir.CopyUbToGm)]
    # 8 halves (16 bytes, one block of the 4-block UB row: gap 3), 64 halves short of the 72-wide GM row
    assert stores[-1] == ir.DataCopyExtParams(ir.PerCore((32, 4)), 16, 3, 64 * 2)
    _syntax_check(src, tmp_path)


@pytest.mark.parametrize("computes", [["muls:0.5"], ["adds:1.5", "maxs:0", "muls:-2"]])
def test_scalar_epilogue_with_tails(computes, tmp_path):
    p, r, arrays, prod = _epilogue_case(70, 96, 40, 32, 32, 32, computes, bias=False)
    want = prod
    for fn in computes:
        kind, value = fn.split(":")
        want = {"muls": np.multiply, "adds": np.add, "maxs": np.maximum}[kind](want, np.float32(value))
    k = lower(p, r)
    got = run(k, arrays)["C"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    q, _ = run_ascend_passes(p, r)
    assert np.array_equal(got, run_ascend(q, arrays)["C"])
    src = print_kernel(k)
    assert "AscendC::Muls(C_ub[0], C_ub[0], (float)-2, 512);" in src if len(computes) > 1 else \
        "AscendC::Muls(C_ub[0], C_ub[0], (float)0.5, 512);" in src
    _syntax_check(src, tmp_path)


def test_missing_cross_core_flags_are_caught():
    p, r, arrays, _ = _epilogue_case(100, 72, 40, 64, 64, 32, ["add", "relu"])
    k = lower(p, r, roll=False)
    # the cube overwrites the workspace before the vector cores have read the previous tile
    i = next(i for i, s in enumerate(k.body) if isinstance(s, ir.CrossCoreWaitFlag))
    with pytest.raises(PipeRaceError, match=r"pipe (FIX|aiv\d\.MTE2) touches workspace after pipe (aiv\d\.MTE2|FIX) "):
        run(dataclasses.replace(k, body=k.body[:i] + k.body[i + 1:]), arrays)
    # a vector core that never hears "tile ready" waits forever
    i = next(i for i, s in enumerate(k.body) if isinstance(s, ir.CrossCoreSetFlag))
    with pytest.raises(PipeRaceError, match="deadlock: cube, aiv0, aiv1 wait on cross-core flags nobody sets"):
        run(dataclasses.replace(k, body=k.body[:i] + k.body[i + 1:]), arrays)
    # inside a vector core: the store to GM before the vector ops finish
    i = next(i for i, s in enumerate(k.vector) if isinstance(s, ir.WaitFlag) and s.event == "V_MTE3")
    with pytest.raises(PipeRaceError, match=r"pipe aiv0\.MTE3 touches C_ub@aiv0 after pipe aiv0\.MTE2"):
        run(dataclasses.replace(k, vector=k.vector[:i] + k.vector[i + 1:]), arrays)


def test_epilogue_refusals_name_the_op():
    p = epilogue_gemm(64, 64, 32, 64, 64, 32, ["exp"], bias=False)
    with pytest.raises(UnsupportedError, match=r"parallel#\d+: the vector epilogue lowers .*'exp'"):
        lower(p, infer_layouts(p))
    p = epilogue_gemm(64, 64, 32, 64, 64, 32, ["muls:x"], bias=False)
    with pytest.raises(UnsupportedError, match=r"parallel#\d+: .*'muls:x'"):
        lower(p, infer_layouts(p))


# ---- tile loops ---------------------------------------------------------------------------------

def test_tile_loops_keep_a_1024_gemm_small(tmp_path):
    p = gemm(1024, 1024, 1024, 128, 128, 128)
    r = infer_layouts(p)
    k = lower(p, r)
    unrolled = lower(p, r, roll=False)
    assert unrolled.count(ir.Fixpipe) == 64 and unrolled.size > 2500
    # one tile body for the 64 tiles, over 20 AI cores; inside it the 7 accumulating K steps are a loop
    assert k.size < 60 and k.count(ir.Fixpipe) == 1 and k.block_dim == 20
    (tiles,) = [s for s in k.body if isinstance(s, ir.TileLoop)]
    assert (tiles.m_tiles, tiles.n_tiles) == (8, 8)
    loops = {(s.var, s.extent) for s in ir.flatten(k.body) if isinstance(s, ir.For)}
    assert {("kt0", 7), ("fr", 8)} <= loops
    a, b, want = inputs(1024, 1024, 1024)
    np.testing.assert_allclose(run(k, {"A": a, "B": b})["C"], want, rtol=1e-5, atol=1e-2)
    src = print_kernel(k)
    assert src.count("\n") < 200 and "for (uint32_t t = core; t < 64; t += AscendC::GetBlockNum()) {" in src
    _syntax_check(src, tmp_path)


@pytest.mark.parametrize("shape,computes", [((300, 200, 100, 64, 64, 32), None),
                                            ((300, 200, 100, 64, 64, 32), ["add", "relu"])])
def test_rolled_tiles_compute_what_unrolled_tiles_do(shape, computes, tmp_path):
    if computes is None:
        p, arrays = gemm(*shape), None
        r = infer_layouts(p)
        a, b, _ = inputs(*shape[:3])
        arrays = {"A": a, "B": b}
    else:
        p, r, arrays, _ = _epilogue_case(*shape, computes)
    k, unrolled = lower(p, r), lower(p, r, roll=False)
    assert k.size < unrolled.size / 10 and isinstance(k.body[0], ir.TileLoop)
    assert np.array_equal(run(k, arrays)["C"], run(unrolled, arrays)["C"])
    _syntax_check(print_kernel(k), tmp_path)


# ---- double buffering -----------------------------------------------------------------------------

def _steps_between(body, kind_a, kind_b):
    """For each statement of ``kind_b``: the flags since the previous statement of ``kind_a``."""
    out, since = [], None
    for s in body:
        if isinstance(s, kind_a):
            since = []
        elif isinstance(s, kind_b) and since is not None:
            out.append(since)
            since = None
        elif since is not None and isinstance(s, ir.WaitFlag):
            since.append(s)
    return out


def test_double_buffering_lets_loads_overlap_the_cube(tmp_path):
    p = gemm(128, 64, 1024, 128, 64, 128)                    # 8 K steps
    r = infer_layouts(p)
    k = lower(p, r, double_buffer=True, roll=False)
    assert [b.name for b in k.buffers] == ["A_l1_0", "A_l1_1", "B_l1_0", "B_l1_1", "A_l0_0", "A_l0_1", "B_l0_0",
                                           "B_l0_1", "C_l0"]
    mmads = [s for s in k.body if isinstance(s, ir.Mmad)]
    assert [s.a for s in mmads] == ["A_l0_0", "A_l0_1"] * 4
    # after the cube starts step k, the loads of step k + 1 wait for MTE1 / MTE2 only, never for the cube
    # (single-buffered, each L0 load waits for the previous Mmad: M_MTE1)
    waits = _steps_between(k.body, ir.Mmad, ir.CopyGmToL1)
    assert len(waits) == 7 and all(w.src != "M" for ws in waits for w in ws)
    assert [(w.event, w.event_id) for w in waits[1]] == [("MTE1_MTE2", 0)]
    single = _steps_between(lower(p, r, roll=False).body, ir.Mmad, ir.LoadData)
    assert all(any(w.event == "M_MTE1" for w in ws) for ws in single)
    a, b, want = inputs(128, 64, 1024)
    got = run(k, {"A": a, "B": b})["C"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-2)
    assert np.array_equal(got, run(lower(p, r), {"A": a, "B": b})["C"])
    rolled = lower(p, r, double_buffer=True)                 # pairs of K steps roll
    assert ("kt0", 2) in {(s.var, s.extent) for s in ir.flatten(rolled.body) if isinstance(s, ir.For)}
    assert np.array_equal(run(rolled, {"A": a, "B": b})["C"], got)
    src = print_kernel(rolled)
    assert "AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(EVENT_ID1);" in src
    _syntax_check(src, tmp_path)


@pytest.mark.parametrize("shape", [(300, 200, 100, 64, 64, 32), (70, 40, 90, 32, 32, 32)])
def test_double_buffering_with_tails(shape):
    p = gemm(*shape)
    r = infer_layouts(p)
    a, b, want = inputs(*shape[:3])
    got = run(lower(p, r, double_buffer=True), {"A": a, "B": b})["C"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert np.array_equal(got, run(lower(p, r), {"A": a, "B": b})["C"])


def test_double_buffering_with_the_vector_epilogue():
    p, r, arrays, prod = _epilogue_case(100, 72, 40, 64, 64, 32, ["add", "relu"])
    got = run(lower(p, r, double_buffer=True), arrays)["C"]
    np.testing.assert_allclose(got, np.maximum(prod + arrays["Bias"], 0), rtol=1e-5, atol=1e-4)


def test_double_buffering_races_are_caught():
    p = gemm(128, 64, 512, 128, 64, 128)
    k = lower(p, infer_layouts(p), double_buffer=True, roll=False)
    a, b, _ = inputs(128, 64, 512)
    # the third step's copy into slot 0 must wait for the first step's L0 loads from it
    i = next(i for i, s in enumerate(k.body) if isinstance(s, ir.WaitFlag) and s.event == "MTE1_MTE2")
    with pytest.raises(PipeRaceError, match="pipe MTE2 touches A_l1_0 after pipe MTE1"):
        run(dataclasses.replace(k, body=k.body[:i] + k.body[i + 1:]), {"A": a, "B": b})
    j = next(j for j, s in enumerate(k.body) if isinstance(s, ir.SetFlag) and s.event == "MTE1_MTE2")
    with pytest.raises(PipeRaceError, match=r"WaitFlag<MTE1_MTE2>\(0\) with no SetFlag before it"):
        run(dataclasses.replace(k, body=k.body[:j] + k.body[j + 1:]), {"A": a, "B": b})
    extra = k.body[:j] + (k.body[j],) + k.body[j:]
    with pytest.raises(PipeRaceError, match=r"SetFlag<MTE1_MTE2>\(0\) while an earlier one is still unwaited"):
        run(dataclasses.replace(k, body=extra), {"A": a, "B": b})


# ---- multi-core distribution ------------------------------------------------------------------------------

@settings(max_examples=40)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(0, 1))
def test_block_swizzle_visits_every_tile_once(mt, nt, offset, direction):
    seen = [ir.swizzle_coord(t, mt, nt, offset, direction) for t in range(mt * nt)]
    assert sorted(seen) == [(i, j) for i in range(mt) for j in range(nt)]
    # the first tasks walk down the first column of the first band (direction 0; along its first row for 1)
    first = min(offset, mt if direction == 0 else nt)
    assert seen[:first] == [(i, 0) if direction == 0 else (0, i) for i in range(first)]


def test_tail_fields_follow_the_origin_extents():
    p = gemm(100, 72, 40, 64, 64, 32)
    k = lower(p, infer_layouts(p))
    (tiles,) = [s for s in k.body if isinstance(s, ir.TileLoop)]
    body = ir.flatten(tiles.body)
    copies = [s for s in body if isinstance(s, ir.CopyGmToL1)]
    # A's rows and B's columns are the tile's extents; the K tail step keeps its own 8 columns / rows
    assert {c.params.n_value for c in copies if c.src == "A"} == {ir.Offset(0, 1, "mActual")}
    assert {c.params.d_value for c in copies if c.src == "B"} == {ir.Offset(0, 1, "nActual")}
    assert copies[0].src_offset == ir.Offset(0, 64 * 40, "mi")
    guards = [s for s in tiles.body if isinstance(s, ir.Guard)]
    assert {g.when for g in guards} == {((("mActual", 64, True),),), ((("nActual", 64, True),),)}
    (fix,) = [s for s in body if isinstance(s, ir.Fixpipe)]
    assert (fix.params.m_size, fix.params.n_size) == (ir.Offset(0, 1, "mActual"), ir.Offset(0, 1, "nActual"))
    for t in range(4):   # every task: the executor's tile variables are the origin shape of its tile
        env = ir.tile_env(tiles, t, {})
        assert (env["mActual"], env["nActual"]) == ((64, 36)[env["mi"]], (64, 8)[env["ni"]])
