"""layoutkit as TileLang's layout solver (``layoutkit.frontends.tilelang``), checked against TileLang
0.1.15 itself: layout conversion both ways (whole tables), the Program read from real kernels,
layoutkit's layouts equal TileLang's on every kernel TileLang solves, and annotated kernels (including
two TileLang cannot lay out) lowered by TileLang's own pipeline and compiled with nvcc.

nvcc compiles every annotated kernel (seconds each: ``make test-tilelang`` runs the module with
pytest-xdist).  sm_90 (warp-specialised TMA pipelines) is checked on two GEMMs, without nvcc.
"""

import dataclasses
import functools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

import layoutkit as lk  # noqa: E402
from layoutkit.dtypes import canonical_dtype  # noqa: E402
from layoutkit.errors import UnsupportedError  # noqa: E402
from layoutkit.fragment.fragment import Fragment  # noqa: E402
from layoutkit.frontends.tilelang import (  # noqa: E402
    check_selections,
    from_prim_func,
    from_tilelang,
    solve_prim_func,
    tilelang_inference,
    to_tilelang,
)
from layoutkit.infer import Program, infer_layouts, programs  # noqa: E402
from layoutkit.targets import nv  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

TARGET = {"kind": "cuda", "arch": "sm_80"}
SOLVED_BY_TILELANG = sorted((set(K.KERNELS) | set(K.NOT_LOWERED)) - K.TILELANG_FAILS)
COMPILED = sorted(K.KERNELS)  # every kernel layoutkit solves, the two TileLang cannot lay out included


def assert_same(ours: lk.Layout, theirs: lk.Layout, what: str) -> None:
    """Same kind, input shape, replication, thread table of every replica and index table."""
    assert isinstance(ours, Fragment) == isinstance(theirs, Fragment), f"{what}: {ours} vs {theirs}"
    assert ours.input_shape == theirs.input_shape, what
    if isinstance(ours, Fragment):
        assert ours.replicate_size == theirs.replicate_size, what
        np.testing.assert_array_equal(ours.thread_table(), theirs.thread_table(), err_msg=what)
    np.testing.assert_array_equal(ours.table(), theirs.table(), err_msg=what)


@functools.cache
def tilelang_run(name: str, arch: str = "sm_80"):
    build = K.KERNELS.get(name) or K.NOT_LOWERED.get(name) or getattr(K, name)
    return tilelang_inference(build(), {**TARGET, "arch": arch})


@functools.cache
def ours(name: str, arch: str = "sm_80"):
    run = tilelang_run(name, arch)
    result = infer_layouts(run.program)
    check_selections(run.selections, result.layout_map)  # fragments read with an outer loop variable at 0
    return result


@functools.cache
def solved(name: str, arch: str = "sm_80"):
    """The kernel annotated with layoutkit's layouts."""
    return solve_prim_func(K.KERNELS[name](), {**TARGET, "arch": arch}, result=ours(name, arch))


def lower(func, arch: str = "sm_80"):
    from tilelang import tvm

    target = {**TARGET, "arch": arch}
    with tvm.target.Target(target):
        return tilelang.lower(func, target=target)


# ---- layout conversion ----------------------------------------------------------------------------

