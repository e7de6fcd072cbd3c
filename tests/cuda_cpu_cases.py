"""The CUDA kernels the code-generation tests emit, each with inputs and its numpy reference, for the CPU
harness (:mod:`layoutkit.testing.cuda_cpu`).  ``CASES`` maps a case name to a function returning a
:class:`Case`; ``REPRESENTATIVE`` is the subset ``make test`` runs (every PTX instruction family, every
operand type, 1-4 stages, 128/256 threads, tails, transposes, epilogues, reductions, conversions)."""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from layoutkit.backends.nv import ir
from layoutkit.backends.nv.cuda import print_module
from layoutkit.backends.nv.execute import from_bf16, np_dtype, to_bf16
from layoutkit.codegen import lower
from layoutkit.infer import infer_layouts, programs
from layoutkit.scopes import GLOBAL

from .test_codegen import FP16, INT8, _relu_program, _with_c
from .test_codegen_conversions import column_sum_bias, row_sum_bias, transpose_through
from .test_codegen_nv_epilogue import (
    GEMMS,
    HOPPER,
    ROWMAX,
    TURING,
    _fragment_reduce,
    _gemm_case,
    _last_tile,
    _reduce_program,
    _scaled_rowsum,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@dataclass(frozen=True)
class Case:
    """A printed kernel, its arrays (every parameter) and the expected outputs: name -> (array, rtol, atol),
    ``rtol is None`` meaning exactly equal."""

    source: str
    kernel: ir.Kernel
    arrays: dict
    expect: dict


def _case(p, inputs: dict, expect: dict, *, model=None, widen_c: str | None = None) -> Case:
    r = infer_layouts(p, cost_model=model) if model else infer_layouts(p)
    k = lower(p, r, gemm_instruction="mma")  # the IR kernel (sm_90 TMA-fed GEMMs default to wgmma: test_hopper)
    if widen_c:
        k = _with_c(k, widen_c)
    arrays = {}
    for b in k.scoped(GLOBAL):
        if b.name in inputs:
            arrays[b.name] = np.ascontiguousarray(inputs[b.name]).reshape(-1)
        else:
            arrays[b.name] = np.zeros(b.size, np_dtype(b.dtype))
    return Case(print_module([k]), k, arrays, expect)


def _rng(seed):
    return np.random.default_rng(seed)


def fp16_gemm(M, N, K, bM, bN, bK, tb, stages=2, threads=128, target="sm_80", seed=0, policy="square"):
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, transpose_B=tb, num_stages=stages, threads=threads,
                      target=target, policy=policy)
    rng = _rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    # the fp32 accumulator itself (C widened): fp32 rounding only
    return _case(p, {"A": a, "B": b}, {"C": (ref.reshape(-1), 1e-5, 1e-5 * np.sqrt(K))}, widen_c="float32")


def fp16_gemm_half_c(M, N, K, bM, bN, bK, tb):
    """The kernel as emitted: an fp16 C through the half2 epilogue."""
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, transpose_B=tb)
    rng = _rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    return _case(p, {"A": a, "B": b}, {"C": (ref.reshape(-1), 2.0**-10, 2.0**-12)})


def int8_gemm(M, N, K, bM, bN, bK, tb):
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, dtype="int8", accum_dtype="int32", transpose_B=tb)
    rng = _rng(2)
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (N, K) if tb else (K, N)).astype(np.int8)
    ref = a.astype(np.int64) @ (b.T if tb else b).astype(np.int64)
    return _case(p, {"A": a, "B": b}, {"C": (ref.astype(np.int8).reshape(-1), None, None)})  # C wraps


def typed_gemm(i):
    """``GEMMS[i]`` of the operand-type tests (bf16, tf32, int8, uint8; B both ways), C widened to the
    accumulator type."""
    case = GEMMS[i]
    dtype = case[0]
    p, a, b, ref = _gemm_case(case)
    if dtype in ("int8", "uint8"):
        return _case(p, {"A": a, "B": b}, {"C": (ref.astype(np.int32).reshape(-1), None, None)}, widen_c="int32")
    return _case(p, {"A": a, "B": b}, {"C": (ref.reshape(-1), 1e-5, 1e-5 * np.sqrt(case[3]))}, widen_c="float32")


