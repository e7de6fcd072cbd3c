"""Program builders refuse bad arguments with typed errors naming the argument, the op and the buffer
(issue reproducers: buffers indexed with None, ``fill`` with None or a string, ``infer_layouts(None)``)."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import infer
from layoutkit.infer import OpValidationError


def _program():
    p = infer.Program(threads=32)
    G = p.tensor("G", (64, 64), "float32")
    f = p.alloc_fragment("f", (8, 16), "float32")
    r = p.alloc_fragment("r", (8,), "float32")
    return p, G, f, r


def test_none_as_a_coordinate_is_refused_open_slices_stay():
    p, G, f, r = _program()
    H = p.tensor("H", (64,), "float32")
    for key in ((None, 0), (0, None), (None, slice(0, 8))):
        with pytest.raises(lk.ShapeError, match="must be an integer"):
            G[key]
    with pytest.raises(lk.ShapeError, match=r"subscript 0 must be an integer .*found NoneType None"):
        H[None]
    # TileLang's open slices: a missing bound is the buffer's edge
    assert G[0:8, None:16].extents == (8, 16) and G[0:8, 48:None].extents == (8, 16)
    assert H[0:None].extents == (64,)


@pytest.mark.parametrize("value", [None, "x", "1.5", 1j, 10**400, True, [0.0], object()])
def test_fill_refuses_what_is_not_a_number(value):
    p, G, f, r = _program()
    with pytest.raises(OpValidationError, match="fill#0 value: expected a real number|a float holds") as info:
        p.fill(f, value)
    assert info.value.buffer == "f" and not p.ops


@pytest.mark.parametrize("value", [0, -1.5, np.float32(2.0), np.int64(3), float("-inf"), float("nan")])
def test_fill_keeps_real_numbers(value):
    p, G, f, r = _program()
    op = p.fill(f, value)
    assert op.args["value"] == float(value) or np.isnan(op.args["value"])


@pytest.mark.parametrize("region", [lambda f: f[8:0, 0:16], lambda f: f[-1, 0], lambda f: f[0:100, 0:16],
                                    lambda f: f[100, 0:16], lambda f: f[2**70, 0:16]])
def test_fill_regions_must_lie_inside_the_buffer(region):
    p, G, f, r = _program()
    with pytest.raises(OpValidationError, match="lies outside f"):
        p.fill(region(f))


@pytest.mark.parametrize("point", [(-1, 0), (64, 0), (0, 2**70)])
def test_scalar_atomic_add_points_must_lie_inside(point):
    p, G, f, r = _program()
    with pytest.raises(OpValidationError, match="lies outside G"):
        p.atomic_add(G[point], 1.0)


@pytest.mark.parametrize("value", [None, "x", True, 10**400])
def test_scalar_atomic_add_values(value):
    p, G, f, r = _program()
    with pytest.raises(lk.LayoutError):
        p.atomic_add(G[0, 0], value)


@pytest.mark.parametrize("program", [None, "p", 3, {}, [], infer.Program])
def test_infer_layouts_needs_a_program(program):
    with pytest.raises(lk.ShapeError, match="infer_layouts: expected a layoutkit.infer.Program; found"):
        infer.infer_layouts(program)


@pytest.mark.parametrize("dim", [None, "a", 1.0, True, 2, -3])
def test_reduce_dim(dim):
    p, G, f, r = _program()
    with pytest.raises(OpValidationError, match="reduce#0: dim") as info:
        p.reduce(f, r, dim=dim)
    assert info.value.buffer == "f"


@pytest.mark.parametrize("kwargs", [{"kind": None}, {"kind": 3}, {"kind": "avg"}, {"clear": "no"}, {"clear": None}])
def test_reduce_options(kwargs):
    p, G, f, r = _program()
    with pytest.raises(OpValidationError):
        p.reduce(f, r, dim=1, **kwargs)


def test_reduce_takes_whole_buffers():
    p, G, f, r = _program()
    with pytest.raises(OpValidationError, match="whole buffers"):
        p.reduce(f[0:8, 0:16], r, dim=1)
    assert p.reduce(f, r, dim=np.int64(1)).args["dim"] == 1


@pytest.mark.parametrize("kwargs", [{"transpose_A": "yes"}, {"transpose_B": None}, {"clear_accum": 2},
                                    {"policy": None}, {"policy": 3}])
def test_gemm_options(kwargs):
    p = infer.Program(threads=128)
    A = p.alloc_shared("A", (64, 32), "float16")
    B = p.alloc_shared("B", (32, 64), "float16")
    C = p.alloc_fragment("C", (64, 64), "float32")
    with pytest.raises(OpValidationError):
        p.gemm(A, B, C, **kwargs)
    # shared A / B may be regions (M / N / K from them); a whole-buffer region is the buffer itself
    assert "A_region" not in p.gemm(A[0:64, 0:32], B, C).args
    assert p.gemm(A[0:64, 0:16], B[0:16, 0:64], C).args["B_region"] == ((0, 0), (16, 64))
    with pytest.raises(OpValidationError, match=r"operand C is a region of local.fragment buffer C with extents "
                                                r"\[64, 32\]; expected whole buffers"):
        p.gemm(A, B[0:32, 0:32], C[0:64, 0:32])
    with pytest.raises(OpValidationError, match="K differs"):
        p.gemm(A[0:64, 0:16], B, C)


@pytest.mark.parametrize("kwargs", [{"writes": None}, {"writes": 3}, {"writes": "f"}, {"reads": [3]},
                                    {"reads": [(None, "lambda i: (i, 0)")]}, {"compute": 3}])
def test_parallel_arguments(kwargs):
    p, G, f, r = _program()
    with pytest.raises(lk.LayoutError):
        p.parallel((8,), **kwargs)


@pytest.mark.parametrize("name", [None, 3, "", b"x"])
def test_buffer_names_are_strings(name):
    p = infer.Program()
    with pytest.raises(lk.ShapeError, match="buffer name must be a non-empty string"):
        p.tensor(name, (4,), "float32")


@pytest.mark.parametrize("shape", [(-8,), (0, 4), (4.0,), None, "8"])
def test_negative_and_odd_extents(shape):
    p = infer.Program()
    with pytest.raises(lk.ShapeError):
        p.alloc_fragment("x", shape, "float32")
    with pytest.raises(lk.ShapeError):
        p.parallel(shape)


def test_wrong_buffer_objects():
    p, G, f, r = _program()
    with pytest.raises(lk.ShapeError, match="base must be a Buffer"):
        p.alias("a", "G")
    with pytest.raises(lk.ShapeError, match="shape_of: expected a Buffer"):
        p.shape_of(None)
    with pytest.raises(lk.ShapeError, match="shape_of: expected a Buffer"):
        p.shape_of("nope")
    other = infer.Program().tensor("Z", (4,), "float32")
    with pytest.raises(lk.ShapeError, match="does not belong"):
        p.copy(other, r)
    with pytest.raises(lk.ShapeError, match="Program target"):
        infer.Program(target=None)


def test_parallel_loop_past_the_table_limit():
    from layoutkit.errors import LimitError
    from layoutkit.infer import Program

    p = Program(threads=128)
    f = p.alloc_fragment("f", (64, 64), "float32")
    with pytest.raises(LimitError, match=r"the loop \(2147483648, 32\) has 68719476736 points"):
        p.parallel((2**31, 32), writes=[(f, lambda i, j: (i % 64, j))])
