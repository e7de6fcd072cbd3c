"""sm_90: ``execute()`` runs the wgmma kernel ``emit_cuda()`` prints (backends/nv/hopper_execute.py).

The executed plan is the one ``lower()`` gives and the printer prints; the executor reads its operands through
the printed descriptors (a perturbed stride, swizzle mode, transpose bit or tensor-map swizzle gives wrong
numbers, an offset the PTX ISA ignores does not); numbers match numpy over tails, one and two consumer warp
groups, 2-4 stages, fp16 / bf16 / fp8 operands and every epilogue the plan picks (direct stores, the TMA store,
the program's own shared staging); ``gemm_instruction="mma"`` keeps the ``mma.sync`` IR.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from layoutkit import codegen
from layoutkit.backends.nv import hopper, hopper_cuda, hopper_execute, ir
from layoutkit.backends.nv.hopper_epilogue_cuda import StoreKnobs
from layoutkit.dtypes import from_bf16, from_fp8, to_bf16
from layoutkit.infer import infer_layouts, programs

from .test_hopper_fp8 import decode_fp8

# (M, N, K, bM, bN, bK, consumer threads, stages, transpose_B, dtype, out_dtype)
CASES = {
    "f16_two_groups_tails": (200, 136, 120, 128, 128, 64, 256, 3, False, "float16", "float16"),
    "f16_one_group_tb_n128": (200, 136, 120, 64, 128, 64, 128, 2, True, "float16", "float16"),
    "f16_span64_stages4": (130, 72, 96, 64, 64, 32, 128, 4, False, "float16", "float16"),
    "bf16_n256_stages3": (64, 256, 128, 64, 256, 64, 128, 3, False, "bfloat16", "bfloat16"),
    "bf16_two_groups_tb_f32_out": (130, 200, 72, 128, 128, 32, 256, 2, True, "bfloat16", "float32"),
    "e4m3_tb_tails": (136, 72, 96, 64, 64, 64, 128, 2, True, "float8_e4m3", "float32"),
    "e5m2_tb_two_groups": (128, 128, 160, 128, 128, 64, 256, 3, True, "float8_e5m2", "float32"),
}


def _program(cfg, shared_epilogue=False):
    M, N, K, bM, bN, bK, threads, stages, tb, dtype, out = cfg
    if shared_epilogue:
        return programs.gemm_shared_epilogue(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, threads=threads, target="sm_90a")
    return programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, threads=threads, num_stages=stages, dtype=dtype,
                         out_dtype=out, transpose_B=tb, target="sm_90a")


def _operands(cfg, seed=5):
    """Stored operands and their float64 values."""
    M, N, K, *_, tb, dtype, _ = cfg
    rng = np.random.default_rng(seed)
    shapes = ((M, K), (N, K) if tb else (K, N))
    if dtype.startswith("float8"):
        codes = [rng.integers(0, 256, s).astype(np.uint8) for s in shapes]
        codes = [np.where(np.isfinite(from_fp8(c, dtype)) & (np.abs(from_fp8(c, dtype)) < 64), c, 0).astype(np.uint8)
                 for c in codes]
        return codes, [from_fp8(c, dtype).astype(np.float64) for c in codes]
    vals = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if dtype == "bfloat16":
        stored = [to_bf16(v) for v in vals]
        return stored, [from_bf16(s).astype(np.float64) for s in stored]
    stored = [v.astype(np.float16) for v in vals]
    return stored, [s.astype(np.float64) for s in stored]


def _check(cfg, out, a, b):
    tb, out_dtype = cfg[8], cfg[10]
    ref = a @ (b.T if tb else b)
    out = out.reshape(ref.shape)
    got = from_bf16(out) if out_dtype == "bfloat16" else out.astype(np.float64)
    eps = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-20}[out_dtype]
    scale = np.sqrt(np.abs(a) ** 2 @ (np.abs(b.T if tb else b)) ** 2)  # the size of the summands
    assert np.all(np.abs(got - ref) <= 2 * eps * np.abs(ref) + 1e-5 * scale + 1e-6), np.abs(got - ref).max()


@pytest.mark.parametrize("name", sorted(CASES))
def test_execute_of_the_wgmma_kernel_equals_numpy(name):
    cfg = CASES[name]
    p = _program(cfg)
    r = infer_layouts(p)
    assert isinstance(codegen.lower(p, r), hopper.HopperGemm)
    (sa, sb), (a, b) = _operands(cfg)
    _check(cfg, codegen.execute(p, r, {"A": sa, "B": sb})["C"], a, b)


def test_the_tma_store_and_the_register_stores_and_the_programs_staging_all_run():
    cfg = CASES["f16_two_groups_tails"]
    p = _program(cfg)
    r = infer_layouts(p)
    (sa, sb), (a, b) = _operands(cfg)
    for tma_store in (True, False):
        h = codegen.lower(p, r, tma_store=tma_store)
        assert bool(hopper.stores(h)) == tma_store
        _check(cfg, codegen.execute(p, r, {"A": sa, "B": sb}, tma_store=tma_store)["C"], a, b)
    staged = _program(cfg, shared_epilogue=True)
    rs = infer_layouts(staged)
    assert hopper.stores(codegen.lower(staged, rs))[0].tile.buffer == "C_shared"
    _check(cfg, codegen.execute(staged, rs, {"A": sa, "B": sb})["C"], a, b)


def test_execute_runs_the_plan_lower_gives_and_emit_cuda_prints(monkeypatch):
    cfg = CASES["f16_two_groups_tails"]
    p = _program(cfg)
    r = infer_layouts(p)
    (sa, sb), _ = _operands(cfg)
    ran = []
    real = hopper_execute.run

    def record(h, arrays, knobs=None):
        ran.append(h)
        return real(h, arrays, knobs)

    monkeypatch.setattr(hopper_execute, "run", record)
    for options in ({}, {"tma_store": False}):
        out = codegen.execute(p, r, {"A": sa, "B": sb}, **options)["C"]
        plan = codegen.lower(p, r, **options)
        assert ran[-1] == plan and hopper_cuda.print_module(ran[-1]) == codegen.emit_cuda(p, r, **options)
        assert np.array_equal(out.reshape(-1), real(plan, {"A": sa, "B": sb})["C"])  # one computation, same bits
    n = len(ran)
    mma = codegen.execute(p, r, {"A": sa, "B": sb}, gemm_instruction="mma")["C"]  # the mma.sync IR on request
    assert len(ran) == n and isinstance(codegen.lower(p, r, gemm_instruction="mma"), ir.Kernel)
    assert np.allclose(mma.astype(np.float64), out.astype(np.float64), rtol=2.0**-9, atol=1e-2)


def test_the_executor_reads_the_printed_descriptors():
    cfg = CASES["f16_one_group_tb_n128"][:8] + (False, "float16", "float16")  # MN-major B, wgmma n128: 2 chunks
    p = _program(cfg)
    h = hopper.plan(p, infer_layouts(p))
    assert h.b.major == "MN" and h.tiles[0][0].n == 128
    src = hopper_cuda.print_module(h)
    printed = [int(x, 16) for x in re.findall(r"const unsigned long long d[ab] = 0x([0-9a-f]{16})ull", src)]
    assert printed == list(hopper_cuda.descriptor_highs(h))  # the high words the executor or's with the start
    (sa, sb), (a, b) = _operands(cfg)
    _check(cfg, hopper_execute.run(h, {"A": sa, "B": sb})["C"], a, b)
    wrong = {"a_sbo": hopper_cuda.Knobs(a_sbo=4 * h.a.span), "b_sbo": hopper_cuda.Knobs(b_sbo=4 * h.b.span),
             "b_lbo": hopper_cuda.Knobs(b_lbo=h.b.chunk_bytes // 2), "a_mode": hopper_cuda.Knobs(a_desc_swizzle=32),
             "b_mode": hopper_cuda.Knobs(b_desc_swizzle=64), "trans_b": hopper_cuda.Knobs(trans_b=0),
             "a_map": hopper_cuda.Knobs(a_map_swizzle=0), "ab_type": hopper_cuda.Knobs(ab_type="bf16"),
             "store_map": hopper_cuda.Knobs(store=StoreKnobs(map_swizzle=0))}
    ref = a @ b
    for name, knobs in wrong.items():
        assert f"0x{hopper_cuda.descriptor_highs(h, knobs)[0]:016x}ull" in hopper_cuda.print_module(h, knobs)
        with np.errstate(all="ignore"):
            got = hopper_execute.run(h, {"A": sa, "B": sb}, knobs)["C"].reshape(ref.shape).astype(np.float64)
        assert not np.allclose(got, ref, rtol=1e-2, atol=1e-1), name
    same = hopper_execute.run(h, {"A": sa, "B": sb}, hopper_cuda.Knobs(a_lbo=4096))["C"]  # K-major, swizzled:
    assert np.array_equal(same, hopper_execute.run(h, {"A": sa, "B": sb})["C"])  # the ISA ignores the leading offset


@pytest.mark.parametrize("dtype", ["float8_e4m3", "float8_e5m2"])
def test_the_fp8_decode_table_matches_the_formats_definition(dtype):
    codes = np.arange(256, dtype=np.uint8)
    assert np.array_equal(from_fp8(codes, dtype).astype(np.float64), decode_fp8(codes, dtype), equal_nan=True)
