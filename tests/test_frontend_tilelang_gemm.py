"""layoutkit's ``T.gemm`` lowering on the ``mma.sync`` path (``layoutkit.frontends.tilelang_gemm``)
against TileLang 0.1.15's own (``cuda.mma``, its parsed MMA macros): over a grid of dtypes,
transpositions, operand scopes, warp policies, tile shapes, sub-regions and cleared accumulators, every
GEMM TileLang lowers is lowered by layoutkit to the same statement (same TIR, same names), and the
GEMMs layoutkit hands back (tf32, fp64) lower through TileLang's class to TileLang's CUDA."""

import pytest

from .tilelang_env import require_tilelang

tilelang = require_tilelang()

import tilelang.language as T  # noqa: E402

from layoutkit.frontends.tilelang import layoutkit_inference  # noqa: E402
from layoutkit.frontends.tilelang_gemm import MMA_IMPL, both_mma_lowerings, layoutkit_mma_lowering  # noqa: E402

pytestmark = pytest.mark.oracle

POLICIES = {"square": T.GemmWarpPolicy.Square, "fullrow": T.GemmWarpPolicy.FullRow,
            "fullcol": T.GemmWarpPolicy.FullCol}


def gemm_kernel(dtype="float16", accum="float32", trans_a=False, trans_b=False, scopes="ss", bM=64, bN=64, bK=32,
                threads=128, policy="square", clear=False, stages=0):
    """One block computing ``C = A @ B`` over two k-tiles with A / B in shared memory (``s``) or
    fragments (``r``); pipelined shared tiles (``stages``) give the GEMM a stage-sliced region."""
    K = 2 * bK
    a_shape, b_shape = ((K, bM) if trans_a else (bM, K)), ((bN, K) if trans_b else (K, bN))
    a_tile, b_tile = ((bK, bM) if trans_a else (bM, bK)), ((bN, bK) if trans_b else (bK, bN))
    alloc = {"s": T.alloc_shared, "r": T.alloc_fragment}

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((bM, bN), accum)):
        with T.Kernel(1, threads=threads) as _:
            A_s = alloc[scopes[0]](a_tile, dtype)
            B_s = alloc[scopes[1]](b_tile, dtype)
            C_l = T.alloc_fragment((bM, bN), accum)
            T.clear(C_l)
            for ko in T.Pipelined(2, num_stages=stages):
                if trans_a:
                    T.copy(A[ko * bK, 0], A_s)
                else:
                    T.copy(A[0, ko * bK], A_s)
                if trans_b:
                    T.copy(B[0, ko * bK], B_s)
                else:
                    T.copy(B[ko * bK, 0], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=trans_a, transpose_B=trans_b, policy=POLICIES[policy],
                       clear_accum=clear)
            T.copy(C_l, C)

    return main


def _lower(func, arch="sm_80"):
    target = {"kind": "cuda", "arch": arch}
    with tilelang.tvm.target.Target(target):
        return tilelang.lower(func, target=target).kernel_source


LOWERED = {
    "fp16": {},
    "fp16_trans_b": {"trans_b": True},
    "fp16_trans_a": {"trans_a": True},
    "fp16_trans_ab": {"trans_a": True, "trans_b": True},
    "bf16_fullcol_128x64": {"dtype": "bfloat16", "bM": 128, "policy": "fullcol"},
    "fp16_fullrow_n8_tiles": {"bN": 32, "policy": "fullrow"},
    "fp16_n8_tiles_trans_b": {"bM": 16, "bN": 32, "policy": "fullcol", "trans_b": True},
    "fp16_accum_fp16": {"accum": "float16"},
    "fp16_256_threads_3_stages": {"bN": 128, "threads": 256, "stages": 3},
    "fp16_pipelined": {"stages": 2},
    "int8_trans_b": {"dtype": "int8", "accum": "int32", "bK": 64, "trans_b": True},
    "int8_register_loads_b": {"dtype": "int8", "accum": "int32", "bK": 64},
    "int8_register_loads_a": {"dtype": "int8", "accum": "int32", "bK": 64, "trans_a": True, "trans_b": True},
    "uint8_trans_b": {"dtype": "uint8", "accum": "int32", "bK": 64, "trans_b": True},
    "fp8_e4m3_trans_b": {"dtype": "float8_e4m3fn", "bK": 64, "trans_b": True},
    "fp8_e5m2": {"dtype": "float8_e5m2", "bK": 64},
    "rs_fp16": {"scopes": "rs"},
    "sr_fp16": {"scopes": "sr"},
    "rr_fp16": {"scopes": "rr"},
    "rs_fp16_trans_b": {"scopes": "rs", "trans_b": True},
    "rs_int8_trans_b": {"scopes": "rs", "dtype": "int8", "accum": "int32", "bK": 64, "trans_b": True},
    "cleared_accumulator": {"clear": True},
    "cleared_accumulator_rr": {"clear": True, "scopes": "rr"},
}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_layoutkit_lowers_the_gemm_as_tilelang(name):
    with both_mma_lowerings() as seen:
        _lower(gemm_kernel(**LOWERED[name]))
    assert seen, "no GEMM went through the mma path"
    for theirs, ours in seen:
        assert ours is not None
        assert tilelang.tvm.ir.structural_equal(ours.body, theirs.body)
        assert ours.body.script() == theirs.body.script()  # the same names, so the same CUDA text


