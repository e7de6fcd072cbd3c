"""The inverse's shortcuts (a transpose, an F2 map proved by its round trip) agree with the tables and keep the
general path's errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.errors import NotBijectiveError


def _round_trips(layout: lk.Layout) -> bool:
    coords = np.moveaxis(np.indices(layout.input_shape), 0, -1)
    return bool(np.array_equal(layout.inverse().apply(layout.table()), coords))


@pytest.mark.parametrize(("shape", "fn", "text"), [
    ((6, 10), lambda i, j: (j, i), "(_i, _j) -> (_j, _i)"),
    ((3, 1, 5), lambda i, j, k: (k, i, j), "(_i, _j, _k) -> (_j, 0, _i)"),
    ((2, 3, 4), lambda i, j, k: (j, k, i), "(_i, _j, _k) -> (_k, _i, _j)"),
])
def test_transpose_inverse_is_the_inverse_permutation(shape, fn, text):
    layout = lk.Layout(shape, fn)
    inv = layout.inverse()
    assert text in str(inv)
    assert inv.input_shape == layout.output_shape
    assert _round_trips(layout)


@pytest.mark.parametrize(("shape", "fn", "witness"), [
    ((8, 8), lambda i, j: (i ^ j, j ^ i), "collision"),
    ((8, 8), lambda i, j: (i * 2, j), "unreachable"),
    ((16,), lambda i: (i // 2,), "collision"),
])
def test_f2_maps_that_are_not_bijective_still_name_a_witness(shape, fn, witness):
    with pytest.raises(NotBijectiveError) as err:
        lk.Layout(shape, fn).inverse()
    assert witness in (err.value.witness or {})


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(6)), st.integers(0, 5))
def test_bit_permutations_with_a_swizzle_invert_exactly(order, xor_at):
    # six 2-wide digits of a 64x64 domain, placed in a new order over two outputs, one digit xor-ed with another
    def fn(i, j):
        digits = [i % 4, i % 16 // 4, i // 16, j % 4, j % 16 // 4, j // 16]
        if xor_at:
            digits[order[xor_at]] = digits[order[xor_at]] ^ digits[order[0]]
        placed = [digits[k] for k in order]
        return (placed[0] + placed[1] * 4 + placed[2] * 16, placed[3] + placed[4] * 4 + placed[5] * 16)

    layout = lk.Layout((64, 64), fn)
    assert layout.prove_bijective("enumerate")
    assert _round_trips(layout)
