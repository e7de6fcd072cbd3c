"""sm_90a fp8 GEMMs (e4m3 / e5m2 operands, float32 accumulators) on the wgmma path.

The fp8 form of the kernel: TMA boxes of 1-byte elements, ``wgmma.mma_async m64nNk32 .e4m3 / .e5m2`` without
transpose operands (the PTX ISA takes K-major 8-bit operands only, so B is stored ``[N, K]``), the CPU harness
decoding fp8 bytes from the formats' definitions.  The harness's decode is checked code by code (an identity
GEMM over every byte) against a decoder written here from the same definitions, itself checked against a
hand-written table and, when installed, ml_dtypes; the kernels equal numpy (float64 products of the decoded
values), tails included; an fp8 instruction-field mutation and an ISA-illegal transposed form are caught; with
nvcc / cuobjdump the kernel compiles for sm_90a and its SASS holds the fp8 warp-group MMA (QGMMA ... E4M3).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from layoutkit import codegen
from layoutkit.backends.nv import hopper, hopper_cuda
from layoutkit.errors import UnsupportedError
from layoutkit.infer import infer_layouts, programs
from layoutkit.testing.cuda_cpu import HarnessError, run_cuda
from layoutkit.testing.cuda_cpu.translate import TranslationError

from .sass_tools import compile_sm90a, sass_opcodes
from .test_hopper import SWEEP, needs_cxx

E4M3, E5M2 = "float8_e4m3", "float8_e5m2"
# (M, N, K, bM, bN, bK, consumer threads, stages, dtype); B is [N, K] (K-major) throughout
MAIN = (256, 256, 256, 128, 128, 64, 256, 3, E4M3)
TAIL = (200, 136, 112, 128, 128, 64, 256, 3, E5M2)  # M, N and K tails: TMA zero fill (K rows of 16 bytes)
WIDE = (130, 264, 160, 64, 256, 128, 128, 2, E4M3)  # bK 128: 128-byte rows; one consumer group, n256 (tail)
NARROW = (128, 64, 96, 64, 64, 32, 128, 3, E4M3)  # bK 32: 32-byte rows (32-byte swizzle), one k32 step a tile
DEEP = (192, 128, 256, 128, 128, 256, 256, 2, E5M2)  # bK 256: two 128-byte chunks of K per row


def decode_fp8(codes: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values of fp8 bytes: e4m3 (bias 7, 3 mantissa bits, no infinities, S.1111.111 NaN) or e5m2
    (bias 15, 2 mantissa bits, exponent 31 infinity / NaN); exponent 0 is subnormal."""
    c = np.asarray(codes, np.int64)
    mbits, bias, top = (3, 7, 15) if dtype == E4M3 else (2, 15, 31)
    sign = np.where(c >> 7, -1.0, 1.0)
    e, m = (c >> mbits) & top, c & ((1 << mbits) - 1)
    frac = m / 2.0**mbits
    v = np.where(e == 0, np.ldexp(frac, 1 - bias), np.ldexp(1.0 + frac, e - bias))
    if dtype == E4M3:
        v = np.where((e == 15) & (m == 7), np.nan, v)
    else:
        v = np.where(e == 31, np.where(m == 0, np.inf, np.nan), v)
    return sign * v


TABLE = {  # code -> value, by hand from the formats' definitions
    E4M3: {0x00: 0.0, 0x01: 2.0**-9, 0x07: 7 * 2.0**-9, 0x08: 2.0**-6, 0x38: 1.0, 0x39: 1.125, 0x40: 2.0,
           0x54: 12.0, 0x77: 240.0, 0x7E: 448.0, 0x7F: math.nan, 0x80: -0.0, 0xB8: -1.0, 0xFE: -448.0,
           0xFF: math.nan, 0x78: 256.0},
    E5M2: {0x00: 0.0, 0x01: 2.0**-16, 0x03: 3 * 2.0**-16, 0x04: 2.0**-14, 0x3C: 1.0, 0x3D: 1.25, 0x40: 2.0,
           0x7B: 57344.0, 0x7C: math.inf, 0x7D: math.nan, 0x7F: math.nan, 0x80: -0.0, 0xBC: -1.0,
           0xFC: -math.inf, 0xFE: math.nan},
}
ONE = {E4M3: 0x38, E5M2: 0x3C}


@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_the_reference_decoder_matches_a_hand_written_table(dtype):
    codes = np.array(sorted(TABLE[dtype]))
    want = np.array([TABLE[dtype][c] for c in codes])
    got = decode_fp8(codes, dtype)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 too


@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_the_reference_decoder_matches_ml_dtypes_on_every_code(dtype):
    mld = pytest.importorskip("ml_dtypes")
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(mld.float8_e4m3fn if dtype == E4M3 else mld.float8_e5m2).astype(np.float64)
    assert np.array_equal(decode_fp8(codes, dtype), want, equal_nan=True)


