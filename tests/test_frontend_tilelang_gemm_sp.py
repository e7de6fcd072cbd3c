"""``T.gemm_sp`` (2:4 structured-sparse GEMM) against TileLang 0.1.15 itself: the ``mma.sp`` fragments
against its ``SparseTensorCoreIntrinEmitter``, the sparse warp partition against its ``GemmSPWarpPolicy``,
the CUTLASS metadata layouts against ``make_cutlass_metadata_layout``, every table of its LayoutInference
on sparse GEMM kernels (sm_80 ``mma.sp``; sm_90 ``wgmma.sp`` with warp-specialised TMA pipelines), and
the kernels lowered with layoutkit as its layout pass giving TileLang's own CUDA text."""

import itertools

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

from layoutkit.errors import LayoutError  # noqa: E402
from layoutkit.frontends.tilelang import from_tilelang, layoutkit_inference, tilelang_inference  # noqa: E402
from layoutkit.infer import infer_layouts  # noqa: E402
from layoutkit.targets import nv  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402
from .test_frontend_tilelang import assert_same  # noqa: E402

pytestmark = pytest.mark.oracle

E_DTYPE = {"float16": "int16", "int8": "int32", "float32": "int8"}

SM80 = {
    "ss": {},
    "rs": {"registers": "A"},
    "sr": {"registers": "B"},
    "rr": {"registers": "AB"},
    "trans_a": {"trans_A": True, "M": 64, "bM": 64},
    "rr_trans_ab": {"registers": "AB", "trans_A": True, "trans_B": True, "M": 64, "bM": 64, "N": 256, "bN": 256},
    "int8": {"dtype": "int8", "accum_dtype": "int32", "e_dtype": "int32", "K": 128, "bK": 64, "trans_B": True},
    "fp8": {"dtype": "float8_e5m2", "e_dtype": "int32", "K": 128, "bK": 64, "trans_B": True},
    "bf16": {"dtype": "bfloat16", "trans_B": True},
    "n8": {"N": 8, "bN": 8, "trans_B": True, "stages": 0},
    "annotated_e": {"annotate_e": True},
    "linear_a": {"linear_a": True},  # mma.sp keeps the layout a shared operand already has
}
"""Sparse GEMM kernels (TileLang's tilelibrary sparse GEMM test shapes) compared on sm_80."""

SM90 = {
    "ss": {},
    "ss_k_major_b": {"trans_B": True},
    "rs": {"registers": "A", "trans_B": True},
    "int8": {"dtype": "int8", "accum_dtype": "int32", "e_dtype": "int32", "K": 128, "bK": 64, "trans_B": True},
    "fp8_e8": {"dtype": "float8_e5m2", "e_dtype": "int8", "K": 128, "bK": 64, "trans_B": True},
    "256_threads": {"threads": 256, "N": 256, "bN": 256},
    "bk64": {"bK": 64, "K": 128},
    "mma_sp_n8": {"M": 64, "bM": 64, "N": 8, "bN": 8, "trans_B": True, "stages": 0},  # too narrow for WGMMA
    "rr_falls_to_mma_sp": {"registers": "AB"},  # wgmma.sp needs B in shared memory
}
"""Compared on sm_90 (``wgmma.sp`` where TileLang selects it, warp-specialised: consumers on threads
128..255)."""


def _emitter(dtype, brw, bcw, wrt, wct, K, ta, tb):
    from tilelang.cuda.intrinsics.macro.mma_sp_macro_generator import SparseTensorCoreIntrinEmitter

    return SparseTensorCoreIntrinEmitter(a_dtype=dtype, e_dtype=E_DTYPE[dtype], b_dtype=dtype,
                                         accum_dtype="int32" if dtype == "int8" else "float32", a_transposed=ta,
                                         b_transposed=tb, block_row_warps=brw, block_col_warps=bcw,
                                         warp_row_tiles=wrt, warp_col_tiles=wct, warp_k=K)


@pytest.mark.parametrize("dtype,warps,tiles,trans", list(itertools.product(
    ["float16", "int8", "float32"], [(1, 1), (2, 2), (4, 1)], [(16, 8), (32, 24), (32, 32)],
    [(False, False), (True, True), (False, True)])))