CONVERTED = {
    "swizzle_64x64_f16": lambda: nv.make_swizzled_layout((64, 64), "float16"),
    "swizzle_32x32_f16_stage": lambda: nv.make_swizzled_layout((32, 32), "float16").expand([2]),
    "half_bank_16x32_f16": lambda: nv.make_half_bank_swizzled_layout((16, 32), "float16"),
    "xor_8x8": lambda: lk.Layout([8, 8], lambda i, j: (i, i ^ j)),
    "mma_store_2x2": lambda: nv.make_mma_store_layout(2, 2, 16, 16),
    "mma_load_A": lambda: nv.make_mma_load_layout("A", "float16", 2, 2, 16, 16, 32),
    "mma_load_B_transposed": lambda: nv.make_mma_load_layout("B", "float16", 2, 2, 16, 16, 32, transposed=True),
    "fully_replicated": lambda: lk.make_fully_replicated_fragment((16, 4), 128),
    "replicated_x2": lambda: lk.Fragment([8, 8], forward_thread_fn=lambda i, j, rep: rep * 32 + i * 4 + j // 2,
                                         replicate=2, forward_index_fn=lambda i, j: j % 2),
    "two_index_outputs": lambda: lk.Fragment([4, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2,
                                             forward_index_fn=lambda i, j: (j % 2, i // 2)),
}


@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_round_trip_through_tilelang_keeps_every_table(name):
    layout = CONVERTED[name]()
    theirs = to_tilelang(layout)
    assert type(theirs).__name__ == ("Fragment" if isinstance(layout, Fragment) else "Layout")
    assert [int(x) for x in theirs.get_input_shape()] == list(layout.input_shape)
    assert_same(layout, from_tilelang(theirs), name)


@pytest.mark.parametrize("xor", ["bits", "bitwise"])
def test_tilelang_evaluates_our_xor_swizzle_like_we_do(xor):
    """TileLang's own evaluation (map_forward_index on constants) at every coordinate, no round trip."""
    layout = nv.make_swizzled_layout((8, 64), "float16")
    theirs = to_tilelang(layout, xor=xor)
    assert ("bitwise_xor" in str(theirs)) == (xor == "bitwise")
    table = layout.table()
    for i in range(8):
        for j in range(64):
            got = [int(x) for x in theirs.map_forward_index([i, j])]
            assert got == list(table[i, j]), (i, j)
    assert_same(from_tilelang(theirs), layout, xor)


def test_tilelang_swizzle_reads_back_as_ours():
    from tilelang import layout as tl_layout
    from tilelang import tvm

    for shape, dtype in (((64, 64), "float16"), ((32, 32), "float32"), ((128, 32), "float16")):
        buf = tvm.tirx.decl_buffer(shape, dtype, scope="shared.dyn")
        assert_same(from_tilelang(tl_layout.make_swizzled_layout(buf)), nv.make_swizzled_layout(shape, dtype),
                    f"{shape} {dtype}")


def test_tilelang_replicated_fragment_reads_back_with_replica_order():
    from tilelang import layout as tl_layout

    theirs = tl_layout.Fragment([16, 16], forward_thread_fn=lambda i, j, rep: rep * 64 + i * 4 + j // 4,
                                replicate=2, forward_index_fn=lambda i, j: j % 4)
    mine = lk.Fragment([16, 16], forward_thread_fn=lambda i, j, rep: rep * 64 + i * 4 + j // 4, replicate=2,
                       forward_index_fn=lambda i, j: j % 4)
    got = from_tilelang(theirs)
    assert_same(got, mine, "replicated")
    assert got.thread_table()[1, 0, 0] == 64


def test_conversion_errors_are_typed():
    with pytest.raises(UnsupportedError, match="expected a layoutkit Layout"):
        to_tilelang("not a layout")
    with pytest.raises(UnsupportedError, match="expected a tilelang.layout"):
        from_tilelang(nv.make_swizzled_layout((8, 64), "float16"))
    table_read = lk.Layout.from_table(np.random.default_rng(0).permutation(64))
    with pytest.raises(UnsupportedError, match=r"to_tilelang: table#\w+\[_i\] reads table#\w+ \(64 entries\): a "
                                               "table-backed index has no closed form"):
        to_tilelang(table_read)


# ---- the Program read from a kernel -----------------------------------------------------------------

def test_gemm_program_has_stages_ops_and_threads():
    p = tilelang_run("gemm_32").program
    assert p.threads == 128 and p.target == "sm_80"
    assert {n: (b.shape, b.scope, b.dtype) for n, b in p.buffers.items()} == {
        "A": ((1024, 1024), "global", "float16"), "B": ((1024, 1024), "global", "float16"),
        "C": ((1024, 1024), "global", "float16"), "A_shared": ((32, 32), "shared.dyn", "float16"),
        "B_shared": ((32, 32), "shared.dyn", "float16"), "C_local": ((32, 32), "local.fragment", "float32")}
    assert p.stages == {"A_shared": 2, "B_shared": 2}
    assert p.shape_of("A_shared") == (2, 32, 32)
    # TileLang's pipeline pass has already peeled the prologue and the last GEMM
    assert [op.kind for op in p.ops] == ["fill", "copy", "copy", "copy", "copy", "gemm", "gemm", "copy"]
    g = p.ops[5].args
    assert (g["A"], g["B"], g["C"], g["transpose_B"], g["policy"]) == ("A_shared", "B_shared", "C_local", False,
                                                                        "square")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_kernel_without_threads_gets_tilelangs_default(arch):
    """``T.Kernel(...)`` without ``threads=``: the Program has the 128 threads TileLang's CUDA backend
    launches, not the 256 ``threadIdx.x`` a warp-specialised sm_90 kernel has by LayoutInference."""
    for name in ("gemm_64_default_threads", "softmax_default_threads"):
        assert tilelang_run(name, arch).program.threads == 128, name
    assert tilelang_run("gemm_64_default_threads", arch).program.to_json() == \
        tilelang_run("gemm_64", arch).program.to_json()


def test_im2col_and_transpose_are_read_as_tilelang_sees_them():
    """``T.im2col`` proposes no layout in TileLang (``Im2ColOp::InferLayout`` is empty), so the Program has
    no op for it; ``T.transpose`` of shared tiles becomes the Program's transpose, which proposes none either."""
    conv = tilelang_run("conv_im2col").program
    assert [op.kind for op in conv.ops] == ["fill", "copy", "copy", "gemm", "gemm", "copy"]
    assert conv.stages == {"data_shared": 2, "kernel_shared": 2}
    tr = tilelang_run("transpose_shared").program
    assert [op.kind for op in tr.ops] == ["copy", "transpose", "copy", "parallel", "copy"]
    assert (tr.ops[1].args["src"], tr.ops[1].args["dst"]) == ("x", "y")


def test_reshape_and_view_are_program_aliases():
    """A ``T.reshape`` / ``T.view`` buffer shares its storage's data variable: the Program declares it as
    an alias of the allocated buffer, which inference lays out by reshaping (as TileLang does)."""
    p = tilelang_run("reshaped").program
    views = {n: (b.alias_of, b.shape, b.dtype) for n, b in p.buffers.items() if b.alias_of}
    assert views == {"g": ("f", (64, 2, 64), "float16"), "s_view": ("s", (8192,), "float16"),
                     "s_view_1": ("s", (64, 64), "float32")}
    loop = next(op for op in p.ops if op.kind == "parallel")
    assert {a.buffer for a in loop.accesses} == {"g"}
    assert_same(ours("reshaped").layout_map["g"], tilelang_run("reshaped").layouts["g"], "g")


def test_copies_between_shapes_that_differ_by_unit_dims():
    p = tilelang_run("unit_dim_copies").program
    copies = [(op.args["src"], op.args["dst"], op.loop) for op in p.ops if op.kind == "copy"]
    assert copies == [("A", "s", (64, 128)), ("s", "s3", (64, 128)), ("s3", "f", (64, 128)), ("f", "g", (64, 128)),
                      ("g", "C", (64, 128))]


def test_shared_slice_selected_by_a_serial_loop_variable():
    """``s[b, :, :]`` / ``s[b, i, j]`` with ``b`` a serial loop variable: read at ``b = 0`` (one layout per
    shared buffer lays every slice out alike); so is a fragment row ``lse[k, 0:64]`` (recorded as a
    selection), but not a fragment region of several rows starting at ``k``."""
    p = tilelang_run("serial_slices").program
    copy = next(op for op in p.ops if op.kind == "copy" and op.args["src"] == "s")
    assert copy.args["src_region"] == ((0, 0, 0), (1, 64, 64))
    loop = next(op for op in p.ops if op.kind == "parallel")
    assert [str(e) for e in next(a for a in loop.accesses if a.buffer == "s").indices] == ["0", "_i", "_j"]
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((4, 64), "float32"), B: T.Tensor((4, 64), "float32")):
        with T.Kernel(1, threads=128):
            lse = T.alloc_fragment((4, 64), "float32")
            row = T.alloc_fragment((64,), "float32")
            T.copy(A, lse)
            for k in T.serial(4):
                T.copy(lse[k, 0:64], row)
                T.copy(row, B[k, 0:64])

    run = tilelang_inference(main, TARGET)
    assert [(s.buffer, s.dims) for s in run.selections] == [("lse", (0,))]
    copy = next(op for op in run.program.ops if op.name == run.selections[0].op)
    assert copy.args["src_region"] == ((0, 0), (1, 64)) and copy.args["selected"] == {"lse": [0]}
    result = infer_layouts(run.program)
    for buf, theirs in run.layouts.items():
        assert_same(result.layout_map[buf], theirs, buf)

    @T.prim_func
    def rows(A: T.Tensor((4, 64), "float32"), B: T.Tensor((4, 64), "float32")):
        with T.Kernel(1, threads=128):
            lse = T.alloc_fragment((4, 64), "float32")
            two = T.alloc_fragment((2, 64), "float32")
            T.copy(A, lse)
            for k in T.serial(2):
                T.copy(lse[k * 2:k * 2 + 2, 0:64], two)
                T.copy(two, B[k * 2, 0])

    with pytest.raises(UnsupportedError, match=r"T.copy .*start `k \* 2` of fragment lse uses a variable from "
                                               r"outside the op's loop over a dim of extent 2"):
        from_prim_func(rows, TARGET)


def test_copy_loops_over_the_lower_level_sides_extents():
    """TileLang's ``CopyNode::MakeIterVars``: the copy loop takes the fragment side's extents; a
    fragment side smaller than the source is refused (TileLang fails on it too)."""
    p = tilelang_run("copy_extents_differ").program
    copies = [(op.args["src"], op.args["dst"], op.loop) for op in p.ops if op.kind == "copy"]
    assert copies == [("A", "f", (64, 3)), ("f", "B", (64, 4))]
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 4), "float32")
            T.copy(A[:, 0:3], f[:, 0:2])
            T.copy(f, B[:, 0:4])

    with pytest.raises(UnsupportedError, match=r"the copy loops over f \[64, 2\], smaller than the source A"):
        from_prim_func(main, TARGET)


