"""sm_90a epilogue: stmatrix / st.shared into the swizzled output tile, then a TMA store
(backends/nv/hopper.py, hopper_epilogue_cuda.py), and epilogue ops that reduce through shared memory on the
consumer warp groups.

The kernels run on the CPU harness (stmatrix, TMA store, bulk async-group and proxy fence semantics from the PTX
ISA: layoutkit/testing/cuda_cpu/lk_cuda_cpu_sm90_store.h) against numpy, tails included; a dropped fence, barrier,
commit or wait, a wrong store swizzle and a flipped .trans are caught; with nvcc + cuobjdump the SASS holds STSM
and UTMASTG.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from layoutkit import codegen
from layoutkit.backends.nv import hopper, hopper_cuda
from layoutkit.backends.nv.hopper_epilogue_cuda import StoreKnobs
from layoutkit.errors import UnsupportedError
from layoutkit.infer import infer_layouts, programs
from layoutkit.infer.program import Program
from layoutkit.testing.cuda_cpu import HarnessError, compiler, run_cuda

from .sass_tools import compile_sm90a, cuobjdump, sass_opcodes

needs_cxx = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++ or $CXX): CPU harness skipped")


def gemm_program(M, N, K, bM, bN, bK, threads, stages=2, dtype="float16", out=None, staged=False, tb=False,
                 epilogue=None):
    """A GEMM with output dtype ``out``, staged through ``C_shared`` when ``staged``; ``epilogue(p, C_l)``
    adds ops between the main loop and the store."""
    out = out or dtype
    p = Program(threads=threads, target="sm_90a")
    A = p.tensor("A", (M, K), dtype)
    B = p.tensor("B", (N, K) if tb else (K, N), dtype)
    C = p.tensor("C", (M, N), out)
    A_s = p.alloc_shared("A_shared", (bM, bK), dtype)
    B_s = p.alloc_shared("B_shared", (bN, bK) if tb else (bK, bN), dtype)
    C_l = p.alloc_fragment("C_local", (bM, bN), "float32")
    C_s = p.alloc_shared("C_shared", (bM, bN), out) if staged else None
    p.clear(C_l)
    with p.pipelined(num_stages=stages):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l, transpose_B=tb)
    if epilogue is not None:
        epilogue(p, C_l)
    if staged:
        p.copy(C_l, C_s)
        p.copy(C_s, C[0, 0])
    else:
        p.copy(C_l, C[0, 0])
    return p


def _bits(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(np.float16 if dtype == "float16" else np.float32)


def _value(c: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (c.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return c.astype(np.float64)


def _inputs(p, seed=5):
    rng = np.random.default_rng(seed)
    A, B, C = (p.buffers[n] for n in ("A", "B", "C"))
    a = np.round(rng.standard_normal(A.shape) * 8) / 8  # exact in fp16 and bf16
    b = np.round(rng.standard_normal(B.shape) * 8) / 8
    arrays = {"A": _bits(a, A.dtype), "B": _bits(b, B.dtype), "C": np.zeros(C.shape, _bits(a[:1], C.dtype).dtype)}
    tb = next(op for op in p.ops if op.kind == "gemm").args["transpose_B"]
    return arrays, a @ (b.T if tb else b)


def _close(got, ref, dtype) -> bool:
    eps = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-20}[dtype]  # the output's rounding
    return bool(np.all(np.isfinite(got)) and np.allclose(got, ref, rtol=2 * eps, atol=1e-3))


def _run(p, source):
    arrays, ref = _inputs(p)
    out = run_cuda(source, arrays)
    dtype = p.buffers["C"].dtype
    return _close(_value(out.arrays["C"], dtype), ref, dtype)


# ---- the plan ------------------------------------------------------------------------------------------------

def test_the_plain_16_bit_gemm_stores_through_the_inferred_tma_swizzle_by_default():
    p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
    r = infer_layouts(p)
    h = hopper.plan(p, r)
    (st,) = hopper.stores(h)
    assert (st.src, st.dst, st.tile.buffer, st.tile.span, st.tile.chunk, st.boxes, st.stmatrix) == \
        ("C_local", "C", "C_stage", 128, 64, 2, True)
    assert not hopper.stores(hopper.plan(p, r, tma_store=False))  # the direct stores stay an option
    src = codegen.emit_cuda(p, r)
    assert src.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 and "__halves2half2" not in src


def test_the_codegen_facade_takes_the_tma_store_option():
    p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
    r = infer_layouts(p)
    assert "bulk_group" in codegen.emit_cuda(p, r) and "bulk_group" not in codegen.emit_cuda(p, r, tma_store=False)
    with pytest.raises(UnsupportedError, match="tma_store=True: the TMA-store epilogue is the sm_90 wgmma kernel's"):
        codegen.emit_cuda(p, r, gemm_instruction="mma", tma_store=True)


def test_a_program_staging_c_in_shared_memory_uses_its_inferred_layout():
    p = programs.gemm_shared_epilogue(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, target="sm_90a")
    r = infer_layouts(p)
    (st,) = hopper.stores(hopper.plan(p, r))
    table = np.asarray(r.layout_map["C_shared"].linearized().table())[..., 0] * 2
    assert st.tile.buffer == "C_shared" and np.array_equal(st.tile.offsets(), table)
    with pytest.raises(UnsupportedError, match="tma_store=False, but the program stages C_local in shared C_shared"):
        hopper.plan(p, r, tma_store=False)


def test_fp32_outputs_store_pairs_with_st_shared_and_need_the_staging_to_be_asked_for():
    staged = gemm_program(130, 72, 64, 64, 64, 64, 128, out="float32", staged=True)
    (st,) = hopper.stores(hopper.plan(staged, infer_layouts(staged)))
    assert (st.stmatrix, st.tile.span, st.tile.chunk) == (False, 128, 32)
    plain = gemm_program(130, 72, 64, 64, 64, 64, 128, out="float32")
    r = infer_layouts(plain)
    assert not hopper.stores(hopper.plan(plain, r))  # pairs of fp32 go straight to global memory
    (st,) = hopper.stores(hopper.plan(plain, r, tma_store=True))  # unless asked
    assert (st.tile.buffer, st.stmatrix, st.tile.span) == ("C_stage", False, 128)


def test_output_rows_tma_cannot_store_keep_the_direct_stores():
    p = gemm_program(130, 68, 64, 64, 64, 64, 128, tb=True)  # C rows of 136 bytes (TMA: multiples of 16)
    r = infer_layouts(p)
    assert not hopper.stores(hopper.plan(p, r))
    with pytest.raises(UnsupportedError, match="16-byte global rows; found 16-bit elements, rows of 136 bytes"):
        hopper.plan(p, r, tma_store=True)


def test_a_staging_tile_that_does_not_fit_beside_the_stages_keeps_the_direct_stores():
    p = programs.gemm(M=512, N=512, K=512, bM=128, bN=256, bK=64, threads=256, num_stages=4, target="sm_90a")
    r = infer_layouts(p)  # 4 x (16 + 32) KiB of operand stages leave 35776 bytes: the tile needs 65536
    assert not hopper.stores(hopper.plan(p, r))
    with pytest.raises(UnsupportedError, match="the staging tile needs 65536 bytes of shared memory; 35776 are left"):
        hopper.plan(p, r, tma_store=True)
    three = programs.gemm(M=512, N=512, K=512, bM=128, bN=256, bK=64, threads=256, num_stages=3, target="sm_90a")
    assert hopper.stores(hopper.plan(three, infer_layouts(three)))


def test_a_staging_tile_the_inference_left_without_a_layout_is_refused():
    p = programs.gemm_shared_epilogue(M=256, N=256, K=256, bM=128, bN=256, bK=64, threads=256, target="sm_90a")
    r = infer_layouts(p)
    assert "C_shared" not in r.layout_map  # (a 256-wide tile; 128 wide it has the Hopper swizzle)
    with pytest.raises(UnsupportedError, match="stages C_local in shared C_shared; the inference gave C_shared no"):
        hopper.plan(p, r)


def test_a_shared_staging_the_lowering_cannot_follow_is_refused_naming_the_op():
    def read_back(p, C_l):
        S = p.alloc_shared("S", (64, 64), "float16")
        D = p.alloc_fragment("D", (64, 64), "float32")
        p.copy(C_l, S)
        p.copy(S, D)
    p = gemm_program(128, 64, 64, 64, 64, 64, 128, epilogue=read_back)
    with pytest.raises(UnsupportedError, match=r"copy#\d+ stages C_local in shared S; lowered when"):
        codegen.emit_cuda(p, infer_layouts(p))


# ---- the CPU harness ---------------------------------------------------------------------------------------

CASES = {  # name -> program: every form of the store, tails in M, N and K
    "plain_f16_tail": lambda: programs.gemm(M=200, N=136, K=120, bM=128, bN=128, bK=64, threads=256, num_stages=3,
                                            target="sm_90a"),
    "staged_bf16": lambda: programs.gemm_shared_epilogue(M=192, N=200, K=96, bM=128, bN=128, bK=32, threads=256,
                                                         dtype="bfloat16", target="sm_90a"),
    "staged_f32_st_shared": lambda: gemm_program(130, 72, 64, 64, 64, 64, 128, out="float32", staged=True),
    "plain_f32_asked": lambda: gemm_program(130, 72, 64, 64, 64, 64, 128, out="float32"),
    "x2_tail_32B_swizzle": lambda: gemm_program(136, 104, 96, 128, 48, 64, 256, tb=True),
}


@needs_cxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_tma_store_epilogue_equals_numpy_on_the_cpu_harness(name):
    p = CASES[name]()
    src = hopper_cuda.print_module(hopper.plan(p, infer_layouts(p), tma_store=True))
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in src
    assert _run(p, src)


@needs_cxx
def test_the_direct_store_option_equals_numpy_on_the_cpu_harness():
    p = CASES["plain_f16_tail"]()
    src = hopper_cuda.print_module(hopper.plan(p, infer_layouts(p), tma_store=False))
    assert "bulk_group" not in src and "__halves2half2" in src
    assert _run(p, src)


def _bias_rowsum(p, C_l):
    bM, bN = p.shape_of("C_local")
    N = p.buffers["C"].shape[1]
    Bias = p.tensor("Bias", (N,), "float32")
    RowSum = p.tensor("RowSum", (p.buffers["C"].shape[0],), "float32")
    bias = p.alloc_fragment("bias_frag", (bN,), "float32")
    row = p.alloc_fragment("row_sum", (bM,), "float32")
    p.copy(Bias[0], bias)
    p.parallel((bM, bN), writes=[(C_l, lambda i, j: (i, j))], reads=[(C_l, lambda i, j: (i, j)),
                                                                      (bias, lambda i, j: (j,))], compute="add")
    p.reduce(C_l, row, dim=1, kind="sum")
    p.copy(row, RowSum[0])


REDUCING = {  # name -> (program, row output, reduce, whether the warps' partials meet in shared memory)
    "bias_rowmax_two_groups": (lambda: programs.gemm_rowmax_bias(M=256, N=128, K=256, bM=128, bN=128, bK=64,
                                                                 threads=256, target="sm_90a"), "RowMax", np.max, True),
    "bias_rowmax_one_group_tail": (lambda: programs.gemm_rowmax_bias(M=200, N=128, K=120, bM=128, bN=128, bK=64,
                                                                     threads=128, target="sm_90a"), "RowMax", np.max,
                                   False),  # a row's columns are one lane quad's: shuffles alone
    "bias_rowsum_two_groups_tail": (lambda: gemm_program(200, 128, 120, 128, 128, 64, 256, epilogue=_bias_rowsum),
                                    "RowSum", np.sum, True),
}


@needs_cxx
@pytest.mark.parametrize("name", sorted(REDUCING))
def test_epilogues_reducing_through_shared_memory_equal_numpy(name):
    build, row_name, fold, partials = REDUCING[name]
    p = build()
    r = infer_layouts(p)
    h = hopper.plan(p, r)
    assert any(b.scope == "shared" and b.name != "C_stage" for b in h.buffers) == partials
    src = hopper_cuda.print_module(h)
    assert src.count("__syncthreads()") == 1  # the mbarrier init's: the epilogue meets at the consumers' barrier
    assert src.count(f'"bar.sync 1, {p.threads};') == (2 if partials else 1)  # the partials, the store
    arrays, ref = _inputs(p)
    M, N = p.buffers["C"].shape
    bias = np.round(np.random.default_rng(1).standard_normal(N) * 4) / 4
    arrays.update({"Bias": bias.astype(np.float32), row_name: np.zeros(M, np.float32)})
    out = run_cuda(src, arrays)
    ref = ref + bias
    assert _close(out.arrays["C"].astype(np.float64), ref, "float16")
    assert np.allclose(out.arrays[row_name], fold(ref, axis=1), rtol=1e-5, atol=1e-3)


SMALL = lambda: gemm_program(72, 64, 64, 64, 64, 64, 128)  # noqa: E731  one consumer group, an M tail
SWEEP = os.environ.get("LAYOUTKIT_CUDA_CPU_SWEEP") == "1"
MUTATIONS = {  # name -> the printer bug: each must fail (a harness error or a result unequal to numpy)
    "fence_dropped": StoreKnobs(fence=False),
    "wait_dropped": StoreKnobs(wait=False),
    "barrier_dropped": StoreKnobs(barrier=False),
    "store_map_unswizzled": StoreKnobs(map_swizzle=0),
    "stmatrix_trans_flipped": StoreKnobs(trans_flipped=True),
}
SWEEP_MUTATIONS = {"commit_dropped": StoreKnobs(commit=False), "store_map_32B": StoreKnobs(map_swizzle=32)}


@needs_cxx
@pytest.mark.parametrize("name", sorted(MUTATIONS) + [pytest.param(n, marks=pytest.mark.skipif(
    not SWEEP, reason="with the sweep (LAYOUTKIT_CUDA_CPU_SWEEP=1)")) for n in sorted(SWEEP_MUTATIONS)])
def test_mutated_tma_stores_are_caught(name):
    p = SMALL()
    h = hopper.plan(p, infer_layouts(p))
    assert _run(p, hopper_cuda.print_module(h))  # the unmutated kernel passes
    try:
        ok = _run(p, hopper_cuda.print_module(h, hopper_cuda.Knobs(store={**MUTATIONS, **SWEEP_MUTATIONS}[name])))
    except HarnessError as e:
        assert "cuda-cpu error" in str(e)
        return
    assert not ok, f"mutation {name} went unnoticed"


@needs_cxx
def test_the_issuing_thread_fencing_after_the_barrier_is_ordered_too():
    p = SMALL()
    h = hopper.plan(p, infer_layouts(p))
    assert _run(p, hopper_cuda.print_module(h, hopper_cuda.Knobs(store=StoreKnobs(fence_by_issuer=True))))


REUSE = """// launch k: grid (1, 1), block 128, dynamic shared memory 4096 bytes
extern "C" __global__ void __launch_bounds__(128) k(const __grid_constant__ CUtensorMap Y_map, float* __restrict__ Y) {
  extern __shared__ __align__(1024) unsigned char lk_smem[];
  float* S = reinterpret_cast<float*>(lk_smem + 0);
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < 8; ++i) { S[threadIdx.x * 8 + i] = (float)(pass * 1000 + threadIdx.x * 8 + i); }
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\\n"
                   :: "l"((unsigned long long)&Y_map), "r"(0), "r"(pass * 32),
                   "r"((unsigned)__cvta_generic_to_shared(&S[0])) : "memory");
      asm volatile("cp.async.bulk.commit_group;\\n" ::: "memory");
      WAIT
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) { asm volatile("cp.async.bulk.wait_group 0;\\n" ::: "memory"); }
}
extern "C" CUresult k_tensor_maps(CUtensorMap* Y_map, const float* Y) {
  const cuuint64_t dims[2] = {32ull, 64ull};
  const cuuint64_t strides[1] = {128ull};
  const cuuint32_t box[2] = {32u, 32u};
  const cuuint32_t elem[2] = {1u, 1u};
  return cuTensorMapEncodeTiled(Y_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)Y, dims, strides, box, elem,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
"""


@needs_cxx
def test_reusing_the_shared_tile_before_the_store_has_read_it_is_caught():
    waited = REUSE.replace("WAIT", 'asm volatile("cp.async.bulk.wait_group.read 0;\\n" ::: "memory");')
    y = run_cuda(waited, {"Y": np.zeros((64, 32), np.float32)}).arrays["Y"]
    want = np.arange(1024, dtype=np.float32).reshape(32, 32)
    assert np.array_equal(y, np.concatenate([want, want + 1000]))
    with pytest.raises(HarnessError, match="overwritten while the TMA store of line 10 .* may still read it"):
        run_cuda(REUSE.replace("WAIT", ""), {"Y": np.zeros((64, 32), np.float32)})


# ---- nvcc / SASS ---------------------------------------------------------------------------------------------

SASS_CASES = {
    "plain_f16": lambda: programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3,
                                       target="sm_90a"),
    "staged_f32": CASES["staged_f32_st_shared"],
    "bias_rowmax": REDUCING["bias_rowmax_two_groups"][0],
}


@pytest.mark.parametrize("name", sorted(SASS_CASES))
def test_sass_holds_stsm_and_utmastg(name, tmp_path):
    cuobjdump()
    p = SASS_CASES[name]()
    cubin, ptxas = compile_sm90a(codegen.emit_cuda(p, infer_layouts(p)), tmp_path)
    assert "0 bytes spill stores" in ptxas
    ops = sass_opcodes(cubin)
    count = {k: sum(o.startswith(k) for o in ops) for k in ("STSM", "UTMASTG", "STS.64", "FENCE.VIEW.ASYNC.S", "STG")}
    # 128 x 128 fp16: two boxes of 64 columns; 64 x 64 fp32: two of 32
    assert count["UTMASTG"] == 2 and count["FENCE.VIEW.ASYNC.S"] >= 1, count
    if name == "staged_f32":
        assert count["STSM"] == 0 and count["STS.64"] == 64 * 64 // 2 // 128, count  # a thread's column pairs
    else:
        assert count["STSM"] == 8, count  # two m64n64 tiles per warp, four x4 each
    assert count["STG"] == (4 if name == "bias_rowmax" else 0), count  # only the row max (4 registers) from registers


def test_the_sm90_sass_report_counts_the_epilogue_stores():
    import importlib.util

    root = Path(__file__).resolve().parent.parent / "benchmarks"
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("sass_report_sm90_t", root / "sass_report_sm90.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sass_report_sm90_t"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    import sass_report

    listing = "\n".join(f"        /*{16 * k:04x}*/  {ins} ;" for k, ins in enumerate([
        "MOV R1, c[0x0][0x28]", "HGMMA.64x64x16.F32 R24, gdesc[UR4], R24", "BRA 0x10", "STSM.16.M88.4 [R3], R24",
        "FENCE.VIEW.ASYNC.S", "@P0 EXIT", "UTMASTG.2D [UR4], [UR6]", "EXIT"]))
    s = mod.parse(listing, "Used 168 registers", 4, sass_report)
    assert s.stores == {"STSM": 1, "STS": 0, "FENCE": 1, "UTMASTG": 1, "STG": 0}
    assert s.tail == 3 and s.loop == 2  # BRA, STSM, FENCE before the consumers' EXIT; the loop: HGMMA, BRA


STMATRIX = """// launch st: grid (1, 1), block 32, dynamic shared memory 512 bytes
extern "C" __global__ void __launch_bounds__(32) st(float* __restrict__ Y) {
  extern __shared__ __align__(1024) unsigned char lk_smem[];
  half* S = reinterpret_cast<half*>(lk_smem + 0);
  __align__(16) unsigned r[4];
  for (int m = 0; m < 4; ++m) {
    const int row = threadIdx.x / 4, col = 2 * (threadIdx.x % 4);
    r[m] = lk_pack_f16x2((float)(64 * m + 8 * row + col), (float)(64 * m + 8 * row + col + 1));
  }
  asm volatile("stmatrix.sync.aligned.m8n8.xNUM.shared.b16 [%0], {REGS};\\n"
               :: "r"((unsigned)__cvta_generic_to_shared(&S[threadIdx.x * 8])), ARGS : "memory");
  __syncthreads();
  for (int i = 0; i < 8; ++i) { Y[threadIdx.x * 8 + i] = __half2float(S[threadIdx.x * 8 + i]); }
}
"""


@needs_cxx
@pytest.mark.parametrize("num, trans", [(4, ""), (4, ".trans")] + [pytest.param(n, t, marks=pytest.mark.skipif(
    not SWEEP, reason="with the sweep (LAYOUTKIT_CUDA_CPU_SWEEP=1)")) for n, t in ((1, ""), (2, ".trans"))])
def test_stmatrix_stores_the_fragment_rows_the_ptx_isa_gives(num, trans):
    from layoutkit.backends.nv.hopper_epilogue_cuda import PRELUDE

    regs = ", ".join(f"%{i + 1}" for i in range(num))
    args = ", ".join(f'"r"(r[{i}])' for i in range(num))
    src = STMATRIX.replace("xNUM", f"x{num}{trans}").replace("REGS", regs).replace("ARGS", args)
    src = "#include <cuda_fp16.h>\n" + PRELUDE + src
    out = run_cuda(src, {"Y": np.zeros(256, np.float32)}).arrays["Y"].reshape(4, 8, 8)  # unstored rows: garbage
    frag = np.arange(256, dtype=np.float32).reshape(4, 8, 8)  # matrix m, row, column: lane 4 row + column / 2
    want = frag.transpose(0, 2, 1) if trans else frag  # .trans: row address j receives column j
    assert np.array_equal(out[:num], want[:num])


@needs_cxx
@pytest.mark.parametrize("name, per_request", [("plain_f16_tail", 1), ("x2_tail_32B_swizzle", 1),
                                               ("staged_f32_st_shared", 4)])
def test_bank_wavefronts_of_the_staging_writes(name, per_request):
    """stmatrix writes 8 rows of 16 bytes per matrix: the inferred swizzle puts them in distinct banks (one
    wavefront).  fp32 pairs (8 bytes a lane, two half-warp phases: at least 2) take 4: a half warp writes 32
    bytes of 4 rows, and the 128-byte swizzle maps rows 2 k and 2 k + 1 onto the same two 16-byte columns."""
    p = CASES[name]()
    src = hopper_cuda.print_module(hopper.plan(p, infer_layouts(p)))
    arrays, _ = _inputs(p)
    banks = run_cuda(src, arrays, count_banks=True).banks
    lines = [k + 1 for k, t in enumerate(src.splitlines()) if "stmatrix.sync" in t or "st.shared.v2" in t]
    assert lines and all(banks[n][0] > 0 and banks[n][1] == per_request * banks[n][0] for n in lines), \
        {n: banks[n] for n in lines}


@needs_cxx
def test_a_tma_store_writes_no_element_outside_the_tensor():
    src = REUSE.replace("WAIT", 'asm volatile("cp.async.bulk.wait_group.read 0;\\n" ::: "memory");')
    src = src.replace("dims[2] = {32ull, 64ull}", "dims[2] = {30ull, 50ull}")  # 30 of 32 columns, 50 of 64 rows
    y = run_cuda(src, {"Y": np.full((64, 32), -1.0, np.float32)}).arrays["Y"]
    want = np.arange(1024, dtype=np.float32).reshape(32, 32)
    full = np.concatenate([want, want + 1000])
    assert np.array_equal(y[:50, :30], full[:50, :30])
    assert np.all(y[50:] == -1.0) and np.all(y[:, 30:] == -1.0)