def bf16_out_gemm():
    """bf16 operands and a bf16 C (the float -> bf16 epilogue conversion)."""
    p, a, b, ref = _gemm_case(GEMMS[0])
    want = from_bf16(to_bf16(ref)).astype(np.float64)
    return _case(p, {"A": a, "B": b}, {"C": (to_bf16(want).reshape(-1), "bf16", 1)})


def x2_gemm(dtype, tb):
    M, N, K, bK = 64, 40, 64, 32 if dtype == "float16" else 64
    p = programs.gemm(M=M, N=N, K=K, bM=64, bN=32, bK=bK, policy="fullcol", transpose_B=tb, dtype=dtype,
                      accum_dtype="int32" if dtype == "int8" else "float32")
    rng = _rng(3)
    a = rng.integers(-3, 3, (M, K)).astype(dtype)
    b = rng.integers(-3, 3, (N, K) if tb else (K, N)).astype(dtype)
    ref = a.astype(np.int64) @ (b.T if tb else b).astype(np.int64)
    return _case(p, {"A": a, "B": b}, {"C": (ref.astype(dtype).reshape(-1), None, None)})


def rowmax(i):
    M, N, K, b, threads = ROWMAX[i]
    p = programs.gemm_rowmax_bias(M=M, N=N, K=K, bM=b, bN=b, bK=32, threads=threads)
    rng = _rng(0)
    a, bm = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    bias = (_rng(1).standard_normal(N) - 4).astype(np.float32)
    ref = a.astype(np.float64) @ bm.astype(np.float64) + bias
    return _case(p, {"A": a, "B": bm, "Bias": bias},
                 {"C": (ref.reshape(-1), 2.0**-10, 2.0**-12),
                  "RowMax": (_last_tile(ref, b, 1).max(axis=1), 1e-5, 1e-5)})


def int8_rowmax():
    p = programs.gemm_rowmax_bias(M=100, N=64, K=128, bM=64, bN=64, bK=64, dtype="int8", accum_dtype="int32")
    rng = _rng(8)
    a, b = rng.integers(-128, 128, (100, 128)).astype(np.int8), rng.integers(-128, 128, (128, 64)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 64).astype(np.int32)
    ref = a.astype(np.int64) @ b.astype(np.int64) + bias
    return _case(p, {"A": a, "B": b, "Bias": bias}, {"RowMax": (ref.max(axis=1).astype(np.int32), None, None),
                                                     "C": (ref.astype(np.int8).reshape(-1), None, None)})


def reduce_case(kind, dim, clear, shape):
    M, N, K, b, threads = shape
    p = _reduce_program(M, N, K, b, kind, dim, clear, threads)
    rng = _rng(2)
    a, bm = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ bm.astype(np.float64)
    part = _last_tile(ref if dim == 1 else ref.T, b, 1)
    want = {"sum": part.sum(axis=1), "max": part.max(axis=1), "min": part.min(axis=1)}[kind]
    if not clear:
        want = want + 1.5 if kind == "sum" else {"max": np.maximum, "min": np.minimum}[kind](want, 1.5)
    return _case(p, {"A": a, "B": bm}, {"C": (ref.reshape(-1), 1e-5, 1e-5), "R": (want, 1e-5, 1e-4)})


def fragment_reduce(M, N, b, kind, dim, threads):
    p = _fragment_reduce(M, N, b, kind, dim, threads)
    a = _rng(3).standard_normal((M, N)).astype(np.float32)
    part = _last_tile(a if dim == 1 else a.T, b, 1)
    want = {"sum": part.sum(axis=1), "max": part.max(axis=1), "min": part.min(axis=1)}[kind]
    return _case(p, {"A": a}, {"R": (want, 1e-5, 1e-5)})


def scaled_rowsum():
    q = _scaled_rowsum()
    rng = _rng(9)
    a, sc = rng.standard_normal((100, 72)).astype(np.float16), rng.standard_normal(72).astype(np.float16)
    prod = (a.astype(np.float32) * sc.astype(np.float32)).astype(np.float16)
    tol = 2.0**-10 * 11 * np.abs(prod[:, 64:]).sum(axis=1).max()
    return _case(q, {"A": a, "S": sc}, {"O": (prod.reshape(-1), None, None),
                                        "R": (prod[:, 64:].astype(np.float64).sum(axis=1), 0, tol)})