def test_fragment_view_at_another_width_is_refused():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 128), "float16"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 128), "float16")
            g = T.alloc_fragment((64, 64), "float32")
            T.copy(A, f)
            v = T.view(f, (64, 64), dtype="float32")
            for i, j in T.Parallel(64, 64):
                g[i, j] = v[i, j]
            T.copy(g, B)

    with pytest.raises(UnsupportedError, match=r"view v \[64, 64\] float32 of fragment f \[64, 128\] float16"):
        from_prim_func(main, TARGET)


@pytest.mark.parametrize("dtype", K.TILELANG_DTYPES)
def test_every_tilelang_dtype_is_read_and_laid_out_as_tilelang_does(dtype):
    run = tilelang_inference(K.through_registers(dtype), TARGET)
    assert not run.failed, run.error
    assert run.program.buffers["f"].dtype == canonical_dtype(dtype)
    result = infer_layouts(run.program)
    assert sorted(run.layouts) == ["f", "g"] and len(run.loop_layouts) == 1
    for buf, theirs in run.layouts.items():
        assert_same(result.layout_map[buf], theirs, f"{dtype}: {buf}")
    for op, theirs in run.loop_layouts.items():
        assert_same(result.loop_layouts[op], theirs, f"{dtype}: loop {op}")


def test_parallel_loop_accesses_are_index_expressions():
    p = tilelang_run("gemm_rowmax_bias").program
    (loop,) = [op for op in p.ops if op.kind == "parallel"]
    assert loop.loop == (64, 64)
    got = sorted((a.buffer, tuple(str(e) for e in a.indices), a.is_write) for a in loop.accesses)
    assert got == [("C_local", ("_i", "_j"), False), ("C_local", ("_i", "_j"), True), ("bias_frag", ("_j",), False)]
    (red,) = [op for op in p.ops if op.kind == "reduce"]
    assert (red.args["src"], red.args["dst"], red.args["dim"], red.args["kind"]) == ("C_local", "row_max", 1, "max")


