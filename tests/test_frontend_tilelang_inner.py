"""Two constructs the TileLang adapter reads as TileLang 0.1.15 does, checked against TileLang itself:
``T.transpose`` of regions of any rank >= 2 (unit dims, boundary predicates: TileLang's CPU transpose
tests) and parallel loops around serial inner loops (TileLang's Metal SIMT GEMM, DeepSeek mHC's post mix),
which TileLang's vectoriser plans along the innermost loop.  Their kernels are in
:data:`tests.tilelang_kernels.KERNELS` (the global transposes, whose tables are empty, in
``GLOBAL_TRANSPOSES``), so ``tests/test_frontend_tilelang.py`` also compares their tables and lowers them
annotated; here: what the Program holds, the tables the rule changes, layoutkit as TileLang's pass giving
TileLang's own CUDA text, and the variants still refused."""

import functools

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

from layoutkit.errors import UnsupportedError  # noqa: E402
from layoutkit.frontends.tilelang import from_prim_func, lower, tilelang_inference  # noqa: E402
from layoutkit.infer import Program, infer_layouts  # noqa: E402
from layoutkit.testing.assertions import same_tables  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

TARGET = {"kind": "cuda", "arch": "sm_80"}


@functools.cache
def run_of(name: str):
    return tilelang_inference(_build(name), TARGET)


def _build(name: str):
    return (K.KERNELS.get(name) or K.GLOBAL_TRANSPOSES[name])()


def _equal(name: str):
    run = run_of(name)
    assert not run.failed, run.error
    result = infer_layouts(run.program)
    for buf, theirs in run.layouts.items():
        assert same_tables(result.layout_map[buf], theirs), (name, buf)
    for op, theirs in run.loop_layouts.items():
        assert same_tables(result.loop_layouts[op], theirs), (name, op)
    return run, result


def _accesses(op) -> list[tuple[str, list[str]]]:
    return [(a.buffer, [str(e) for e in a.indices]) for a in op.accesses]


# ---- T.transpose of regions -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, loop, dst", [
    ("transpose_rank3", (2, 3, 4), ["_i", "_k", "_j"]),
    ("transpose_rank4", (2, 3, 4, 5), ["_i", "_j", "_l", "_k"]),
    # the destination region starts at column 1 and runs past the tensor: TileLang masks those elements;
    # a global start never reaches layout inference and is read clamped, as every global start is
    ("transpose_dst_predicate", (2, 3, 4), ["_i", "_k", "_j"]),
    # unit dims add no loop: the destination's unit axis stays at its start
    ("transpose_singleton_dst", (2, 3), ["_i", "0", "_j"]),
    ("transpose_singleton_src", (2, 3), ["_i", "0", "_j"]),
])
def test_transpose_regions_read_as_tilelangs_loop(name, loop, dst):
    run, result = _equal(name)
    (op,) = [op for op in run.program.ops if op.kind == "transpose"]
    assert op.loop == loop
    assert _accesses(op)[1] == ("dst", dst)
    assert (run.layouts, result.layout_map) == ({}, {})  # TileLang's transpose proposes no layout
    assert Program.from_json(run.program.to_json()).to_json() == run.program.to_json()


def test_shared_rank3_transpose_leaves_the_register_tile_to_its_copy():
    run, result = _equal("transpose_shared_3d")
    (op,) = [op for op in run.program.ops if op.kind == "transpose"]
    assert op.loop == (32, 32) and _accesses(op) == [("x", ["0", "_i", "_j"]), ("y", ["0", "_j", "_i"])]
    assert set(run.layouts) == {"f"} and "x" not in result.layout_map


def test_transpose_of_a_shared_region_past_the_buffer_is_refused():
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16")):
        with T.Kernel(1, threads=128):
            x = T.alloc_shared((32, 32), "float16")
            y = T.alloc_shared((32, 32), "float16")
            T.copy(A, x)
            T.transpose(x[0:16, 0:32], y[0:32, 24:40])
            T.copy(y, A)

    with pytest.raises(UnsupportedError, match=r"T.transpose .*region \[24:40\] of dim 1 lies outside y"):
        from_prim_func(main, TARGET)


# ---- serial loops inside parallel loops -------------------------------------------------------------------

def test_simt_gemm_is_scalar_along_its_serial_k():
    """``C_local[i, j] += A_s[i, k] * B_s[k, j]``: judged along ``k`` the store does not move, so TileLang
    plans width 1 (over the parallel dims alone layoutkit would vectorise by 2 along ``j``)."""
    run, result = _equal("serial_inner_gemm")
    (op,) = [op for op in run.program.ops if op.kind == "parallel"]
    assert op.args["inner"] == {"extents": [16], "chained": 1,
                                "indices": [["_i", "_j"], ["_i", "_j"], ["_i", "_k"], ["_k", "_j"]]}
    assert str(result.loop_layouts[op.name].forward_thread) == "_i % 8 * 16 + _j"
    assert Program.from_json(run.program.to_json()).to_json() == run.program.to_json()


def test_inner_loop_counts_into_the_size_the_plan_divides():
    run, result = _equal("serial_inner_copy")
    (op,) = [op for op in run.program.ops if op.kind == "parallel"]
    assert op.args["inner"]["chained"] == 1
    lay = result.loop_layouts[op.name]
    assert (lay.thread_extent, lay.output_shape) == (32, (2,))  # width 2 from 8 * 8 * 4 points


def test_an_init_store_before_the_inner_loop_is_read_as_scalar():
    run, _ = _equal("serial_inner_after_init")
    (op,) = [op for op in run.program.ops if op.kind == "parallel"]
    assert op.args.get("vector_cap") == 1 and "inner" not in op.args


@pytest.mark.parametrize("name", ["serial_inner_gemm", "serial_inner_copy", "transpose_singleton_dst"])
def test_layoutkit_as_the_pass_gives_tilelangs_cuda(name):
    from tilelang import tvm

    ours = lower(_build(name), TARGET, fallback=False).kernel_source
    with tvm.target.Target(TARGET):
        assert ours == tilelang.lower(_build(name), target=TARGET).kernel_source


def _inner_variant(kind: str):
    import tilelang.language as T

    @T.prim_func
    def side_by_side(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((16, 16), "float32")
            for i, j in T.Parallel(4, 4):
                for k in T.serial(4):
                    s[i * 4 + k, j] = A[i * 4 + k, j]
                for k in T.serial(4):
                    s[i, j * 4 + k] = A[i, j * 4 + k]
            T.copy(s, B)

    @T.prim_func
    def before(A: T.Tensor((16, 64), "float32"), B: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((16, 64), "float32")
            for i, j in T.Parallel(16, 16):
                s[i, j] = A[i, j]
                for k in T.serial(4):
                    s[i, j * 4 + k] = A[i, j * 4 + k]
            T.copy(s, B)

    return {"side_by_side": side_by_side, "before": before}[kind]


@pytest.mark.parametrize("kind, message", [
    ("side_by_side", r"its body holds loops side by side; expected one chain of inner loops"),
    ("before", r"an access comes before inner loop k; expected every access inside or after it"),
])
def test_inner_loop_variants_still_refused(kind, message):
    with pytest.raises(UnsupportedError, match=message):
        from_prim_func(_inner_variant(kind), TARGET)