def elementwise(M, N, b):
    p = programs.elementwise(M=M, N=N, bM=b, bN=b)
    a = _rng(1).standard_normal((M, N)).astype(np.float16)
    return _case(p, {"A": a}, {"B": (a.reshape(-1), None, None)})


def relu():
    p = _relu_program(100, 72, 64)
    a = _rng(2).standard_normal((100, 72)).astype(np.float16)
    return _case(p, {"A": a}, {"B": (np.maximum(a, 0).reshape(-1), None, None)})


def hopper(i):
    M, N, K, b, threads, tb = HOPPER[i]
    return fp16_gemm(M, N, K, b, b, 32, tb, threads=threads, target="sm_90", seed=7)


def turing(i):
    M, N, K, b, stages = TURING[i]
    return fp16_gemm(M, N, K, b, b, 32, False, stages=stages, target="sm_75", seed=6)


def _tiles(x, b):
    return x.reshape(x.shape[0] // b, b, x.shape[1] // b, b).transpose(0, 2, 1, 3)


def conversion(which):
    """Layout conversions through shared memory (each 32 x 32 or 64 x 64 tile of a 256 x 256 tensor)."""
    if which == "transpose":
        a = np.arange(256 * 256, dtype=np.float32).reshape(256, 256) * 0.5 - 7
        want = _tiles(a, 64).transpose(0, 1, 3, 2)  # each tile transposed in place
        return _case(transpose_through(), {"Gi": a}, {"Go": (_untiles(want).reshape(-1), None, None)},
                     model="smem-aware")
    a = (np.arange(256 * 256) % 13 - 6).astype(np.float32).reshape(256, 256)  # small integers: exact sums
    t = _tiles(a, 32)
    if which == "row_sum":
        want = t + t.sum(axis=3)[:, :, None, :]  # y[i, j] = x[i, j] + sum_k x[j, k]
        return _case(row_sum_bias(), {"G": a}, {"H": (_untiles(want).reshape(-1), None, None)})
    want = t + t.sum(axis=2)[:, :, :, None]  # y[i, j] = x[i, j] + sum_k x[k, i]
    return _case(column_sum_bias(), {"G": a}, {"H": (_untiles(want).reshape(-1), None, None)})


def _untiles(t):
    return t.transpose(0, 2, 1, 3).reshape(t.shape[0] * t.shape[2], t.shape[1] * t.shape[3])


def example(name):
    p = runpy.run_path(str(EXAMPLES / name))["program"]()
    rng = _rng(5)
    if name == "elementwise.py":
        a, b = (rng.standard_normal((1024, 1024)).astype(np.float16) for _ in range(2))
        return _case(p, {"A": a, "B": b},
                     {"C": ((a.astype(np.float32) * b.astype(np.float32)).astype(np.float16).reshape(-1), None, None)})
    a, b = (rng.standard_normal((1024, 1024)).astype(np.float16) for _ in range(2))
    bias = rng.standard_normal(1024).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64) + bias
    return _case(p, {"A": a, "B": b, "bias": bias}, {"C": (ref.reshape(-1), 2.0**-10, 2.0**-10),
                                                     "RowMax": (_last_tile(ref, 64, 1).max(axis=1), 1e-5, 1e-4)})


CASES = {}
for _c in FP16:
    CASES["fp16_" + "x".join(map(str, _c[:6])) + ("_tb" if _c[6] else "")] = (fp16_gemm, _c)
CASES["fp16_half_c_tail"] = (fp16_gemm_half_c, (100, 72, 40, 32, 32, 32, False))
CASES["fp16_half_c_tb"] = (fp16_gemm_half_c, (96, 80, 48, 32, 32, 32, True))
for _c in INT8:
    CASES["int8_" + "x".join(map(str, _c[:6]))] = (int8_gemm, _c)
for _s in (1, 3, 4):
    CASES[f"fp16_stages{_s}"] = (fp16_gemm, (100, 72, 160, 64, 64, 32, False, _s))