def test_program_equals_the_hand_written_one():
    """The adapter's Program of GEMM + bias + row max infers what the hand-written builder infers."""
    hand = infer_layouts(programs.gemm_rowmax_bias(bM=64, bN=64, bK=32))
    read = ours("gemm_rowmax_bias")
    for name in ("A_shared", "B_shared", "C_local", "bias_frag", "row_max"):
        assert_same(read.layout_map[name], hand.layout_map[name], name)


def test_annotate_layout_and_atomic_add_are_read():
    p = tilelang_run("gemm_annotated").program
    assert sorted(p.annotations) == ["A_shared", "B_shared"]
    assert p.annotations["A_shared"].input_shape == (2, 64, 32)
    assert_same(p.annotations["A_shared"], nv.make_swizzled_layout((64, 32), "float16").expand([2]), "annotation")
    q = tilelang_run("atomic_accumulate").program
    (atomic,) = [op for op in q.ops if op.kind == "atomic_add"]
    assert (atomic.args["src"], atomic.args["dst"], atomic.loop) == ("A_frag", "Out", (64, 64))
    for program in (p, q):  # what the adapter reads is an ordinary Program: it survives JSON
        assert Program.from_json(program.to_json()).to_json() == program.to_json()


def test_unsupported_statement_is_named():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            x = T.alloc_fragment((64, 4), "float32")
            y = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], y)
            for k in T.serial(4):
                for i, j in T.Parallel(64, 64):
                    y[i, j] = x[i, (j + k) % 4]
            T.copy(y, B[0, 0])

    with pytest.raises(UnsupportedError, match=r"parallel loop `for i, j` \(64x64\): index `\(j \+ k\) % 4` of "
                                               r"fragment x mixes a loop variable with a variable from outside"):
        from_prim_func(main, TARGET)


