"""Reproducers the TLA fuzz group found: each used to raise a raw Python/numpy error (or answer nonsense) and
now raises a typed error naming the argument, or answers exactly."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import tla


@pytest.mark.parametrize("call, error, message", [
    (lambda: tla.make_layout((2**40, 2**40)).table(), lk.LimitError, r"table\(\) would hold .* entries"),
    (lambda: tla.make_layout((2**20, 2**20)).offset_table(), lk.LimitError, r"offset_table\(\) would hold"),
    (lambda: tla.make_composed_layout(tla.Swizzle(1, 1, 1), 0, tla.Swizzle(2, 50, 8)).table(), lk.LimitError,
     "at most 2\\*\\*26"),
    (lambda: tla.Swizzle(3, 3, 3)(None), lk.CoordinateError, "found NoneType None"),
    (lambda: tla.Swizzle(3, 3, 3)("x"), lk.CoordinateError, "found str 'x'"),
    (lambda: tla.Swizzle(3, 3, 3)(1.5), lk.CoordinateError, "found float 1.5"),
    (lambda: tla.Swizzle(3, 3, 3)(np.array([1.0])), lk.CoordinateError, "dtype float64"),
    (lambda: tla.Swizzle(3, 3, 3)(np.array([-1])), lk.CoordinateError, "least value -1"),
    (lambda: tla.Swizzle(3, 2**40, 3), lk.LimitError, "bits \\+ base \\+ \\|shift\\|"),
    (lambda: tla.ceil_div(4, 0), lk.ShapeError, "divisor must be a positive integer; found 0"),
    (lambda: tla.ceil_div(4, None), lk.ShapeError, "ceil_div needs integer leaves .* found NoneType None"),
    (lambda: tla.round_up(4, 0), lk.ShapeError, "positive integer"),
    (lambda: tla.round_up(2**31, ((), ())), lk.ShapeError, "round_up needs integer leaves"),
    (lambda: tla.unflatten(None, (1, 2)), lk.ShapeError, "unflatten: the values must be a tuple"),
    (lambda: tla.make_dynamic(("x",)), lk.ShapeError, "make_dynamic needs integer leaves"),
    (lambda: tla.inner_product((1, 2), (3,)), lk.ShapeError, "congruent"),
    (lambda: tla.product(("ab",)), lk.ShapeError, "product needs integer leaves"),
    (lambda: tla.compact_col_major(None), lk.ShapeError, "compact_col_major needs integer leaves"),
    (lambda: tla.coalesce_shape(()), lk.ShapeError, "no extent"),
    (lambda: tla.coalesce_shape((None, 1)), lk.ShapeError, "coalesce_shape: shape"),
    (lambda: tla.coalesce(tla.make_layout((4, 4)), "x"), lk.ShapeError, "profile must be None, an integer or a tuple"),
    (lambda: tla.filter(tla.make_layout((4, 4)), 2.5), lk.ShapeError, "profile must be"),
    (lambda: tla.composition(tla.make_layout(1), ()), lk.ShapeError, "the tiler \\(\\) has no modes"),
    (lambda: tla.zipped_divide(tla.make_layout(1, 0), ()), lk.ShapeError, "the tiler \\(\\) has no modes"),
    (lambda: tla.logical_product(tla.make_layout(4), ()), lk.ShapeError, "the tiler \\(\\) has no modes"),
    (lambda: tla.zipped_divide(None, None), lk.ShapeError, "logical_divide: layout must be a tla.Layout"),
    (lambda: tla.composition(None, None), lk.ShapeError, "composition: left operand must be"),
    (lambda: tla.Layout([], None, None), lk.ShapeError, "empty mode"),
    (lambda: tla.Layout(((), 2)), lk.ShapeError, "empty mode"),
    (lambda: tla.idx2crd(1, 2, 0), lk.CoordinateError, "stride 0 .* is not positive"),
    (lambda: tla.make_layout_from_tag("RowMajor", "0X\u00b9", 4, 4), lk.DtypeError, "unknown dtype"),
    (lambda: tla.make_composed_layout(tla.make_layout(4), 2**63, tla.make_layout(4)).table(),
     lk.IntegerOverflowError, "past int64"),
])
def test_typed_refusals(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_strides_past_int64_evaluate_exactly():
    L = tla.make_layout(1, 2**63)
    assert L.table().tolist() == [0] and L(0) == 0
    with pytest.raises(lk.IntegerOverflowError):
        tla.make_layout(2, 2**63).table()
    assert tla.crd2idx(np.arange(2), (2, 2), (2**62, 1)).tolist() == [0, 2**62]
    assert tla.idx2crd(np.arange(3), 2, 2**63).tolist() == [0, 0, 0]
    assert [c.tolist() for c in tla.idx2crd(np.arange(3), (2**63, 2))] == [[0, 1, 2], [0, 0, 0]]
    assert tla.crd2idx(np.arange(3), (2**63, 2), (0, 0)).tolist() == [0, 0, 0]


def test_valid_inputs_keep_their_answers():
    assert tla.ceil_div((6, 4), 4) == (2, 4) and tla.round_up(100, 16) == 112
    assert tla.coalesce_shape(((tla.Int(2), tla.Int(4)), 3, 5)) == (8, 15)
    nested = tla.make_layout(((2, 2), (2, 2)), ((1, 4), (2, 8)))
    assert str(tla.coalesce(nested, (1, 1))) == str(tla.coalesce(nested, [1, 1])) == "((2,2),(2,2)):((1,4),(2,8))"
    assert tla.composition(tla.make_layout(4), None) == tla.make_layout(4)
    assert tla.Swizzle(3, 3, 3)(np.int64(9)) == 9 and tla.Swizzle(3, 3, 3)(np.array(9)) == 9
    sw = tla.make_composed_layout(tla.Swizzle(2, 0, 2), 0, tla.make_layout((4, 4), (4, 1)))
    assert sw(np.arange(4)).tolist() == [sw(i) for i in range(4)]