CASES["int8_kn_int8_c_tail"] = (int8_gemm, (100, 80, 72, 64, 64, 32, False))  # words + prmt, int8 C, all tails
CASES["fp16_half_c_n100"] = (fp16_gemm_half_c, (64, 100, 32, 32, 32, 32, False))  # staged runs of 4 (N % 8 != 0)
for _i, _g in enumerate(GEMMS):
    CASES[f"{_g[0]}_{'x'.join(map(str, _g[1:7]))}{'_tb' if _g[7] else ''}_{_g[8]}"] = (typed_gemm, (_i,))
CASES["bf16_c"] = (bf16_out_gemm, ())
for _d, _t in [("float16", False), ("float16", True), ("int8", True)]:
    CASES[f"x2_{_d}{'_tb' if _t else ''}"] = (x2_gemm, (_d, _t))
for _cfg in [(256, 32, 64, 32, "sm_80"), (256, 128, 128, 32, "sm_80"), (64, 128, 64, 32, "sm_90"),
             (128, 64, 128, 64, "sm_90")]:
    _th, _bM, _bN, _bK, _tg = _cfg
    CASES[f"threads{_th}_{_bM}x{_bN}x{_bK}_{_tg}"] = (
        fp16_gemm, (2 * _bM - 7, 2 * _bN - 3, 3 * _bK - 8, _bM, _bN, _bK, False, 2, _th, _tg))
for _i in range(len(ROWMAX)):
    CASES["rowmax_" + "x".join(map(str, ROWMAX[_i]))] = (rowmax, (_i,))
CASES["int8_rowmax"] = (int8_rowmax, ())
for _k, _dim, _cl in [("sum", 1, True), ("min", 1, False), ("max", 0, True), ("sum", 0, False)]:
    for _sh in [(100, 72, 64, 32, 128), (130, 150, 64, 128, 256)]:
        CASES[f"reduce_{_k}{_dim}{'c' if _cl else ''}_{_sh[3]}_{_sh[4]}"] = (reduce_case, (_k, _dim, _cl, _sh))
for _fc in [(64, 64, 64, "sum", 1, 128), (100, 72, 64, "max", 1, 128), (128, 128, 128, "sum", 0, 256),
            (70, 40, 32, "min", 0, 64)]:
    CASES["fragreduce_" + "_".join(map(str, _fc))] = (fragment_reduce, _fc)
CASES["scaled_rowsum"] = (scaled_rowsum, ())
for _e in [(128, 128, 64), (100, 72, 64), (64, 66, 32)]:
    CASES["elementwise_" + "x".join(map(str, _e))] = (elementwise, _e)
CASES["relu"] = (relu, ())
for _i in range(len(HOPPER)):
    CASES[f"sm90_{_i}"] = (hopper, (_i,))
for _i in range(len(TURING)):
    CASES[f"sm75_{_i}"] = (turing, (_i,))
for _w in ("transpose", "row_sum", "column_sum"):
    CASES[f"conversion_{_w}"] = (conversion, (_w,))
for _x in ("gemm_bias_rowmax.py", "elementwise.py"):
    CASES[f"example_{_x[:-3]}"] = (example, (_x,))

REPRESENTATIVE = [
    "fp16_100x72x40x32x32x32",  # M, N and K tails, 2 stages
    "fp16_96x80x48x32x32x32_tb",  # B transposed: ldmatrix without .trans
    "fp16_half_c_tail",  # the half2 epilogue with guards
    "fp16_stages1",
    "fp16_stages4",
    "bfloat16_150x130x72x64x64x32_tb_square",
    "bf16_c",  # a bf16 C: the float -> bf16 conversion of the epilogue
    "float32_100x72x40x64x64x32_square",  # tf32, m16n8k8
    "int8_100x72x96x64x64x32_square",  # an 8-bit B [K, N]: word loads, prmt transposes
    "int8_kn_int8_c_tail",  # the same with an int8 C through the staged epilogue
    "uint8_96x80x64x32x32x32_tb_square",  # m16n8k32 u8
    "x2_float16",  # ldmatrix.x2.trans
    "threads256_128x128x32_sm_80",
    "rowmax_100x150x72x64x128",  # bias + row max epilogue: shuffles and a shared cross-warp step
    "reduce_min1_128_256",
    "fragreduce_70_40_32_min_0_64",
    "conversion_transpose",  # a layout conversion through shared memory
    "sm75_2",  # m16n8k8 f16 without cp.async, 3 stages
]


def make(name: str) -> Case:
    fn, args = CASES[name]
    return fn(*args)
