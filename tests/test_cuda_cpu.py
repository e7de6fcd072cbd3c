"""The printed CUDA runs on the CPU harness (layoutkit.testing.cuda_cpu) and equals numpy.

The harness reads the printed text, not the IR: its PTX semantics are written from the PTX ISA, every thread
of a block runs with real barriers and warp rendezvous, cp.async lands at wait_group, shared memory starts as
NaN, and every access is bounds-, alignment- and race-checked.  ``make test`` runs the representative subset
(every instruction family and operand type); ``make test-cuda-cpu`` runs every kernel the tests emit.
A mutation test shows that printer bugs the numpy executor cannot see are caught here.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from layoutkit.testing.cuda_cpu import HarnessError, TranslationError, compiler, run_cuda, translate

from . import cuda_cpu_cases as cases

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++ or $CXX): CPU harness skipped")

SWEEP = os.environ.get("LAYOUTKIT_CUDA_CPU_SWEEP") == "1"
_MADE: dict[str, cases.Case] = {}


def _make(name: str) -> cases.Case:
    if name not in _MADE:
        _MADE[name] = cases.make(name)
    return _MADE[name]


def _matches(out: dict, expect: dict) -> list[str]:
    """The names of the outputs that differ from their reference (empty: all equal)."""
    bad = []
    for name, (want, rtol, atol) in expect.items():
        got = out[name]
        if rtol is None or rtol == "bf16":
            ok = np.array_equal(got, want)
        else:
            g = got.astype(np.float64)
            ok = bool(np.all(np.isfinite(g))) and np.allclose(g, want, rtol=rtol, atol=atol)
        if not ok:
            bad.append(name)
    return bad


def _check(case: cases.Case, source: str | None = None) -> None:
    out = run_cuda(source or case.source, case.arrays).arrays
    assert case.expect, "a case must check at least one output"
    assert not _matches(out, case.expect)


@pytest.mark.parametrize("name", cases.REPRESENTATIVE)
def test_printed_kernel_equals_numpy(name):
    _check(_make(name))


@pytest.mark.skipif(not SWEEP, reason="the full sweep runs with `make test-cuda-cpu` (LAYOUTKIT_CUDA_CPU_SWEEP=1)")
@pytest.mark.parametrize("name", [n for n in cases.CASES if n not in cases.REPRESENTATIVE])
def test_every_emitted_kernel_equals_numpy(name):
    _check(_make(name))


def test_representative_subset_covers_every_instruction_family():
    text = "\n".join(_make(n).source for n in cases.REPRESENTATIVE)
    for needle in ["m16n8k16.row.col.f32.f16", "m16n8k16.row.col.f32.bf16", "m16n8k8.row.col.f32.tf32",
                   "m16n8k8.row.col.f32.f16", "m16n8k32.row.col.s32.s8", "m16n8k32.row.col.s32.u8",
                   ".x4.shared.b16", ".x4.trans.shared", ".x2.trans.shared", "cp.async.cg", "cp.async.commit_group",
                   "cp.async.wait_group 0", "cp.async.wait_group 2", "__shfl_xor_sync", "__syncthreads", "half2",
                   "__float2bfloat16_rn", "prmt.b32", "reinterpret_cast<uint4*>(&C["]:
        assert needle in text, needle


# ---- mutations: printer bugs the numpy executor cannot see --------------------------------------------------

def _swap_mma_operands(src):
    return src.replace('"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])',
                       '"r"(b[0]), "r"(b[1]), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3])')


def _drop_trans(src):
    return src.replace(".x4.trans.", ".x4.")


def _wait_one_more(src):
    return re.sub(r"cp\.async\.wait_group (\d+)", lambda m: f"cp.async.wait_group {int(m.group(1)) + 1}", src)


def _drop_first_barrier(src):
    return src.replace("__syncthreads();", "", 1)


def _drop_last_barrier(src):
    i = src.rindex("__syncthreads();")
    return src[:i] + src[i + len("__syncthreads();"):]


def _or_swizzle(src):
    return "\n".join(line.replace(" ^ ", " | ") if "__cvta_generic_to_shared" in line else line
                     for line in src.split("\n"))


def _register_offset(src):
    return src.replace("reinterpret_cast<float*>(&C_local[nj * 4])", "reinterpret_cast<float*>(&C_local[nj * 4 + 1])")


def _epilogue_guard(src):
    """The row guard of the C stores one past the tail (M = 100); the loads keep theirs."""
    return "\n".join(re.sub(r"\) < 100 &&", ") < 101 &&", line) if line.lstrip().startswith("if (") and "&C[" in line
                     else line for line in src.split("\n"))


def _prmt_selector(src):
    """One byte of the int8 B transpose's first prmt taken from the wrong word."""
    return src.replace('"n"(0x5140)', '"n"(0x5104)', 1)


