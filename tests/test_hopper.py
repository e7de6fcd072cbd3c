"""sm_90a: the warp-specialised TMA + mbarrier + wgmma GEMM (backends/nv/hopper*.py).

The emitted kernel runs on the CPU harness (its TMA, mbarrier and wgmma semantics written from the PTX ISA and
the driver API, layoutkit/testing/cuda_cpu/lk_cuda_cpu_sm90.h) against numpy, tails included; perturbed
descriptor fields, tensor-map swizzles, transaction counts and parities are caught; with nvcc the kernel
compiles for sm_90a and, with cuobjdump, its SASS holds HGMMA, UTMALDG and SYNCS and splits producer from
consumers (setmaxnreg).
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from layoutkit import codegen
from layoutkit.backends.nv import hopper, hopper_cuda
from layoutkit.errors import UnsupportedError
from layoutkit.infer import infer_layouts, programs
from layoutkit.testing.cuda_cpu import HarnessError, compiler, run_cuda

from .sass_tools import compile_sm90a, sass_opcodes

SWEEP = os.environ.get("LAYOUTKIT_CUDA_CPU_SWEEP") == "1"
needs_cxx = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++ or $CXX): CPU harness skipped")

# (M, N, K, bM, bN, bK, consumer threads, stages, transpose_B, dtype)
MAIN = (256, 256, 256, 128, 128, 64, 256, 3, False, "float16")
TAIL = (200, 136, 120, 128, 128, 64, 256, 3, False, "float16")  # M, N and K tails: TMA zero fill, guarded stores
ONE_GROUP_TB = (200, 136, 120, 128, 128, 64, 128, 2, True, "float16")  # B [N, K]: K-major B, wgmma n128
OTHERS = [
    (130, 72, 96, 64, 64, 32, 128, 3, False, "float16"),  # 64-byte swizzle for A
    (64, 256, 128, 64, 256, 64, 128, 3, False, "bfloat16"),  # n256, four B chunks
    (130, 200, 72, 128, 128, 32, 256, 4, True, "float16"),
    (128, 128, 256, 128, 128, 64, 128, 4, False, "bfloat16"),
]


def _program(cfg):
    M, N, K, bM, bN, bK, threads, stages, tb, dtype = cfg
    return programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, threads=threads, num_stages=stages, dtype=dtype,
                         target="sm_90a", transpose_B=tb)


def _plan(cfg):
    p = _program(cfg)
    return p, hopper.plan(p, infer_layouts(p))


def _arrays(cfg, seed=3):
    M, N, K, *_, tb, dtype = cfg
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    if dtype == "bfloat16":  # exact bf16 values, stored as bit patterns
        a, b = (np.round(x * 8) / 8 for x in (a, b))
        store = [(x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16) for x in (a, b)]
        c = np.zeros((M, N), np.uint16)
    else:
        a, b = a.astype(np.float16), b.astype(np.float16)
        store, c = [a, b], np.zeros((M, N), np.float16)
    ref = a.astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    return {"A": store[0], "B": store[1], "C": c}, ref


def _result(out, dtype):
    c = out.arrays["C"]
    if dtype == "bfloat16":
        return (c.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return c.astype(np.float64)


def _equal_numpy(cfg, source) -> bool:
    arrays, ref = _arrays(cfg)
    got = _result(run_cuda(source, arrays), cfg[-1])
    eps = 2.0**-8 if cfg[-1] == "bfloat16" else 2.0**-11  # the output's rounding
    return bool(np.all(np.isfinite(got)) and np.allclose(got, ref, rtol=2 * eps, atol=1e-3))


# ---- the plan: read off the inferred layouts ---------------------------------------------------------------

def test_plan_reads_the_swizzle_descriptors_and_wgmma_tiles_off_the_layouts():
    p, h = _plan(MAIN)
    assert (h.a.span, h.a.major, h.b.span, h.b.major) == (128, "K", 128, "MN")
    assert hopper.descriptor(h.a) == (16, 1024) and hopper.descriptor(h.b) == (8192, 1024)
    assert h.threads == 384 == hopper.PRODUCER_THREADS + p.threads
    assert [[(t.m0, t.n0, t.n, t.reg) for t in ts] for ts in h.tiles] == [[(0, 0, 64, 0), (64, 0, 64, 32)],
                                                                         [(0, 64, 64, 0), (64, 64, 64, 32)]]
    assert h.tx_bytes == 2 * 128 * 64 * 2
    _, h32 = _plan(OTHERS[0])
    assert h32.a.span == 64 and h32.b.span == 128  # bK = 32: 64-byte rows of A


def test_inferred_thread_range_and_the_kernel_agree():
    p = _program(MAIN)
    r = infer_layouts(p)
    src = codegen.emit_cuda(p, r)
    assert r.layout_map["C_local"].thread_range == (128, p.threads)  # (first thread, threads)
    assert re.search(r"__launch_bounds__\(384, 1\)", src) and "if (threadIdx.x < 128)" in src
    assert "const int tid = threadIdx.x - 128;" in src


def test_selection_follows_the_copy_instructions_and_the_arch():
    assert hopper.uses_hopper(_program(MAIN))
    assert hopper.uses_hopper(programs.gemm(target="sm_90"))  # plain sm_90 too (test_hopper_sm90)
    odd = programs.gemm(M=130, N=72, K=100, bM=64, bN=64, bK=32, target="sm_90a")  # A rows of 200 bytes: no TMA
    assert not hopper.uses_hopper(odd)
    assert "wgmma" not in codegen.emit_cuda(odd, infer_layouts(odd))


def test_sm80_output_is_unchanged_by_the_sm90a_path():
    p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=32)
    src = codegen.emit_cuda(p, infer_layouts(p))
    assert "mma.sync.aligned.m16n8k16" in src and "wgmma" not in src and "CUtensorMap" not in src


def test_a_layout_that_is_no_canonical_tile_is_refused():
    from layoutkit.algebra.layout import Layout

    padded = Layout([2, 64, 64], lambda s, i, j: s * 64 * 72 + i * 72 + j)  # padded rows: no TMA swizzle form
    with pytest.raises(UnsupportedError, match="no TMA / wgmma canonical layout"):
        hopper.match_tile(padded, "A_s", 16, "K")


# ---- the CPU harness ---------------------------------------------------------------------------------------

@needs_cxx
@pytest.mark.parametrize("cfg", [MAIN, TAIL, ONE_GROUP_TB], ids=["main", "tail", "one_group_tb"])
def test_emitted_sm90a_kernel_equals_numpy_on_the_cpu_harness(cfg):
    p = _program(cfg)
    assert _equal_numpy(cfg, codegen.emit_cuda(p, infer_layouts(p)))


@needs_cxx
@pytest.mark.skipif(not SWEEP, reason="the full sweep runs with `make test-cuda-cpu` (LAYOUTKIT_CUDA_CPU_SWEEP=1)")
@pytest.mark.parametrize("cfg", OTHERS)
def test_every_sm90a_configuration_equals_numpy(cfg):
    p = _program(cfg)
    assert _equal_numpy(cfg, codegen.emit_cuda(p, infer_layouts(p)))


MUTATIONS = {  # name -> (configuration, knobs): each a printer bug in one field
    "a_map_swizzle_none": (MAIN, hopper_cuda.Knobs(a_map_swizzle=0)),
    "b_map_swizzle_none": (MAIN, hopper_cuda.Knobs(b_map_swizzle=0)),
    "a_desc_swizzle_64": (MAIN, hopper_cuda.Knobs(a_desc_swizzle=64)),
    "b_desc_swizzle_32": (ONE_GROUP_TB, hopper_cuda.Knobs(b_desc_swizzle=32)),
    "a_sbo_off": (MAIN, hopper_cuda.Knobs(a_sbo=512)),
    "b_sbo_off": (MAIN, hopper_cuda.Knobs(b_sbo=2048)),
    "b_lbo_off": (ONE_GROUP_TB[:8] + (False, "float16"), hopper_cuda.Knobs(b_lbo=4096)),  # n128: two B chunks
    "trans_b_flipped": (MAIN, hopper_cuda.Knobs(trans_b=0)),
    "tx_bytes_short": (MAIN, hopper_cuda.Knobs(tx_bytes=2 * 128 * 64 * 2 - 8192)),
    "tx_bytes_long": (MAIN, hopper_cuda.Knobs(tx_bytes=2 * 128 * 64 * 2 + 16)),
    "full_parity_flipped": (MAIN, hopper_cuda.Knobs(full_parity_flip=True)),
    "stage_released_early": (MAIN, hopper_cuda.Knobs(early_release=True)),
}


@needs_cxx
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_fields_are_caught(name):
    cfg, knobs = MUTATIONS[name]
    _, h = _plan(cfg)
    assert _equal_numpy(cfg, hopper_cuda.print_module(h))  # the unmutated kernel passes
    try:
        ok = _equal_numpy(cfg, hopper_cuda.print_module(h, knobs))
    except HarnessError as e:  # a deadlock, a read of bytes no TMA load landed, a refused tensor map ...
        assert "cuda-cpu error" in str(e)
        return
    assert not ok, f"mutation {name} went unnoticed"


# ---- nvcc / SASS ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cubin(tmp_path_factory):
    p = _program(MAIN)
    return compile_sm90a(codegen.emit_cuda(p, infer_layouts(p)), tmp_path_factory.mktemp("sm90a"))


def test_emitted_kernel_compiles_for_sm90a(cubin):
    path, ptxas = cubin
    assert path.stat().st_size > 0
    assert "0 bytes spill stores" in ptxas
    assert "setmaxnreg' ignored" not in ptxas and "serialized" not in ptxas


def test_sass_holds_hgmma_utmaldg_syncs_and_a_producer_consumer_split(cubin):
    ops = sass_opcodes(cubin[0])
    count = {k: sum(o.startswith(k) for o in ops) for k in ("HGMMA", "UTMALDG", "SYNCS", "USETMAXREG")}
    per_tile = 2 * 64 // 16  # two m64 blocks per consumer group, four k16 steps (nvcc may unroll the 4 k tiles)
    assert count["HGMMA"] in (per_tile, 4 * per_tile) and count["UTMALDG"] >= 3 and count["SYNCS"] >= 4, count
    assert any(o.startswith("USETMAXREG.DEALLOC") for o in ops) and any(o.startswith("USETMAXREG.TRY_ALLOC")
                                                                         for o in ops)


def test_execute_runs_the_plan_lower_gives_of_an_sm90a_program_and_mma_on_request():
    p = _program(TAIL)
    r = infer_layouts(p)
    arrays, ref = _arrays(TAIL)
    assert isinstance(codegen.lower(p, r), hopper.HopperGemm)  # what execute runs (test_hopper_execute)
    for options in ({}, {"gemm_instruction": "mma"}):
        out = codegen.execute(p, r, {"A": arrays["A"], "B": arrays["B"]}, **options)["C"].astype(np.float64)
        assert np.allclose(out, ref, rtol=2.0**-10, atol=1e-3)


def test_an_epilogue_that_synchronises_the_block_meets_at_the_consumers_named_barrier():
    q = programs.gemm_rowmax_bias(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, target="sm_90a")
    src = codegen.emit_cuda(q, infer_layouts(q))  # was refused: the producer warp group never reaches a barrier
    assert src.count("__syncthreads()") == 1 and src.count('"bar.sync 1, 256;') == 2


@needs_cxx
def test_the_harness_refuses_a_tensor_map_the_driver_would():
    _, h = _plan(MAIN)
    src = hopper_cuda.print_module(h)
    assert "a_strides[1] = {512ull}" in src
    arrays, _ = _arrays(MAIN)
    with pytest.raises(HarnessError, match=r"globalStrides\[0\] = 520 is not a multiple of 16"):
        run_cuda(src.replace("a_strides[1] = {512ull}", "a_strides[1] = {520ull}"), arrays)


@needs_cxx
@pytest.mark.skipif(not SWEEP, reason="AddressSanitizer build: with the sweep (LAYOUTKIT_CUDA_CPU_SWEEP=1)")
def test_sm90a_kernel_runs_clean_under_address_sanitizer():
    cfg = OTHERS[0]
    _, h = _plan(cfg)
    arrays, ref = _arrays(cfg)
    got = run_cuda(hopper_cuda.print_module(h), arrays, sanitize=True).arrays["C"].astype(np.float64)
    assert np.allclose(got, ref, rtol=2.0**-10, atol=1e-3)