def _program(cfg, out="float32"):
    M, N, K, bM, bN, bK, threads, stages, dtype = cfg
    return programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, threads=threads, num_stages=stages, dtype=dtype,
                         target="sm_90a", transpose_B=True, out_dtype=out)


def _finite_codes(rng, shape, dtype, limit):
    """Random fp8 codes of finite values of magnitude at most ``limit``."""
    codes = np.arange(256)
    vals = decode_fp8(codes, dtype)
    pool = codes[np.isfinite(vals) & (np.abs(vals) <= limit)].astype(np.uint8)
    return rng.choice(pool, size=shape)


def _equal_numpy(cfg, source, seed=5) -> bool:
    """The kernel's C (float32) against float64 products of the decoded operands: each element within the
    float32 roundings of its accumulation (relative to the sum of the products' magnitudes)."""
    M, N, K, *_, dtype = cfg
    rng = np.random.default_rng(seed)
    a, b = _finite_codes(rng, (M, K), dtype, 16.0), _finite_codes(rng, (N, K), dtype, 16.0)
    da, db = decode_fp8(a, dtype), decode_fp8(b, dtype)
    ref, scale = da @ db.T, np.abs(da) @ np.abs(db).T
    got = run_cuda(source, {"A": a, "B": b, "C": np.zeros((M, N), np.float32)}).arrays["C"].astype(np.float64)
    return bool(np.all(np.abs(got - ref) <= 2.0**-20 * scale + 1e-30))


# ---- the plan and the printed form -------------------------------------------------------------------------

def test_the_fp8_plan_steps_k32_over_byte_tiles_and_prints_the_isa_form():
    spans = [hopper.plan(q, infer_layouts(q)).a.span for q in map(_program, (NARROW, WIDE, DEEP))]
    assert spans == [32, 128, 128]
    p = _program(MAIN)
    h = hopper.plan(p, infer_layouts(p))
    assert (h.k_step, h.a.bits, h.a.span, h.a.chunk, h.b.major, h.tx_bytes) == (32, 8, 64, 64, "K", 2 * 128 * 64)
    src = hopper_cuda.print_module(h)
    form = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k32\.f32\.e4m3\.e4m3 \{[^}]*\}, %32, %33, p, 1, 1;", src)
    assert len(form) == 2 * 64 // 32  # two m64 blocks per consumer group, two k32 steps of bK = 64
    assert "k16" not in src and src.count("CU_TENSOR_MAP_DATA_TYPE_UINT8") == 2
    assert "const unsigned char* __restrict__ A" in src and "a_box[2] = {64u, 128u}" in src


def test_an_fp8_b_stored_k_by_n_is_refused_with_the_isa_reason():
    p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, dtype=E4M3,
                      target="sm_90a", out_dtype="float32")
    with pytest.raises(UnsupportedError, match=r"MN-major; wgmma with \.e4m3 / \.e5m2 operands takes no transpose"):
        codegen.emit_cuda(p, infer_layouts(p))


# ---- the CPU harness ---------------------------------------------------------------------------------------

@needs_cxx
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_the_harness_decodes_every_fp8_code(dtype):
    """C = A @ I with every code of the format in A: each finite code comes back as its value; a NaN code
    makes its row NaN, an infinity its own column infinite and the rest of its row NaN (inf x 0)."""
    cfg = (64, 64, 64, 64, 64, 64, 128, 2, dtype)
    codes = np.arange(256)
    vals = decode_fp8(codes, dtype)
    finite = codes[np.isfinite(vals)]
    a = np.full(64 * 64, ONE[dtype] ^ 0x80, np.int64)  # -1 pads the last rows
    a[:finite.size] = finite
    a = a.reshape(64, 64)
    special = [0x7F, 0xFF] if dtype == E4M3 else [0x7C, 0xFC, 0x7D, 0xFF]  # NaNs; +-inf and NaNs
    for i, c in enumerate(special):  # the last rows: one non-finite code each, at column 3
        a[60 + i] = 0
        a[60 + i, 3] = c
    b = np.where(np.eye(64, dtype=bool), ONE[dtype], 0).astype(np.uint8)
    p = _program(cfg)
    got = run_cuda(codegen.emit_cuda(p, infer_layouts(p)),
                   {"A": a.astype(np.uint8), "B": b, "C": np.zeros((64, 64), np.float32)}).arrays["C"]
    want = decode_fp8(a, dtype)
    assert np.array_equal(got[:60], want[:60])
    for i, c in enumerate(special):
        row = got[60 + i]
        if np.isnan(vals[c]):
            assert np.all(np.isnan(row)), (hex(c), row[:6])
        else:
            assert row[3] == vals[c] and np.all(np.isnan(np.delete(row, 3))), (hex(c), row[:6])
    assert finite.size == (254 if dtype == E4M3 else 248)