MUTATIONS = [  # (mutation, kernel it is applied to)
    (_swap_mma_operands, "fp16_100x72x40x32x32x32"),
    (_drop_trans, "fp16_100x72x40x32x32x32"),
    (_wait_one_more, "fp16_stages4"),
    (_drop_first_barrier, "fp16_100x72x40x32x32x32"),
    (_drop_last_barrier, "rowmax_100x150x72x64x128"),  # the barrier before the cross-warp reduction reads
    (_or_swizzle, "fp16_100x72x40x32x32x32"),
    (_register_offset, "fp16_100x72x40x32x32x32"),
    (_epilogue_guard, "fp16_half_c_tail"),
    (_drop_last_barrier, "fp16_half_c_tail"),  # the staged epilogue's barrier before the row copies
    (_prmt_selector, "int8_100x72x96x64x64x32_square"),
]


@pytest.mark.parametrize("mutate,name", MUTATIONS, ids=[m.__name__.strip("_") for m, _ in MUTATIONS])
def test_injected_printer_bug_is_caught(mutate, name):
    case = _make(name)
    bad = mutate(case.source)
    assert bad != case.source, "the mutation must apply"
    try:
        out = run_cuda(bad, case.arrays).arrays
    except HarnessError as e:  # a race, an out-of-bounds or misaligned access
        assert re.search(r"race|out of bounds|misaligned|deadlock", str(e)), str(e)
        return
    assert _matches(out, case.expect), "the mutated kernel still equals numpy"


# ---- the harness itself -----------------------------------------------------------------------------------

def _kernel(body: str, params: str, threads: int = 32, smem: int = 0, grid=(1, 1)) -> str:
    decl = "  extern __shared__ __align__(128) unsigned char lk_smem[];\n" if smem else ""
    return (f"// launch k: grid ({grid[0]}, {grid[1]}), block {threads}, dynamic shared memory {smem} bytes\n"
            f'extern "C" __global__ void __launch_bounds__({threads}) k({params}) {{\n'
            f"  const int tid = threadIdx.x;\n{decl}{body}}}\n")