@pytest.mark.parametrize("name", ["gemm_k_halves", "gemm_strided", "gemm_stage_slices", "flash_attention",
                                  "gemm_64x128_3stage_256t"])
def test_layoutkit_lowers_sub_region_gemms_as_tilelang(name):
    from . import tilelang_kernels as K

    with both_mma_lowerings() as seen:
        _lower(K.KERNELS[name]())
    assert seen
    for theirs, ours in seen:
        assert ours is not None and ours.body.script() == theirs.body.script()


HANDED_BACK = {
    "tf32": {"dtype": "float32"},
    "fp64": {"dtype": "float64", "accum": "float64", "bK": 16},
}


@pytest.mark.parametrize("name", sorted(HANDED_BACK))
def test_gemms_without_a_plan_lower_through_tilelang(name):
    with both_mma_lowerings() as seen:
        theirs = _lower(gemm_kernel(**HANDED_BACK[name]))
    assert seen and all(ours is None for _, ours in seen)
    target = {"kind": "cuda", "arch": "sm_80"}
    with layoutkit_inference(fallback=False), tilelang.tvm.target.Target(target):
        assert tilelang.lower(gemm_kernel(**HANDED_BACK[name]), target=target).kernel_source == theirs


def test_the_switch_restores_tilelangs_entry():
    from tilelang.tileop.gemm import registry

    before = next(e for e in registry._GEMM_IMPLS if e.name == MMA_IMPL).impl_class
    with layoutkit_mma_lowering():
        during = next(e for e in registry._GEMM_IMPLS if e.name == MMA_IMPL).impl_class
    after = next(e for e in registry._GEMM_IMPLS if e.name == MMA_IMPL).impl_class
    assert during is not before and after is before


def test_whole_kernels_equal_with_and_without_layoutkits_gemm_lowering():
    func = gemm_kernel(dtype="bfloat16", trans_b=True, stages=2)
    target = {"kind": "cuda", "arch": "sm_80"}
    out = []
    for lower_gemm in (False, True):
        with layoutkit_inference(fallback=False, lower_gemm=lower_gemm), tilelang.tvm.target.Target(target):
            out.append(tilelang.lower(func, target=target).kernel_source)
    assert out[0] == out[1] == _lower(func)
    assert "tl::mma_sync" in out[1] and "tl::ptx_ldmatrix_x4(" in out[1]


def test_the_thread_variable_is_renamed_as_tilelangs_gemm_lowering_renames_it():
    """TileLang's load macros bind the thread index to their parameter ``thread_binding``, renaming
    the kernel's thread variable; later passes order terms by name, so on this convolution (the
    parameters of TileLang's example) the bounds check of the ``T.im2col`` copy keeps a repeated
    condition only under TileLang's name.  Each lowering gets a kernel built afresh."""
    from . import tilelang_kernels as K

    def conv():
        return K.conv_im2col(N=128, C=128, H=64, W=64, F=128, bN=128, threads=256, stages=3)

    theirs = _lower(conv())
    target = {"kind": "cuda", "arch": "sm_80"}
    with layoutkit_inference(fallback=False), tilelang.tvm.target.Target(target):
        ours = tilelang.lower(conv(), target=target).kernel_source
    assert ours == theirs
    names = []
    for lower_gemm in (False, True):
        func = conv()
        seen = []  # the kernel's thread variable, `tx: T.int32 = T.launch_thread_idx(0)`
        tilelang.tvm.tirx.stmt_functor.post_order_visit(func.body, seen.append)
        tx = next(n.var for n in seen if isinstance(n, tilelang.tvm.tirx.Bind) and n.var.name == "tx")
        before = tx.name
        if lower_gemm:
            with layoutkit_inference(fallback=False), tilelang.tvm.target.Target(target):
                tilelang.lower(func, target=target)
        else:
            _lower(func)
        names.append((before, tx.name))
    assert names[0] == names[1] == ("tx", "thread_binding")