def test_fragment_index_strided_by_an_outer_loop_equals_tilelang():
    """``x_frag[i, jj * 8 + j]`` (examples/deepseek_mhc/example_mhc_pre.py): read at ``jj = 0`` with the
    GEMM operand's thread map checked periodic in 8; every table equals TileLang's.  At stride 4 the
    map does not repeat, TileLang finds no layout, and the adapter refuses it naming the access."""
    run = tilelang_run("outer_strided")
    assert not run.failed, run.error
    assert {(s.buffer, s.dims, s.period) for s in run.selections} == {("x_frag", (1,), 8)}  # two reads
    result = ours("outer_strided")
    for buf, theirs in run.layouts.items():
        assert_same(result.layout_map[buf], theirs, buf)
    ((op, theirs),) = run.loop_layouts.items()
    assert_same(result.loop_layouts[op], theirs, op)
    assert result.loop_layouts[op].thread_table()[0, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    narrow = tilelang_inference(K.outer_strided(step=4), TARGET)
    assert narrow.failed and "no available layout" in narrow.error
    with pytest.raises(UnsupportedError, match=r"fragment x_frag is indexed in dim 1 by 4 \* k \+ \(loop "
                                               r"variables\).*does not repeat every 4"):
        check_selections(narrow.selections, infer_layouts(narrow.program).layout_map)


def test_fragment_read_outside_tile_ops_is_replicated():
    """A fragment read in an ``if`` condition is "floating": every thread keeps all of it, as in TileLang."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            x = T.alloc_fragment((64, 64), "float32")
            flag = T.alloc_fragment((4,), "float32")
            T.copy(A[0, 0], x)
            T.fill(flag, 1)
            if flag[3] > 0:
                for i, j in T.Parallel(64, 64):
                    x[i, j] = x[i, j] * 2
            T.copy(x, B[0, 0])

    run = tilelang_inference(main, TARGET)
    assert not run.failed, run.error
    assert list(run.program.annotations) == ["flag"]
    result = infer_layouts(run.program)
    assert result.layout_map["flag"].replicate_size == 128
    for buf in ("flag", "x"):
        assert_same(result.layout_map[buf], run.layouts[buf], buf)


def test_bad_target_is_typed():
    with pytest.raises(UnsupportedError, match="TileLang target"):
        from_prim_func(K.KERNELS["elementwise_64"](), {"kind": "cuda"})


# ---- layoutkit's layouts equal TileLang's ---------------------------------------------------------

@pytest.mark.parametrize("name", SOLVED_BY_TILELANG)
def test_layouts_equal_tilelang(name):
    run = tilelang_run(name)
    assert not run.failed, run.error
    assert run.layouts or run.loop_layouts, "TileLang returned no layouts"  # loop-only kernels have no buffers
    result = ours(name)
    for buf, theirs in run.layouts.items():
        assert_same(result.layout_map[buf], theirs, f"{name}: {buf}")
    for op, theirs in run.loop_layouts.items():
        assert_same(result.loop_layouts[op], theirs, f"{name}: loop {op}")
    # every fragment layoutkit lays out is one TileLang lays out too
    assert {b for b, lay in result.layout_map.items() if isinstance(lay, Fragment)} <= set(run.layouts)


@pytest.mark.parametrize("name, partial, result", [
    ("gemv_reducer", "acc", "acc_result"), ("row_max_reducer_batched", "acc", "acc_result"),
    ("row_sum_reducer", "acc", "dst")])
def test_reducer_is_in_the_layout_map_as_tilelangs_partial(name, partial, result):
    """A ``local.reducer`` buffer has its PartialFragment in the layout map, TileLang's table for table
    (its replicas are addends awaiting the finalize collective); the legacy form's finalize writes ``acc_result``."""
    run = tilelang_run(name)
    assert run.program.buffers[partial].scope == "local.reducer"
    theirs = run.layouts[partial]
    laid_out = ours(name).layout_map
    assert isinstance(theirs, lk.PartialFragment) and isinstance(laid_out[partial], lk.PartialFragment)
    assert laid_out[partial].replicate_size > 1
    assert_same(laid_out[partial], theirs, f"{name}: {partial}")
    assert_same(laid_out[result], run.layouts[result], f"{name}: {result}")


@pytest.mark.parametrize("name", sorted(K.TILELANG_FAILS))
def test_tilelang_fails_where_layoutkit_solves(name):
    run = tilelang_run(name)
    assert run.failed and "no available layout" in run.error
    result = ours(name)
    assert {b for b, lay in result.layout_map.items() if isinstance(lay, Fragment)} == set(
        n for n, b in run.program.buffers.items() if b.is_fragment)


@pytest.mark.parametrize("name", sorted(K.BOTH_FAIL))
def test_both_solvers_refuse_a_kernel_without_consistent_layouts(name):
    run = tilelang_inference(K.BOTH_FAIL[name](), TARGET)
    assert run.failed and "conflict" in run.error.lower()
    with pytest.raises(lk.LayoutConflictError, match="minimal conflicting constraints"):
        infer_layouts(run.program)


# ---- annotated kernels through TileLang's own pipeline ------------------------------------------------

@pytest.mark.parametrize("name", sorted(K.KERNELS))
def test_annotated_kernel_keeps_our_layouts_and_lowers(name):
    """TileLang's inference honours every annotation (its result equals ours) and the kernel lowers."""
    func = solved(name)
    again = tilelang_inference(func, TARGET)
    assert not again.failed, again.error
    result = ours(name)
    for buf, lay in result.layout_map.items():
        if buf in again.layouts:
            assert_same(lay, again.layouts[buf], f"{name}: {buf}")
    for op, lay in result.loop_layouts.items():
        if op in again.loop_layouts:
            assert_same(lay, again.loop_layouts[op], f"{name}: loop {op}")
    assert {b for b, lay in result.layout_map.items() if isinstance(lay, Fragment)} <= set(again.layouts)
    assert "__global__" in lower(func).kernel_source


def _annotations(func) -> tuple[dict, list]:
    """The ``layout_map`` entries (buffer name -> TileLang layout) and parallel loop layouts of ``func``."""
    from tilelang import tvm

    tirx = tvm.tirx
    blocks, loops = [], []
    tirx.stmt_functor.post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, tirx.SBlock) else (
        loops.append(n) if isinstance(n, tirx.For) else None))
    allocated = [b for blk in blocks for b in blk.alloc_buffers]
    layout_map = {}
    for blk in blocks:
        for data, lay in dict(blk.annotations.get("layout_map", {})).items():
            layout_map[next(b.name for b in allocated if b.data.same_as(data))] = lay
    return layout_map, [x.annotations["parallel_loop_layout"] for x in loops if "parallel_loop_layout" in x.annotations]


