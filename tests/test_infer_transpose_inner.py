"""Two Program rules after TileLang 0.1.15, without TileLang: ``transpose`` of regions of any rank >= 2 (the
last two axes swapped, unit dims adding no loop) and parallel loops around inner serial loops, which
TileLang's vectoriser plans along the innermost loop (``args["inner"]``, see :mod:`layoutkit.infer.inner`)."""

import pytest

from layoutkit.errors import ShapeError
from layoutkit.infer import OpValidationError, Program, infer_layouts


def _accesses(op):
    return [(a.buffer, [str(e) for e in a.indices], a.is_write) for a in op.accesses]


# ---- transpose ----------------------------------------------------------------------------------------

def test_rank3_transpose_with_unit_dims_loops_over_the_other_extents():
    p = Program(threads=128)
    s, d = p.tensor("s", (2, 3, 1), "float32"), p.tensor("d", (2, 1, 3), "float32")
    op = p.transpose(s, d)
    assert op.loop == (2, 3)
    assert _accesses(op) == [("s", ["_i", "_j", "0"], False), ("d", ["_i", "0", "_j"], True)]


def test_transpose_regions_keep_their_starts_on_the_swapped_axes():
    p = Program(threads=128)
    s, d = p.tensor("s", (4, 8, 8), "float32"), p.tensor("d", (4, 8, 8), "float32")
    op = p.transpose(s[1:3, 0:4, 2:8], d[0:2, 1:7, 4:8])
    assert op.loop == (2, 4, 6)
    assert _accesses(op) == [("s", ["_i + 1", "_j", "_k + 2"], False), ("d", ["_i", "_k + 1", "_j + 4"], True)]
    assert op.args["src_region"] == ((1, 0, 2), (2, 4, 6)) and op.args["dst_region"] == ((0, 1, 4), (2, 6, 4))
    again = Program.from_json(p.to_json())
    assert _accesses(again.ops[0]) == _accesses(op) and again.to_json() == p.to_json()


def test_transpose_start_point_takes_the_swapped_extents():
    p = Program(threads=128)
    s, d = p.tensor("s", (2, 16, 8), "float16"), p.tensor("d", (2, 8, 16), "float16")
    op = p.transpose(s[1, 0:16, 0:8], d[1, 0, 0])
    assert op.loop == (16, 8) and op.args["dst_region"] == ((1, 0, 0), (1, 8, 16))
    assert _accesses(op)[1] == ("d", ["1", "_j", "_i"], True)


def test_two_d_transpose_is_unchanged():
    p = Program(threads=128)
    a, b = p.alloc_shared("a", (64, 32), "float16"), p.alloc_shared("b", (32, 64), "float16")
    op = p.transpose(a, b)
    assert op.loop == (64, 32) and _accesses(op) == [("a", ["_i", "_j"], False), ("b", ["_j", "_i"], True)]


def test_transpose_of_unit_extents_only_is_one_point():
    p = Program(threads=128)
    s, d = p.tensor("s", (2, 3, 1), "float32"), p.tensor("d", (2, 1, 3), "float32")
    op = p.transpose(s[1:2, 2:3, 0:1], d[1:2, 0:1, 2:3])
    assert op.loop == (1,) and _accesses(op) == [("s", ["1", "2", "0"], False), ("d", ["1", "0", "2"], True)]


@pytest.mark.parametrize("src, dst, message", [
    ((8,), (8,), r"one rank >= 2; found \(8,\) and \(8,\)"),
    ((8, 8), (1, 8, 8), r"one rank >= 2; found \(8, 8\) and \(1, 8, 8\)"),
    ((2, 3, 4), (2, 3, 4), r"d region extents \(2, 3, 4\); expected s's \(2, 3, 4\) with the last two swapped"),
])
def test_transpose_shapes_are_checked(src, dst, message):
    p = Program(threads=128)
    s, d = p.tensor("s", src, "float32"), p.tensor("d", dst, "float32")
    with pytest.raises(OpValidationError, match=message):
        p.transpose(s, d)


def test_transpose_region_past_the_buffer_is_refused():
    p = Program(threads=128)
    s, d = p.alloc_shared("s", (16, 16), "float32"), p.alloc_shared("d", (16, 16), "float32")
    with pytest.raises(OpValidationError, match=r"region \[8:24\] of dim 1 lies outside d"):
        p.transpose(s[0:16, 0:16], d[0:16, 8:24])


