"""One GEMM plan for the NVIDIA target (``layoutkit.targets.nv.gemm_plan``): the ``mma.sync`` lowering, the sm_90a
``wgmma`` lowering and the TileLang ``T.gemm`` TIR builder hold the same plan type and agree on a tile."""

import pytest

from layoutkit.backends.nv import hopper
from layoutkit.backends.nv.lower import gemm_launch, gemm_ops
from layoutkit.errors import UnsupportedError
from layoutkit.frontends.tilelang_gemm import mma_plan
from layoutkit.infer import infer_layouts, programs
from layoutkit.targets import nv
from layoutkit.targets.nv.gemm_plan import PTX_TYPES, mma_sync_opcode


def _launch(**kw):
    p = programs.gemm(**kw)
    return gemm_launch(p, infer_layouts(p), gemm_ops(p))


@pytest.mark.parametrize("dtype,acc,tb,bM,bN,threads", [
    ("float16", "float32", False, 64, 64, 128),
    ("float16", "float32", True, 128, 64, 256),
    ("bfloat16", "float32", False, 64, 32, 128),
    ("int8", "int32", True, 64, 64, 128),
])
def test_mma_lowering_and_tilelang_hold_one_plan(dtype, acc, tb, bM, bN, threads):
    L = _launch(M=256, N=256, K=256, bM=bM, bN=bN, bK=64, threads=threads, dtype=dtype, accum_dtype=acc,
                out_dtype=acc, transpose_B=tb)
    t = mma_plan(dtype, dtype, acc, bM, bN, 64, threads, L.plan.warps, False, tb)
    assert type(L.plan) is type(t.gemm) is nv.GemmPlan
    assert L.plan == t.gemm


def test_wgmma_lowering_holds_the_plan():
    p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
    h = hopper.plan(p, infer_layouts(p))
    assert type(h.plan) is nv.GemmPlan
    assert (h.plan.instruction, h.plan.name, h.plan.warps, h.plan.a_load) == ("wgmma", "m64n64k16", (4, 2),
                                                                                  "descriptor")
    assert h.plan == nv.gemm_plan("float16", "float16", "float32", 128, 128, 64, 256, (4, 2), arch="sm_90a",
                                  instruction="wgmma")
    assert (h.dtype, h.bM, h.bN, h.bK, h.tb, h.k_step) == ("float16", 128, 128, 64, False, 16)


def test_sm75_plan_splits_k():
    L = _launch(M=128, N=128, K=128, bM=64, bN=64, bK=32, target="sm_75")
    assert (L.plan.name, L.plan.issued, L.plan.k_split, L.turing) == ("m16n8k16", "m16n8k8", 2, True)


def test_relabelled_b_words_are_the_plans_load():
    from layoutkit.backends.nv.lower import lower

    p = programs.gemm(M=64, N=64, K=64, bM=64, bN=64, bK=32, dtype="float32", accum_dtype="float32")
    k = lower(p, infer_layouts(p))
    assert any(getattr(st, "vec", 1) == 4 for st in _walk(k.body) if getattr(st, "src", None) == "B_s")
    plan = nv.gemm_plan("float32", "float32", "float32", 64, 64, 32, 128, (2, 2))
    assert (plan.name, plan.b_load) == ("m16n8k8", "registers")  # the lowering swaps in word loads


def _walk(stmts):
    for st in stmts:
        yield st
        yield from _walk(getattr(st, "body", ()))


def test_one_ptx_table():
    assert mma_sync_opcode("m16n8k8", "float32", "float32", "float32") == \
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
    assert {PTX_TYPES[d][0] for d in ("float8_e4m3", "float8_e4m3fn")} == {"e4m3"}
    assert nv.ptx_type("float16", "accumulator") == "f16"


@pytest.mark.parametrize("args,kw,match", [
    (("float16", "float16", "float32", 64, 64, 32, 128, (2, 2)), {"arch": "sm_70"}, "need sm_80"),
    (("float16", "int8", "float32", 64, 64, 32, 128, (2, 2)), {}, "one width"),
    (("float64", "float64", "float64", 64, 64, 32, 128, (2, 2)), {}, "no NVIDIA tensor-core operand type"),
    (("float16", "float16", "float32", 48, 64, 32, 128, (2, 2)), {}, "multiple of 16 rows"),
    (("float16", "float16", "float32", 64, 64, 32, 128, (2, 2)), {"instruction": "wgmma", "arch": "sm_90a"},
     "whole warp groups"),
    (("float8_e4m3", "float8_e4m3", "float32", 64, 64, 64, 128, (4, 1)), {"instruction": "wgmma", "arch": "sm_90a"},
     "K-major"),
])
def test_refusals_name_what_is_unsupported(args, kw, match):
    with pytest.raises(UnsupportedError, match=match):
        nv.gemm_plan(*args, **kw)