LDMATRIX = _kernel(
    """  unsigned short* s = reinterpret_cast<unsigned short*>(lk_smem + 0);
  __align__(16) unsigned r[4];
  for (int i = 0; i < 8; ++i) { s[tid * 8 + i] = x[tid * 8 + i]; }
  __syncthreads();
  { const unsigned sa = (unsigned)__cvta_generic_to_shared(&s[(tid % NROWS) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.xNUMTRANS.shared.b16 {REGS}, [%NUM];\\n" : OUTS : "r"(sa)); }
  for (int i = 0; i < NUM; ++i) { y[tid * 4 + i] = r[i]; }
""", "const unsigned short* __restrict__ x, unsigned* __restrict__ y", smem=512)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_follows_the_ptx_fragment_figure(num, trans):
    """Lane t of matrix i: row t/4, elements 2(t%4), 2(t%4)+1, low half first (the ISA's ldmatrix figure);
    ``.trans`` loads the stored rows as columns."""
    src = (LDMATRIX.replace("NROWS", str(8 * num)).replace("xNUM", f"x{num}")
           .replace("TRANS", ".trans" if trans else "")
           .replace("REGS", ", ".join(f"%{i}" for i in range(num))).replace("%NUM", f"%{num}")
           .replace("OUTS", ", ".join(f'"=r"(r[{i}])' for i in range(num))).replace("NUM", str(num)))
    x = np.arange(256, dtype=np.uint16) * 3 + 1  # 4 matrices of 8 rows of 8 b16
    y = run_cuda(src, {"x": x, "y": np.zeros(128, np.uint32)}).arrays["y"].reshape(32, 4)
    m = x.reshape(4, 8, 8)
    t = np.arange(32)
    for i in range(num):
        mat = m[i].T if trans else m[i]
        lo, hi = mat[t // 4, 2 * (t % 4)], mat[t // 4, 2 * (t % 4) + 1]
        np.testing.assert_array_equal(y[:, i], lo.astype(np.uint32) | hi.astype(np.uint32) << 16)


def _run_error(body, params, arrays, smem=0):
    with pytest.raises(HarnessError) as e:
        run_cuda(_kernel(body, params, smem=smem), arrays)
    return str(e.value)


def test_out_of_bounds_global_access_is_named():
    msg = _run_error("  y[tid + 1] = 1.0f;\n", "float* __restrict__ y", {"y": np.zeros(32, np.float32)})
    assert "out of bounds: write global of 4 bytes at byte 128 of y (128 bytes)" in msg
    assert "thread 31" in msg and "line 4: y[tid + 1] = 1.0f;" in msg


def test_misaligned_vector_access_is_named():
    msg = _run_error("  { uint4 v = *reinterpret_cast<const uint4*>(&x[tid * 4 + 2]); y[tid] = v.x; }\n",
                     "const float* __restrict__ x, unsigned* __restrict__ y",
                     {"x": np.zeros(256, np.float32), "y": np.zeros(32, np.uint32)})
    assert "misaligned: read global of 16 bytes at byte 8 of x" in msg


def test_shared_read_without_a_barrier_is_a_race():
    body = """  float* s = reinterpret_cast<float*>(lk_smem + 0);
  s[tid] = 1.0f;
  y[tid] = s[(tid + 1) % 32];
"""
    msg = _run_error(body, "float* __restrict__ y", {"y": np.zeros(32, np.float32)}, smem=128)
    # thread 0 runs first and reads s[1] before thread 1 writes it: the write is the racing access
    assert "race: s writes shared byte 4 that another thread read with no barrier in between" in msg
    ok = run_cuda(_kernel(body.replace("  y[", "  __syncthreads();\n  y["), "float* __restrict__ y", smem=128),
                  {"y": np.zeros(32, np.float32)})
    np.testing.assert_array_equal(ok.arrays["y"], np.ones(32))


def test_shared_memory_starts_as_nan_and_cp_async_lands_at_wait_group():
    body = """  float* s = reinterpret_cast<float*>(lk_smem + 0);
  { const unsigned sa = (unsigned)__cvta_generic_to_shared(&s[tid]);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\\n" :: "r"(sa), "l"(&x[tid]), "r"(tid < 16 ? 4 : 0)); }
  asm volatile("cp.async.commit_group;\\n" ::);
  y[tid] = s[tid];
  asm volatile("cp.async.wait_group 0;\\n" ::);
  y[32 + tid] = s[tid];
"""
    x = np.arange(32, dtype=np.float32) + 1
    y = run_cuda(_kernel(body, "const float* __restrict__ x, float* __restrict__ y", smem=128),
                 {"x": x, "y": np.zeros(64, np.float32)}).arrays["y"]
    assert np.isnan(y[:32]).all()  # read before the copy landed: the garbage shared memory starts with
    np.testing.assert_array_equal(y[32:], np.where(np.arange(32) < 16, x, 0))  # src-size 0: zero fill


def _prmt_reference(a: np.ndarray, b: np.ndarray, selector: int) -> np.ndarray:
    """prmt.b32 as the PTX ISA defines it, per 32-bit value: bytes {b, a}, a nibble per result byte."""
    src = a.astype(np.uint64) | (b.astype(np.uint64) << np.uint64(32))
    out = np.zeros(a.shape, np.uint64)
    for i in range(4):
        s = (selector >> (4 * i)) & 0xF
        byte = (src >> np.uint64(8 * (s & 7))) & np.uint64(0xFF)
        if s & 8:
            byte = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
        out |= byte << np.uint64(8 * i)
    return out.astype(np.uint32)


@pytest.mark.parametrize("selector", [0x3210, 0x7654, 0x5140, 0x7632, 0x8740, 0xC3A1])
def test_prmt_follows_the_ptx_isa(selector):
    """The printed prmt.b32 on the harness and the executor's prmt both equal the ISA's definition (the
    selector's msb replicating a byte's sign included)."""
    from layoutkit.algebra.nodes import Const
    from layoutkit.backends.nv import ir
    from layoutkit.backends.nv.cuda import print_module
    from layoutkit.backends.nv.execute import run

    k = ir.Kernel("prmt_k", 32, (1, 1), (ir.Buffer("X", "int32", 64, "global"), ir.Buffer("Y", "int32", 32, "global"),
                                         ir.Buffer("w", "int32", 2, "reg"), ir.Buffer("res", "int32", 1, "reg")),
                  (ir.Load("w", Const(0), "X", ir.TID * 2, 2), ir.Prmt("res", 0, ("w", 0), ("w", 1), selector),
                   ir.Store("Y", ir.TID, "res", Const(0), 1)))
    x = np.random.default_rng(selector).integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    want = _prmt_reference(x[0::2], x[1::2], selector)
    arrays = {"X": x.view(np.int32), "Y": np.zeros(32, np.int32)}
    harness = run_cuda(print_module([k]), arrays).arrays["Y"].view(np.uint32)
    executor = run(k, arrays)["Y"].view(np.uint32)
    np.testing.assert_array_equal(harness, want)
    np.testing.assert_array_equal(executor, want)


def test_untranslated_asm_is_refused():
    src = _kernel('  asm volatile("membar.gl;\\n" ::);\n', "float* __restrict__ y")
    with pytest.raises(TranslationError, match="PTX instruction membar.gl  is not translated|membar.gl"):
        translate(src)


def test_bank_wavefronts_of_the_staged_transpose():
    """The padded staging tile of the transpose: the harness counts, per block, the 32 st.shared.v4 and 128
    ld.shared.b32 warp instructions the cost model priced at 128 + 512 wavefronts."""
    case = _make("conversion_transpose")
    run = run_cuda(case.source, case.arrays, count_banks=True)
    blocks = 16  # 256 x 256 in 64 x 64 tiles
    lines = case.source.split("\n")
    store = [v for n, v in run.banks.items() if "reinterpret_cast<uint4*>(&x__stage1[" in lines[n - 1]]
    load = [v for n, v in run.banks.items() if "= x__stage1[" in lines[n - 1]]
    assert len(run.banks) == 2 and len(store) == len(load) == 1
    assert store[0] == (32 * blocks, 128 * blocks) and load[0] == (128 * blocks, 512 * blocks)


def test_asan_build_runs_a_gemm_clean():
    """The harness and a printed kernel under AddressSanitizer (a small GEMM: 4 blocks)."""
    case = cases.fp16_gemm(64, 64, 64, 32, 32, 32, False)
    out = run_cuda(case.source, case.arrays, sanitize=True).arrays
    assert not _matches(out, case.expect)