def test_shared_transpose_proposes_no_layout_and_plans_its_own_loop():
    p = Program(threads=128)
    x, y = p.alloc_shared("x", (1, 32, 32), "float16"), p.alloc_shared("y", (1, 32, 32), "float16")
    op = p.transpose(x, y)
    r = infer_layouts(p)
    assert r.layout_map == {}
    assert r.loop_layouts[op.name].input_shape == (32, 32)


# ---- inner serial loops ---------------------------------------------------------------------------------

def _simt_gemm(inner: bool) -> Program:
    """``for i, j in T.Parallel(16, 16): for k in T.serial(16): C[i, j] += A[i, k] * B[k, j]``."""
    p = Program(threads=128)
    A, B = p.alloc_shared("A", (16, 16), "float32"), p.alloc_shared("B", (16, 16), "float32")
    C = p.alloc_fragment("C", (16, 16), "float32")
    p.fill(C, 0.0)
    full = {"extents": (16,), "chained": 1, "indices": [lambda i, j, k: (i, j), lambda i, j, k: (i, j),
                                                         lambda i, j, k: (i, k), lambda i, j, k: (k, j)]}
    p.parallel((16, 16), writes=[(C, lambda i, j: (i, j))],
               reads=[(C, lambda i, j: (i, j)), (A, lambda i, j: (i, 0)), (B, lambda i, j: (0, j))],
               inner=full if inner else None)
    return p


def test_a_store_that_does_not_move_with_the_inner_loop_makes_the_loop_scalar():
    with_inner, without = infer_layouts(_simt_gemm(True)), infer_layouts(_simt_gemm(False))
    assert str(with_inner.loop_layouts["parallel#1"].forward_thread) == "_i % 8 * 16 + _j"
    assert str(without.loop_layouts["parallel#1"].forward_thread) == "_i * 8 + _j // 2"  # width 2 along j


def test_inner_loops_round_trip_through_json():
    p = _simt_gemm(True)
    again = Program.from_json(p.to_json())
    assert again.to_json() == p.to_json()
    assert again.ops[1].args["inner"]["indices"][2:] == [["_i", "_k"], ["_k", "_j"]]
    assert infer_layouts(again).loop_layouts["parallel#1"].is_equal(infer_layouts(p).loop_layouts["parallel#1"])


def _spread(chained: int) -> Program:
    """``for i, g in T.Parallel(8, 8): for k in T.serial(4): s[i, g, k] = A[i, g, k]`` (no fragment)."""
    p = Program(threads=128)
    A, s = p.tensor("A", (64, 8, 4), "float32"), p.alloc_shared("s", (8, 8, 4), "float32")
    p.parallel((8, 8), writes=[(s, lambda i, g: (i, g, 0))], reads=[(A, lambda i, g: (i, g, 0))],
               inner={"extents": (4,), "chained": chained,
                      "indices": [lambda i, g, k: (i, g, k), lambda i, g, k: (i, g, k)]})
    return p


@pytest.mark.parametrize("chained, threads, local", [(1, 32, (2,)), (0, 64, (1,))])
def test_chained_inner_loops_count_into_the_planned_size(chained, threads, local):
    """Width 4 along ``k``; the plan picks the width of least padding over 8 * 8 * 4 = 256 points (2) when
    the inner loop is the parallel loop's body, over the 64 parallel points alone (1) when it is not."""
    lay = infer_layouts(_spread(chained)).loop_layouts["parallel#0"]
    assert (lay.thread_extent, lay.output_shape) == (threads, local)


@pytest.mark.parametrize("inner, message", [
    ({"extents": (4,), "indices": [lambda i, g, k: (i, g, k)]}, r"one index function per access \(2\); found 1"),
    ({"extents": (4,), "chained": 2, "indices": []}, r"inner chained: expected an integer in \[0, 1\]; found 2"),
    ({"extents": (4,), "indices": [lambda i, g, k: (i, g, k + 1)] * 2}, r"index _k \+ 1 of s dim 2 ranges over"),
    ({"extents": (), "indices": []}, r"inner extents"),
])
def test_inner_arguments_are_checked(inner, message):
    p = Program(threads=128)
    A, s = p.tensor("A", (64, 8, 4), "float32"), p.alloc_shared("s", (8, 8, 4), "float32")
    with pytest.raises(ShapeError, match=message):
        p.parallel((8, 8), writes=[(s, lambda i, g: (i, g, 0))], reads=[(A, lambda i, g: (i, g, 0))], inner=inner)
