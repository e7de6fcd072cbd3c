"""Layout and Fragment entry points refuse bad arguments with typed errors (issue reproducers)."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk

L = lk.Layout([4, 4], lambda i, j: (j, i))
F = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)


@pytest.mark.parametrize("shape", [[2**63], [2**70], [2**40, 2**40], [1] * 65])
def test_huge_shapes_are_limit_errors(shape):
    with pytest.raises(lk.LimitError):
        lk.Layout(shape, lambda *xs: xs[0])


def test_tables_of_huge_domains_are_refused_not_allocated():
    big = lk.Layout([3 * 2**60], lambda i: i)
    with pytest.raises(lk.LimitError):
        big.table()
    assert big.output_shape == (3 * 2**60,)  # the identity's interval is attained: no table
    odd = lk.Layout([3 * 2**60], lambda i: i * 3 % 7)  # its maximum needs the values, which are refused
    with pytest.raises(lk.LimitError):
        odd.output_shape  # noqa: B018
    assert "(?)" in str(odd)
    f2 = lk.Layout([2**62], lambda i: i)  # affine over the bits: the box comes from the structure, no table
    with pytest.raises(lk.LimitError):
        f2.table()
    assert f2.output_shape == (2**62,)


@pytest.mark.parametrize("fn", [
    lambda i: None, lambda i: "i", lambda i: object(), lambda i: (i, (i, i)), lambda i: 1j, lambda i: i * 1.5,
    lambda i: [], lambda i: abs(i), lambda i: min(i, 2), lambda i: i < 2, lambda i: i > 2, lambda i: i ** 2,
    lambda i: ~i, lambda i: 2 ** i, lambda i: np.zeros(2),
], ids=["none", "str", "object", "ragged", "complex", "float", "empty", "abs", "min", "lt", "gt", "pow", "invert",
        "rpow", "ndarray"])
def test_bad_index_functions_raise_layout_errors(fn):
    with pytest.raises(lk.LayoutError):
        lk.Layout([4], fn)


def test_shift_by_a_variable_is_unsupported():
    with pytest.raises(lk.UnsupportedError):
        lk.Layout([4, 4], lambda i, j: i << j)


def test_user_lambda_that_raises_is_chained():
    with pytest.raises(lk.UserFunctionError, match="ZeroDivisionError") as info:
        lk.Layout([4], lambda i: 1 // 0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_duplicate_lambda_arguments_in_text_are_refused():
    with pytest.raises(lk.ExprError):
        lk.Layout([4, 4], lk.parse_index_fn("lambda i, i: i"))


@pytest.mark.parametrize("coord", [[None, 1], ["a", 1], [1.5, 1], [2**70, 1], [-1, 1], [[1], 1], [1j, 1]])
def test_bad_single_coordinates(coord):
    with pytest.raises(lk.CoordinateError):
        L.map_forward_index(coord)


@pytest.mark.parametrize("coords", [
    [[1, 2], [3]], [["a", "b"]], [[None, 1]], [[object(), 1]], [[1j, 1]], [[2**70, 1]], [[float("nan"), 1]],
    [[float("inf"), 1]], np.array([[2**63, 1]], dtype=np.uint64), None, [[1e30, 1.0]],
], ids=["ragged", "str", "none", "object", "complex", "huge", "nan", "inf", "uint64", "None", "huge-float"])
def test_bad_coordinate_arrays(coords):
    with pytest.raises(lk.CoordinateError):
        L.apply(coords)


@pytest.mark.parametrize("region", [[1, 2], None, [None, None], [(0.5, 2), (0, 2)], [slice(0, 4, 2), (0, 4)],
                                    [(0, 1, 2), (0, 4)], "ab", [(True, 2), (0, 4)]])
def test_bad_regions(region):
    with pytest.raises(lk.ShapeError):
        L.map_region_bounds(region)


def test_open_slices_take_the_extent():
    assert L.map_region_bounds([slice(None), slice(1, None)]) == ((1, 4), (0, 4))
    assert L.map_region_bounds([(0, 2), slice(None, 3)]) == ((0, 3), (0, 2))


def test_thread_function_returning_a_tuple_or_raising():
    with pytest.raises(lk.ExprError, match="one thread expression"):
        lk.Fragment([4], forward_thread_fn=lambda i: (i, i))
    with pytest.raises(lk.UserFunctionError):
        lk.Fragment([4], forward_thread_fn=lambda i: 1 // 0)
    with pytest.raises(lk.UserFunctionError):
        lk.Fragment([4], forward_fn=lambda i: [][1])
    with pytest.raises(lk.UserFunctionError):
        lk.Fragment([4], forward_thread_fn=lambda i: i, forward_index_fn=lambda i: {}["x"])


@pytest.mark.parametrize("repeats", [None, "ab", [None, 1], [2**40, 2**40], 1.5])
def test_bad_repeats(repeats):
    with pytest.raises(lk.LayoutError):
        F.repeat(repeats)


def test_huge_replication_tables_are_refused():
    with pytest.raises(lk.LimitError):
        F.replicate(2**40).thread_table()
    with pytest.raises(lk.LimitError):
        lk.Fragment([4], forward_thread_fn=lambda i, r: i + r, replicate=2**40).thread_extent  # noqa: B018
    with pytest.raises(lk.ShapeError):
        F.replicate(None)


def test_bad_thread_coordinates():
    with pytest.raises(lk.CoordinateError):
        F.map_forward_thread([2**70, 1])
    with pytest.raises(lk.LayoutError):
        F.map_forward_thread([None, 1])
    with pytest.raises(lk.ShapeError):
        F.map_forward_thread([1, 1], rep=5)
    with pytest.raises(lk.ShapeError):
        F.bind_thread_range(float("inf"), 4)


def test_partial_combine_checks_its_registers():
    frag = lk.Fragment([4], forward_thread_fn=lambda i, r: i * 2 + r, replicate=2, forward_index_fn=lambda i: 0)
    p = lk.PartialFragment(frag, 2)
    assert p.combine(np.ones((8, 1))).tolist() == [2.0] * 4
    for bad in (None, "x", [[1, 2], [3]], np.zeros(3), np.zeros((1, 1)), np.array([["a"]])):
        with pytest.raises(lk.ShapeError):
            p.combine(bad)
    for size in ("x", None, 1.5, 0, 3):
        with pytest.raises(lk.ShapeError):
            lk.PartialFragment(frag, size) if size is not None else lk.PartialFragment(frag, "")


def test_enumeration_proof_with_a_huge_output_box():
    spread = lk.Layout([4], lambda i: i * 2**40)
    proof = spread.prove_bijective("enumerate")
    assert not proof and proof.witness == {"size_mismatch": (4, 3 * 2**40 + 1)}
    clash = lk.Layout([4, 2], lambda i, j: (i // 2 * 2**40, j))
    proof = clash.prove_bijective("enumerate")
    assert not proof and proof.witness["collision"][:2] == ((0, 0), (1, 0))


@pytest.mark.parametrize("coord", [None, 3, "ab", object()])
def test_coordinates_that_are_not_sequences(coord):
    with pytest.raises(lk.ShapeError):
        L.map_forward_index(coord)
    with pytest.raises(lk.ShapeError):
        F.map_forward_thread(coord)


def test_huge_region_is_a_limit_error():
    big = lk.Layout([2**31], lambda i: i)
    with pytest.raises(lk.LimitError):
        big.map_region_bounds([slice(None)])
    assert big.map_region_bounds([(5, 9)]) == ((5, 9),)


@pytest.mark.parametrize("fn", [lambda i: i * (1 << 20000), lambda i: i + (1 << 20000), lambda i: i * 3 - (1 << 20001),
                                lambda i: -(1 << 20000) - i])
def test_constants_past_4300_digits_print_and_refuse_typed(fn):
    # str() of such an int raises ValueError (Python's decimal conversion limit): printed in hex instead
    layout = lk.Layout([4], fn)
    assert "0x" in layout.describe()
    for call in (layout.table, lambda: str(layout), layout.inverse):
        try:
            call()
        except lk.LayoutError:
            pass