def test_solved_kernel_carries_every_layout_as_annotations():
    layout_map, loops = _annotations(solved("gemm_rowmax_bias"))
    result = ours("gemm_rowmax_bias")
    assert sorted(layout_map) == ["A_shared", "B_shared", "C_local", "bias_frag", "row_max"]
    # pipelined buffers are annotated per stage, as the source declares them; TileLang expands them again
    assert_same(from_tilelang(layout_map["A_shared"]).expand([2]), result.layout_map["A_shared"], "A_shared")
    assert_same(from_tilelang(layout_map["C_local"]), result.layout_map["C_local"], "C_local")
    (loop,) = loops
    assert_same(from_tilelang(loop), result.loop_layouts["parallel#8"], "loop")


def test_tilelang_follows_a_layout_it_would_not_pick():
    """Annotations are binding: a column-major register distribution survives TileLang's inference."""
    func = K.KERNELS["elementwise_64"]()
    program = from_prim_func(func, TARGET)
    column_major = lk.Fragment([64, 64], forward_thread_fn=lambda i, j: j * 2 + i // 32,
                               forward_index_fn=lambda i, j: i % 32)
    program.annotate_layout({program.buffers["A_frag"]: column_major})
    result = infer_layouts(program)
    default = tilelang_run("elementwise_64").layouts["B_frag"]
    assert not np.array_equal(result.layout_map["B_frag"].thread_table(), default.thread_table())
    again = tilelang_inference(solve_prim_func(func, TARGET, result=result), TARGET)
    for name in ("A_frag", "B_frag"):
        assert_same(again.layouts[name], result.layout_map[name], name)
    assert_same(again.layouts["A_frag"], column_major, "A_frag")


