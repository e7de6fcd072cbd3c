"""Three constructs the TileLang adapter reads as TileLang 0.1.15 does, checked against TileLang itself:
fragments indexed by a loop variable from outside their parallel loop (flash decoding's
``lse_local[k, j]``), GEMMs on sub-regions of shared buffers (``T.gemm(A_shared[:, bK:], ...)``) and
parallel loops with runtime extents (``T.Parallel(T.min(valid_len, 512))``).  Their kernels are in
:data:`tests.tilelang_kernels.KERNELS`, so ``tests/test_frontend_tilelang.py`` also compares their tables
with TileLang's, lowers them annotated and compiles them with nvcc; here: what the Program holds, that
layoutkit as TileLang's pass gives TileLang's own CUDA text, and a typed error naming the statement
and the construct for every variant still refused."""

import functools

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

import layoutkit as lk  # noqa: E402
from layoutkit.errors import LayoutError, UnsupportedError  # noqa: E402
from layoutkit.frontends.tilelang import (  # noqa: E402
    check_selections,
    from_prim_func,
    lower,
    solve_prim_func,
    tilelang_inference,
)
from layoutkit.infer import Program, infer_layouts  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

TARGET = {"kind": "cuda", "arch": "sm_80"}


@functools.cache
def run_of(name: str, arch: str = "sm_80"):
    return tilelang_inference(K.KERNELS[name](), {**TARGET, "arch": arch})


def tilelang_lower(func):
    from tilelang import tvm

    with tvm.target.Target(TARGET):
        return tilelang.lower(func, target=TARGET)


def _same_tables(name: str, arch: str = "sm_80") -> None:
    from layoutkit.testing.assertions import same_tables

    run = run_of(name, arch)
    assert not run.failed, run.error
    result = infer_layouts(run.program)
    check_selections(run.selections, result.layout_map)
    for buf, theirs in run.layouts.items():
        assert same_tables(result.layout_map[buf], theirs), (name, buf)
    for op, theirs in run.loop_layouts.items():
        assert same_tables(result.loop_layouts[op], theirs), (name, op)
    assert run.loop_layouts or run.layouts


# ---- fragments indexed from outside their loop -------------------------------------------------------

def test_split_combine_reads_rows_at_the_outer_variable():
    run = run_of("split_combine")
    assert sorted({(s.buffer, s.dims) for s in run.selections}) == [("lse_local", (0,))]
    assert len(run.selections) == 2  # the two row loops of the combine
    loops = {op.name: op for op in run.program.ops}
    for sel in run.selections:
        op = loops[sel.op]
        assert op.args["selected"] == {"lse_local": [0]} and op.loop == (128,)
        (acc,) = [a for a in op.accesses if a.buffer == "lse_local"]
        assert [str(e) for e in acc.indices] == ["0", "_i"]
    # the thread of each row does not depend on it: what TileLang computes keeping k symbolic
    theirs = run.layouts["lse_local"]
    assert str(theirs.forward_thread) == "_j" and theirs.replicate_size == 1


def test_a_row_read_discards_the_layout_that_spreads_rows_over_threads():
    """``x`` copied from global memory alone would get rows spread over threads; TileLang's proof for
    every row fails there, so it lays ``x`` out from the row loop: layoutkit refuses that attempt too."""
    run = run_of("row_reads")
    alone = Program(threads=128)
    A, x = alone.tensor("A", (8, 64), "float32"), alone.alloc_fragment("x", (8, 64), "float32")
    alone.copy(A, x)
    spread = infer_layouts(alone).layout_map["x"]
    assert len({int(t) for t in spread.thread_table()[0, :, 0]}) > 1
    result = infer_layouts(run.program)
    assert str(result.layout_map["x"].forward_thread) == "_rep * 64 + _j"
    _same_tables("row_reads")
    with pytest.raises(UnsupportedError, match=r"parallel loop `for j` \(64\): fragment x is indexed in dim 0 by a "
                                               r"variable from outside the parallel loop"):
        check_selections(run.selections, {"x": spread})


def test_solve_refuses_a_result_whose_selected_rows_move_between_threads():
    func = K.KERNELS["split_combine"]()
    program = from_prim_func(func, TARGET)
    result = infer_layouts(program)
    moved = lk.Fragment([4, 128], forward_thread_fn=lambda k, j: (j + 32 * k) % 128, forward_index_fn=lambda k, j: k)
    import dataclasses

    bad = dataclasses.replace(result, layout_map={**result.layout_map, "lse_local": moved})
    with pytest.raises(UnsupportedError, match=r"fragment lse_local is indexed in dim 0 .*\(thread 0 at \[0, 0\], "
                                               r"32 at \[1, 0\]"):
        solve_prim_func(func, TARGET, result=bad)