@needs_cxx
@pytest.mark.parametrize("cfg", [MAIN, TAIL, NARROW], ids=["e4m3_main", "e5m2_tail", "e4m3_bk32"])
def test_emitted_fp8_kernel_equals_numpy_on_the_cpu_harness(cfg):
    p = _program(cfg)
    assert _equal_numpy(cfg, codegen.emit_cuda(p, infer_layouts(p)))


@needs_cxx
def test_an_fp8_kernel_with_a_float16_c_equals_numpy_up_to_its_rounding():
    cfg = (72, 72, 80, 64, 64, 64, 128, 2, E5M2)  # tails in M, N and K
    M, N, K, *_ = cfg
    rng = np.random.default_rng(11)
    a, b = _finite_codes(rng, (M, K), E5M2, 4.0), _finite_codes(rng, (N, K), E5M2, 4.0)
    ref = decode_fp8(a, E5M2) @ decode_fp8(b, E5M2).T
    p = _program(cfg, out="float16")
    got = run_cuda(codegen.emit_cuda(p, infer_layouts(p)), {"A": a, "B": b, "C": np.zeros((M, N), np.float16)})
    c = got.arrays["C"].astype(np.float64)
    assert np.all(np.abs(c - ref) <= 2.0**-11 * np.abs(ref) + 2.0**-20 * (np.abs(decode_fp8(a, E5M2)) @
                                                                          np.abs(decode_fp8(b, E5M2)).T) + 1e-7)


@needs_cxx
@pytest.mark.skipif(not SWEEP, reason="the full sweep runs with `make test-cuda-cpu` (LAYOUTKIT_CUDA_CPU_SWEEP=1)")
@pytest.mark.parametrize("cfg", [WIDE, DEEP, MAIN[:8] + (E5M2,), TAIL[:8] + (E4M3,)], ids=str)
def test_every_fp8_configuration_equals_numpy(cfg):
    p = _program(cfg)
    assert _equal_numpy(cfg, codegen.emit_cuda(p, infer_layouts(p)))


MUTATIONS = {  # an fp8 printer bug in one field: the instruction's operand type, the descriptors' row step
    "ab_type_e5m2_over_e4m3": (MAIN, hopper_cuda.Knobs(ab_type="e5m2")),
    "ab_type_e4m3_over_e5m2": (TAIL, hopper_cuda.Knobs(ab_type="e4m3")),
    "a_sbo_of_16bit_rows": (MAIN, hopper_cuda.Knobs(a_sbo=8 * 128)),  # 128-byte rows: the 16-bit bK 64 stride
    "b_desc_swizzle_128": (MAIN, hopper_cuda.Knobs(b_desc_swizzle=128)),
}


@needs_cxx
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_fp8_fields_are_caught(name):
    cfg, knobs = MUTATIONS[name]
    p = _program(cfg)
    h = hopper.plan(p, infer_layouts(p))
    assert _equal_numpy(cfg, hopper_cuda.print_module(h))  # the unmutated kernel passes
    try:
        ok = _equal_numpy(cfg, hopper_cuda.print_module(h, knobs))
    except HarnessError as e:
        assert "cuda-cpu error" in str(e)
        return
    assert not ok, f"mutation {name} went unnoticed"


@needs_cxx
def test_a_transposed_fp8_wgmma_is_refused_as_no_isa_form():
    """imm-trans-b on .e4m3 operands: the PTX ISA has no such form; the harness does not run it."""
    p = _program(MAIN)
    h = hopper.plan(p, infer_layouts(p))
    src = hopper_cuda.print_module(h, hopper_cuda.Knobs(trans_b=1))
    assert "p, 1, 1, 0, 1;" in src
    with pytest.raises(TranslationError, match=r"no wgmma form of the PTX ISA .*e4m3 / e5m2: k32, 6 operands"):
        run_cuda(src, {"A": np.zeros((256, 256), np.uint8), "B": np.zeros((256, 256), np.uint8),
                       "C": np.zeros((256, 256), np.float32)})


# ---- nvcc / SASS ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cubin(tmp_path_factory):
    p = _program(TAIL[:8] + (E4M3,))
    return compile_sm90a(codegen.emit_cuda(p, infer_layouts(p)), tmp_path_factory.mktemp("sm90a_fp8"))


def test_the_fp8_kernel_compiles_for_sm90a_without_spills(cubin):
    assert cubin[0].stat().st_size > 0 and "0 bytes spill stores" in cubin[1]


def test_the_fp8_sass_holds_the_e4m3_warp_group_mma_and_tma(cubin):
    ops = sass_opcodes(cubin[0])
    mma = [o for o in ops if "GMMA" in o]
    assert mma and set(mma) == {"QGMMA.64x64x32.F32.E4M3.E4M3"}, sorted(set(mma))
    assert len(mma) in (4, 4 * 2)  # two m64 blocks x two k32 steps (nvcc may unroll the two k tiles)
    assert sum(o.startswith("UTMALDG") for o in ops) >= 2 and any(o.startswith("SYNCS") for o in ops)