@pytest.mark.parametrize("name, acc", [("gemm_64", "C_local"), ("gemm_rowmax_bias", "C_local"),
                                       ("gemm_64_default_threads", "C_local"), ("conv_im2col", "out_local")])
def test_warp_specialised_sm90_kernels(name, acc):
    """sm_90: TMA copies into mbarrier-guarded pipelines, consumer threads 128..255.  TileLang compares an
    annotated swizzle with its own by proving the expressions equal, which needs xor spelled its way."""
    run = tilelang_run(name, "sm_90")
    assert not run.failed, run.error
    result = ours(name, "sm_90")
    assert result.layout_map[acc].thread_range == (128, 128)
    for buf, theirs in run.layouts.items():
        assert_same(result.layout_map[buf], theirs, f"{name}: {buf}")
    again = tilelang_inference(solved(name, "sm_90"), {**TARGET, "arch": "sm_90"})
    assert not again.failed, again.error
    assert "__global__" in lower(solved(name, "sm_90"), "sm_90").kernel_source


def test_ragged_fragment_is_refused_before_tilelang_lowering():
    """200 x 7 on 128 threads, rows dealt round-robin: register slots of threads 72..127 stay empty;
    TileLang can only lower fragments that fill every slot, so solve_prim_func says so.  The ragged
    layout is put into the result by hand: whether inference picks one is the inference's business."""
    func = _tile(200, 7)
    result = infer_layouts(from_prim_func(func, TARGET))
    ragged = lk.Fragment([200, 7], forward_thread_fn=lambda i, j: i % 128,
                         forward_index_fn=lambda i, j: i // 128 * 7 + j)
    assert ragged.thread_extent == 128 and ragged.local_size == 14
    result = dataclasses.replace(result, layout_map={**result.layout_map, "x": ragged})
    with pytest.raises(UnsupportedError, match=r"fragment x \(200, 7\) .* 1792 slots for 1400 elements"):
        solve_prim_func(func, TARGET, result=result)


def test_a_converted_fragment_is_refused():
    """Annotations cannot express "fragment x read through another layout"; solve_prim_func says so."""
    from types import SimpleNamespace

    from layoutkit.frontends.tilelang import _check_lowerable

    frag = lk.make_fully_replicated_fragment((4,), 128)
    conv = SimpleNamespace(buffer="x", op="parallel#3", src=frag, dst=frag)
    with pytest.raises(UnsupportedError, match="converts fragment x for parallel#3"):
        _check_lowerable(SimpleNamespace(conversions=(conv,), layout_map={}), tilelang_run("gemm_32").program)


def _tile(rows: int, cols: int):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((rows * 4, cols), "float32"), B: T.Tensor((rows * 4, cols), "float32")):
        with T.Kernel(4, threads=128) as bx:
            x = T.alloc_fragment((rows, cols), "float32")
            y = T.alloc_fragment((rows, cols), "float32")
            T.copy(A[bx * rows, 0], x)
            for i, j in T.Parallel(rows, cols):
                y[i, j] = x[i, j] + T.cast(1, "float32")
            T.copy(y, B[bx * rows, 0])
    return main


def _include_dirs() -> list[str]:
    root = Path(tilelang.__file__).resolve().parent
    return [str(root / "src"), str(root / "3rdparty" / "cutlass" / "include")]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", COMPILED)
def test_annotated_kernel_compiles_with_nvcc(name, tmp_path):
    src = tmp_path / f"{name}.cu"
    src.write_text(lower(solved(name)).kernel_source)
    cmd = ["nvcc", "-arch=sm_80", "-std=c++17", "-w", "-c", str(src), "-o", str(tmp_path / f"{name}.o")]
    cmd += [f"-I{d}" for d in _include_dirs()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / f"{name}.o").stat().st_size > 0