def _kernel(body: str):
    """Small kernels of the refused variants, one statement apart."""
    import tilelang.language as T

    @T.prim_func
    def reduce_row(A: T.Tensor((4, 128), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((4, 128), "float32")
            r = T.alloc_fragment((1,), "float32")
            T.copy(A, x)
            for k in T.serial(4):
                T.reduce_sum(x[k:k + 1, :], r, dim=1)
                T.copy(r, B[k])

    return {"reduce_row": reduce_row}[body]


@pytest.mark.parametrize("body, message", [
    ("reduce_row", r"T.reduce `T.reduce\(T.region\(x\[k, 0\].*`: operand x\[0, 0\] with extents \[1, 128\] is "
                   r"part of the buffer; expected the whole \(4, 128\)"),
])
def test_outer_variable_variants_still_refused_name_statement_and_construct(body, message):
    with pytest.raises(UnsupportedError, match=message):
        from_prim_func(_kernel(body), TARGET)


# ---- fragments read or written only at indices from outside the loop ---------------------------------

@pytest.mark.parametrize("name, loop, replicas", [
    ("replicated_readback", "parallel#0", 128), ("replicated_readback_copy", "parallel#0", 128),
    ("outer_index_fill", "parallel#2", 1), ("outer_index_reduced", "parallel#3", 1)])
def test_fragment_indexed_only_from_outside_equals_tilelang(name, loop, replicas):
    """``x[k]`` with ``k`` from outside the loop: a non-constant access in TileLang (read at ``k = 0``,
    recorded as a selection of every dim), laid out with a thread map that cannot depend on ``k``:
    every thread holds every element of ``x`` (a store written once per element runs on replica 0)."""
    run = run_of(name)
    result = infer_layouts(run.program)
    selected = {s.buffer: s.dims for s in run.selections}
    x = "x" if "readback" in name else "s"
    assert selected[x] == (0,)
    assert result.layout_map[x].replicate_size == 128 and str(result.layout_map[x].forward_thread) == "_rep"
    assert result.loop_layouts[loop].replicate_size == replicas
    _same_tables(name)


def test_one_element_copy_of_a_replicated_fragment_at_an_outer_index_equals_tilelang():
    """``T.copy(x[k], B[k])`` over a serial ``k``: a copy of one element whose fragment start is ``k``,
    from a fully replicated ``x``: laid out on every thread, as TileLang does."""
    import tilelang.language as T
    from tilelang.layout import make_fully_replicated_layout_fragment

    from layoutkit.testing.assertions import same_tables

    @T.prim_func
    def element_copy(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((4,), "float32")
            T.annotate_layout({x: make_fully_replicated_layout_fragment(x, 128)})
            for i in T.Parallel(4):
                x[i] = A[i]
            for k in T.serial(4):
                T.copy(x[k], B[k])

    run = tilelang_inference(element_copy, TARGET)
    assert [(s.buffer, s.dims) for s in run.selections] == [("x", (0,))]
    result = infer_layouts(run.program)
    check_selections(run.selections, result.layout_map)
    assert same_tables(result.layout_map["x"], run.layouts["x"])
    (copy,) = [op for op in run.program.ops if op.args.get("selected")]
    assert result.loop_layouts[copy.name].replicate_size == 128
    for op, theirs in run.loop_layouts.items():
        assert same_tables(result.loop_layouts[op], theirs), op


def test_fragment_spread_over_threads_indexed_only_from_outside_is_refused():
    """``out[k] = x[k]`` over a serial ``k`` with ``x`` one element per thread: TileLang lays the wrapped
    loop out on thread ``k`` (a function of ``k``, which no Program holds)."""
    import tilelang.language as T

    @T.prim_func
    def spread(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(128):
                x[i] = A[i]
            for k in T.serial(128):
                B[k] = x[k]

    program = from_prim_func(spread, TARGET)
    with pytest.raises(UnsupportedError, match=r"parallel#1: fragment x laid out as Fragment\(\(128,\) -> \(1,\), "
                                               r".*forward_thread: _i, "
                                               r".* is indexed only by variables from outside the loop \(dims \[0\]\) "
                                               r"and its thread depends on them"):
        infer_layouts(program)


# ---- GEMMs on sub-regions ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, regions", [
    ("gemm_strided", {"A_region": ((0, 32), (64, 32)), "B_region": ((0, 0), (32, 64))}),
    ("gemm_stage_slices", {"A_region": ((0, 0, 0), (1, 64, 32)), "B_region": ((0, 0, 0), (1, 32, 64))}),
])
def test_gemm_region_is_recorded_and_layouts_cover_the_whole_buffer(name, regions):
    run = run_of(name)
    (gemm,) = [op for op in run.program.ops if op.kind == "gemm"]
    assert {k: gemm.args[k] for k in regions} == regions
    result = infer_layouts(run.program)
    for operand in ("A", "B"):
        buf = gemm.args[operand]
        assert result.layout_map[buf].input_shape == run.program.shape_of(buf)
    assert Program.from_json(run.program.to_json()).to_json() == run.program.to_json()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["gemm_strided", "gemm_stage_slices", "gemm_k_halves"])
def test_gemm_regions_equal_tilelang_on_mma_and_wgmma(name, arch):
    _same_tables(name, arch)


def test_gemm_on_a_fragment_region_is_refused():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((64, 64), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a[:, 0:32], b, c)
            T.copy(c, C)

    with pytest.raises(UnsupportedError, match=r"T.gemm `.*`: operand a\[0, 0\] with extents \[64, 32\] is part of a "
                                               r"local.fragment buffer; TileLang 0.1.15 lays register operands out"):
        from_prim_func(main, TARGET)


def test_layoutkit_codegen_refuses_a_gemm_region():
    from layoutkit.backends.nv.lower import check_target

    with pytest.raises(UnsupportedError, match=r"gemm lowering: gemm#\d+ reads the sub-region .* of A_shared"):
        check_target(run_of("gemm_strided").program)


# ---- runtime extents --------------------------------------------------------------------------------

def test_runtime_extent_is_read_over_its_bound():
    run = run_of("dynamic_extent")
    loops = [op for op in run.program.ops if op.kind == "parallel"]
    assert [(op.loop, op.args.get("dynamic", False)) for op in loops] == [((512,), False), ((512,), True)]
    # TileLang plans the symbolic loop without vectors (its extent is no provable multiple of any width)
    assert [str(run.loop_layouts[op.name].forward_thread) for op in loops] == ["_i // 2", "_i % 256"]
    _same_tables("dynamic_extent")
    rows = run_of("dynamic_rows").program
    assert [(op.loop, op.args.get("dynamic", False)) for op in rows.ops if op.kind == "parallel"] == [
        ((64, 128), True), ((256,), True)]
    _same_tables("dynamic_rows")


@pytest.mark.parametrize("name", ["dynamic_extent", "dynamic_rows", "gemm_strided", "split_combine"])
def test_layoutkit_as_the_pass_gives_tilelangs_cuda(name):
    """The loop keeps its runtime extent (and so TileLang's guard): the annotation is built over it."""
    ours = lower(K.KERNELS[name](), TARGET, fallback=False).kernel_source
    assert ours == tilelang_lower(K.KERNELS[name]()).kernel_source
    assert ours == tilelang_lower(solve_prim_func(K.KERNELS[name](), TARGET)).kernel_source


def _dynamic(kind: str):
    import tilelang.language as T

    @T.prim_func
    def inner(A: T.Tensor((64, 128), "float16"), B: T.Tensor((64, 128), "float16"), v: T.int32):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(64, T.min(v, 128)):
                B[i, j] = A[i, j]

    @T.prim_func
    def unbounded(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16"), v: T.int32):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(v):
                B[i] = A[i]

    return {"inner": inner, "unbounded": unbounded}[kind]


@pytest.mark.parametrize("kind, message", [
    ("inner", r"parallel loop `for i, j`: a runtime extent on loop j; expected it on the outermost loop only"),
    ("unbounded", r"extent of parallel loop i: the extent `v` is a runtime value with no constant upper bound"),
])
def test_runtime_extent_variants_still_refused(kind, message):
    with pytest.raises(UnsupportedError, match=message):
        from_prim_func(_dynamic(kind), TARGET)


def test_program_refuses_a_dynamic_loop_over_a_fragment():
    p = Program(threads=128)
    x = p.alloc_fragment("x", (512,), "float32")
    with pytest.raises(LayoutError, match="a loop with a dynamic extent touches fragment x"):
        p.parallel((512,), writes=[(x, "lambda i: (i,)")], dynamic=True)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_runtime_shaped_shared_buffer_copied_to_and_from_global(arch):
    """Dynamic shared memory (TileLang's runtime_dynamic_shared_memory test): TileLang lays nothing out
    for the buffer or its copies of runtime extent, nor does layoutkit; as the pass it gives TileLang's
    CUDA text."""
    target = {**TARGET, "arch": arch}
    run = tilelang_inference(K.dynamic_shared_copy(), target)
    assert not run.failed and run.layouts == {} and run.loop_layouts == {}
    assert "s" not in run.program.buffers and not run.program.ops
    assert infer_layouts(run.program).layout_map == {}
    from tilelang import tvm

    with tvm.target.Target(target):
        theirs = tilelang.lower(K.dynamic_shared_copy(), target=target).kernel_source
    assert lower(K.dynamic_shared_copy(), target, fallback=False).kernel_source == theirs


def test_runtime_shaped_shared_buffer_elsewhere_is_refused_by_name():
    with pytest.raises(UnsupportedError, match=r"parallel loop `for i` \(64\): shared buffer s has the runtime shape "
                                               r"\(n\); expected a constant shape"):
        from_prim_func(K.dynamic_shared_in_loop(), "sm_80")
