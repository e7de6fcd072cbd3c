"""Bad input to the TileLang adapter, checked against TileLang 0.1.15 itself: every entry point raises a
typed layoutkit error naming what it expected and what it found (never a TVM error or AttributeError).
The cases that need no TileLang live in tests/test_codegen_errors.py."""


import numpy as np
import pytest

from .tilelang_env import require_tilelang  # noqa: E402

require_tilelang()

from layoutkit.codegen import CodegenInputError  # noqa: E402
from layoutkit.errors import UnsupportedError  # noqa: E402
from layoutkit.frontends.tilelang import (  # noqa: E402
    TileLangLoweringError,
    from_prim_func,
    from_tilelang,
    solve_prim_func,
    tilelang_error,
    tilelang_inference,
    to_tilelang,
)
from layoutkit.infer import infer_layouts  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def gemm():
    func = K.gemm(128, 128, 64, 64, 64, 32)
    return func, from_prim_func(func, "sm_80")


@pytest.mark.parametrize("entry", [from_prim_func, tilelang_inference, solve_prim_func])
@pytest.mark.parametrize("func", ["gemm", None, np.zeros(3)])
def test_not_a_prim_func(entry, func):
    with pytest.raises(UnsupportedError, match=f"{entry.__name__}: expected a TileLang PrimFunc .a @T.prim_func "
                                               f"kernel.; found {type(func).__name__}"):
        entry(func, "sm_80")


@pytest.mark.parametrize("target, found", [
    ("foo", "invalid CUDA arch"),
    ({"kind": "hip", "arch": "gfx90a"}, "Unknown config option 'arch'"),
])
def test_target_tvm_rejects_is_typed(gemm, target, found):
    with pytest.raises(TileLangLoweringError,
                       match=f"TileLang's lowering for .* failed before its LayoutInference pass: .*{found}"):
        from_prim_func(gemm[0], target)


def test_conversions_name_the_type():
    with pytest.raises(UnsupportedError, match="to_tilelang: expected a layoutkit Layout or Fragment; found ndarray"):
        to_tilelang(np.zeros(3))
    with pytest.raises(UnsupportedError, match="from_tilelang: expected a tilelang.layout.Layout or Fragment; found "
                                               "int"):
        from_tilelang(1)


def test_solve_with_a_result_of_another_kernel(gemm):
    func, _ = gemm
    bigger = from_prim_func(K.gemm(128, 128, 64, 128, 128, 32), "sm_80")
    with pytest.raises(CodegenInputError, match=r"solve_prim_func: shared.dyn buffer A_shared has shape \(64, 32\) "
                                                r"x 2 stages; its layout in the result has input shape \(2, 128, 32\)"):
        solve_prim_func(func, "sm_80", result=infer_layouts(bigger))
    elementwise = from_prim_func(K.elementwise(128, 128, 64, 64), "sm_80")
    with pytest.raises(CodegenInputError, match="the result has no layout for shared.dyn buffer A_shared") as info:
        solve_prim_func(func, "sm_80", result=infer_layouts(elementwise))
    assert info.value.buffer == "A_shared"
    with pytest.raises(CodegenInputError, match="expected the InferenceResult of infer_layouts.program.*found str"):
        solve_prim_func(func, "sm_80", result="solved")


def test_solve_with_its_own_result_is_accepted(gemm):
    func, program = gemm
    out = solve_prim_func(func, "sm_80", result=infer_layouts(program))
    assert type(out).__name__ == "PrimFunc" and out.body is not None


# ---- TileLang's tile-op registry: every op read or refused by name ----------------------------------

def test_every_registered_tile_op_is_read_or_refused_by_name():
    """The installed TileLang's ``tl.tileop.*`` registry, name by name: a newer TileLang adding an op
    fails here until the adapter reads or refuses it."""
    from tilelang import tvm

    from layoutkit.frontends.tilelang_tileops import READ, REFUSED

    registered = {n for n in tvm.ir.Op.list_op_names() if n.startswith("tl.tileop.")}
    assert len(registered) >= 20
    assert registered - set(READ) - set(REFUSED) == set()
    assert not set(READ) & set(REFUSED)


def _transpose_fragment():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((64, 64), "float16")
            y = T.alloc_fragment((64, 64), "float16")
            T.copy(A, x)
            T.transpose(x, y)
            T.copy(y, B)
    return main


def test_refused_tile_op_names_statement_and_construct():
    with pytest.raises(UnsupportedError, match=r"from_prim_func: `T\.wgmma_gemm_sp\(T\.region\(.*\)`: "
                                               r"T\.wgmma_gemm_sp \(tl\.tileop\.wgmma_gemm_sp\) has no layoutkit "
                                               r"counterpart yet \(structured-sparse GEMM forced onto "
                                               r"wgmma\.sp") as info:
        from_prim_func(K.sparse_gemm(forced_wgmma=True), "sm_90")
    assert "T.region(" in str(info.value)  # the statement as TileLang wrote it, with its operands


def test_transpose_of_fragments_is_refused():
    """TileLang 0.1.15's transpose proposes no layout (its fragments would be laid out apart, by
    their copies); layoutkit's carries the source layout across, so the adapter refuses rather
    than differ from TileLang."""
    with pytest.raises(UnsupportedError, match=r"T.transpose .*operand x is a fragment; expected shared memory"):
        from_prim_func(_transpose_fragment(), "sm_80")


def _tmem():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            t = T.alloc_tmem((128, 128), "float32")
            x = T.alloc_fragment((128, 128), "float32")
            T.copy(t, x)
            T.copy(x, A)
    return main


def _empty_shared():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 0), "float32")
            T.fill(s, 0)
    return main


def test_refused_scope_names_the_allocation_and_the_construct():
    with pytest.raises(UnsupportedError, match=r'`t = T.alloc_buffer\(\(128, 128\), "float32", scope="shared.tmem"\)`: '
                                               r"scope 'shared.tmem' is Blackwell tensor memory \(T.alloc_tmem"):
        from_prim_func(_tmem(), "sm_80")


def test_empty_shared_buffer_is_refused_by_name():
    with pytest.raises(UnsupportedError, match=r"buffer s has shape \[64, 0\] \(dim 1 is 0\)"):
        from_prim_func(_empty_shared(), "sm_80")


def test_tilelang_error_is_tilelangs_own_outcome(gemm):
    # TileLang alone: the GEMM is laid out; the 100 x 7 tile is not ("no available layout found"), and the
    # error is TileLang's, the same tilelang_inference reports for the kernel
    assert tilelang_error(gemm[0], "sm_80") is None
    failing = K.KERNELS["tile_100x7"]
    found = tilelang_error(failing(), "sm_80")
    assert found and found == tilelang_inference(failing(), "sm_80").error
    with pytest.raises(UnsupportedError, match="tilelang_error: expected a TileLang PrimFunc"):
        tilelang_error("gemm", "sm_80")