# ---- loop layouts the kernel pins, vector widths TileLang proves, TMA atomics ----------------------

def test_pinned_loop_layout_is_the_loop_layout_and_lays_out_its_fragment():
    """``T.Parallel(..., loop_layout=)``: row i on thread i, column j in register j (layoutkit's own
    plan would put 4-wide vectors on 8 threads per row), and the fragment follows it."""
    run = tilelang_run("pinned_loop")
    result = ours("pinned_loop")
    loop = result.loop_layouts["parallel#0"]
    assert str(loop.forward_thread) == "_i" and [str(e) for e in loop.forward_index] == ["_j"]
    assert_same(loop, run.loop_layouts["parallel#0"], "pinned loop")
    assert_same(result.layout_map["x"], run.layouts["x"], "x")
    assert run.program.loop_annotations["parallel#0"].is_equal(loop.bind_thread_range(0, 128))


def test_pinned_copy_loop_layout_keeps_its_replicas():
    """``T.copy(..., loop_layout=)`` with two replicas: the copy's loop is the given layout, replicas
    guarded (one store per element)."""
    result = ours("pinned_copy_loop")
    program = tilelang_run("pinned_copy_loop").program
    (copy,) = [op for op in program.ops if op.kind == "copy"]
    loop = result.loop_layouts[copy.name]
    assert loop.replicate_size == 2 and loop.is_equal(program.loop_annotations[copy.name])
    assert result.guards[copy.name].holds(_thread=np.array([0, 63, 64, 127])).tolist() == [True, True, False, False]


def test_pinned_loop_layout_round_trips_through_json():
    program = tilelang_run("pinned_loop").program
    again = Program.from_json(program.to_json())
    assert again.loop_annotations["parallel#0"].is_equal(program.loop_annotations["parallel#0"])
    assert_same(infer_layouts(again).layout_map["x"], ours("pinned_loop").layout_map["x"], "x")


def test_assumed_stride_alignment_bounds_the_vector_width():
    """``T.assume(A.strides[k] % 8 == 0)`` on runtime strides: 8 uint8 per vector, as TileLang proves."""
    program = tilelang_run("assumed_strides").program
    (loop,) = [op for op in program.ops if op.kind == "parallel"]
    assert loop.args["align"] == {"A": 8, "B": 8}
    layout = ours("assumed_strides").loop_layouts[loop.name]
    assert layout.index_table()[0, :16].tolist() == list(range(8)) * 2  # 8 columns a thread, then the next


@pytest.mark.parametrize("name, width", [("element_atomics_f32", 1), ("element_atomics_f16", 2)])
def test_element_atomics_cap_the_vector_width(name, width):
    program = tilelang_run(name).program
    loop = [op for op in program.ops if op.kind == "parallel"][-1]
    assert loop.args["vector_cap"] == width
    layout = ours(name).loop_layouts[loop.name]
    assert layout.thread_table()[0, 0, :4].tolist() == [k // width for k in range(4)]


def test_tma_atomic_add_lays_out_its_shared_source_as_tilelang():
    """sm_90 ``T.atomic_add(out, s, use_tma=True)``: the shared source gets TileLang's TMA reduce-add
    layout (a 64B bank swizzle for a 16 x 16 float32 tile; the TMA linear layout for 16 x 12)."""
    for shape, kind in (((16, 16), "half"), ((32, 64), "full"), ((16, 12), None)):
        func = K.tma_atomic_add(shape)
        run = tilelang_inference(func, {**TARGET, "arch": "sm_90"})
        assert not run.failed, run.error
        result = infer_layouts(run.program)
        assert_same(result.layout_map["s"], run.layouts["s"], f"s {shape}")
        assert getattr(getattr(result.layout_map["s"], "swizzle", None), "kind", None) in (kind, "linear")


def test_zero_dim_tensor_is_laid_out_as_tilelang_does():
    run = tilelang_run("gemm_zero_k")
    assert run.program.buffers["A"].shape == (512, 1)  # an empty dim read as 1: no element is reached
    assert_same(ours("gemm_zero_k").layout_map["C_local"], run.layouts["C_local"], "C_local")