def test_mma_sp_fragments_equal_tilelangs_emitter(dtype, warps, tiles, trans):
    from tilelang import tvm

    (brw, bcw), (wrt, wct), (ta, tb) = warps, tiles, trans
    K = 2 * nv.mma_sp_k(dtype)
    em = _emitter(dtype, brw, bcw, wrt, wct, K, ta, tb)
    M, N = brw * wrt, bcw * wct
    for op, shape, t in (("A", (K // 2, M) if ta else (M, K // 2), ta), ("B", (N, K) if tb else (K, N), tb)):
        buf = tvm.tirx.decl_buffer(shape, dtype, scope="local.fragment")
        assert_same(nv.make_mma_sp_load_layout(op, dtype, brw, bcw, wrt, wct, K, t),
                    from_tilelang(em.make_mma_load_layout(buf, matrix=op)), f"{op} {dtype}")
    buf = tvm.tirx.decl_buffer((M, N), "float32", scope="local.fragment")
    assert_same(nv.make_mma_sp_store_layout(brw, bcw, wrt, wct, dtype, K),
                from_tilelang(em.make_mma_store_layout(buf)), f"C {dtype}")


@pytest.mark.parametrize("arch,inst", [("sm_80", "mma.sp"), ("sm_90", "wgmma.sp")])
def test_sparse_warp_partition_equals_tilelangs(arch, inst):
    from tilelang.ir import GemmSPWarpPolicy
    from tvm.target import Target

    target = Target({"kind": "cuda", "arch": arch})
    checked = 0
    for policy, M, N, threads in itertools.product((0, 1, 2), (16, 48, 64, 128, 256), (8, 24, 64, 256),
                                                   (64, 128, 256, 512)):
        try:
            theirs = tuple(GemmSPWarpPolicy(policy, 0, 0).compute_warp_partition(M, N, threads, target,
                                                                                  f"cuda.{inst}"))
        except Exception:  # noqa: BLE001 - TileLang's ICHECK: no partition
            theirs = None
        try:
            ours = nv.compute_sparse_warp_partition(M, N, threads // 32, policy, arch, inst)
        except LayoutError:
            ours = None
        assert ours == theirs, (policy, M, N, threads)
        checked += theirs is not None
    assert checked > 100


@pytest.mark.parametrize("a,e,shape", [("float16", "int16", (64, 4)), ("bfloat16", "int16", (128, 2)),
                                       ("int8", "int32", (64, 2)), ("float8_e5m2", "int32", (32, 4))])
def test_sm8x_metadata_layout_equals_tilelangs(a, e, shape):
    from tilelang import tvm
    from tilelang.layout.gemm_sp import make_cutlass_metadata_layout_sm8x

    theirs = make_cutlass_metadata_layout_sm8x(tvm.tirx.decl_buffer(shape, e, scope="shared"), a)
    assert_same(nv.make_cutlass_metadata_layout_sm8x(shape, e, a), from_tilelang(theirs), f"{a} {e}")


@pytest.mark.parametrize("a,block_k,shape", [("float16", 64, (64, 8)), ("float32", 64, (128, 16)),
                                             ("int8", 128, (64, 16)), ("float8_e4m3fn", 256, (128, 32))])
def test_sm90_metadata_layout_equals_tilelangs(a, block_k, shape):
    import warnings

    from tilelang import tvm
    from tilelang.layout.gemm_sp import make_cutlass_metadata_layout_sm90

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # block_k 256 is capped at 128, as in layoutkit
        theirs = make_cutlass_metadata_layout_sm90(tvm.tirx.decl_buffer(shape, "uint8", scope="shared"), a, block_k)
    assert_same(nv.make_cutlass_metadata_layout_sm90(shape, "uint8", a, block_k), from_tilelang(theirs), a)


def _assert_tables_equal(kernel, arch):
    run = tilelang_inference(kernel, arch)
    assert not run.failed, run.error
    result = infer_layouts(run.program)
    assert run.layouts
    for buf, theirs in run.layouts.items():
        assert_same(result.layout_map[buf], theirs, buf)
        if hasattr(theirs, "thread_range"):
            assert result.layout_map[buf].thread_range == theirs.thread_range, buf
    for op, theirs in run.loop_layouts.items():
        assert_same(result.loop_layouts[op], theirs, op)
    return run, result


@pytest.mark.parametrize("name", sorted(SM80))
def test_sm80_tables_equal_tilelang(name):
    run, result = _assert_tables_equal(K.sparse_gemm_tiles(**SM80[name]), "sm_80")
    assert "e_s" not in result.layout_map or SM80[name].get("annotate_e")  # E is laid out by nobody
    if SM80[name].get("linear_a"):
        assert result.layout_map["a_s"].is_equal(nv.make_linear_layout((128, 16), "float16").expand([2]))


@pytest.mark.parametrize("name", sorted(SM90))
def test_sm90_tables_equal_tilelang(name):
    run, result = _assert_tables_equal(K.sparse_gemm_tiles(**SM90[name]), "sm_90")
    consumers = (0, 128) if SM90[name].get("stages") == 0 else (SM90[name].get("threads", 128),) * 2
    assert result.layout_map["c"].thread_range == consumers


def test_sm90_annotation_wgmma_sp_overrides_is_refused_by_both():
    """wgmma.sp proposes its swizzle even over an annotated operand (only mma.sp keeps one)."""
    run = tilelang_inference(K.sparse_gemm_tiles(linear_a=True), "sm_90")
    assert run.failed and "different layout for a_s" in run.error
    with pytest.raises(LayoutError, match="a_s"):
        infer_layouts(run.program)


@pytest.mark.parametrize("arch,kw", [("sm_80", {}), ("sm_80", {"registers": "AB"}), ("sm_90", {"trans_B": True}),
                                     # TileLang's map has the linear layout for the metadata tile here, layoutkit's
                                     # none (its TMA copy is 1-D for layoutkit, 2-D for TileLang): the same kernel
                                     ("sm_90", {"trans_A": True, "M": 64, "bM": 64})])
def test_lowered_with_layoutkit_as_the_pass_is_tilelangs_cuda(arch, kw):
    from tilelang import tvm

    target = {"kind": "cuda", "arch": arch}
    with tvm.target.Target(target):
        theirs = tilelang.lower(K.sparse_gemm_tiles(**kw), target=target).kernel_source
    with layoutkit_inference(fallback=False) as record, tvm.target.Target(target):
        ours = tilelang.lower(K.sparse_gemm_tiles(**kw), target=target).kernel_source
    assert record.solved == 1 and not record.fallbacks
    assert ours == theirs
    assert ("mma.sp" in ours or "mma_sp" in ours) if arch == "sm_80" else "wgmma" in ours
