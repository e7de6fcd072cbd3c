"""Bridges, both ways: tla.Layout <-> lk.Layout <-> F2Linear, and NV bank swizzles <-> tla.Swizzle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import tla
from layoutkit.errors import UnsupportedError
from layoutkit.targets import nv
from layoutkit.targets.nv.cute import cute_swizzle, cute_swizzled_layout, swizzle_kind
from layoutkit.tla.bridges import from_layout, from_linear, to_linear


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 16)), min_size=1, max_size=3))
def test_tla_to_layout_and_back(modes):
    shape = tuple(s for s, _ in modes)
    stride = tuple(d if s > 1 else 0 for s, d in modes)
    A = tla.Layout(shape, stride)
    L = A.to_layout()
    B = from_layout(L)
    assert B == A
    assert np.array_equal(B.to_layout().table(), L.table())


@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_tla_to_f2_and_back(bits, rnd):
    """Power-of-two extents on disjoint bits of the offset (in any order, with broadcast dims)."""
    order = list(range(len(bits)))
    rnd.shuffle(order)
    strides, low = [0] * len(bits), 0
    for d in order:
        strides[d] = (1 << low) if rnd.random() < 0.8 else 0
        low += bits[d] if strides[d] else 0
    A = tla.Layout(tuple(1 << b for b in bits), tuple(s if b else 0 for s, b in zip(strides, bits)))
    view = to_linear(A)
    assert from_linear(view) == A
    assert lk.Layout.from_linear(view).is_equal(A.to_layout())


def test_bridge_refusals():
    with pytest.raises(UnsupportedError, match="not affine"):
        from_layout(lk.Layout([4, 4], lambda i, j: i * 4 + (j ^ i)))
    with pytest.raises(UnsupportedError, match="not F2-linear"):
        to_linear(tla.Layout((3, 4), (1, 3)))
    with pytest.raises(UnsupportedError, match="share bits"):
        from_linear(lk.Layout([4, 4], lambda i, j: i * 4 + (j ^ i)).to_linear())
    with pytest.raises(UnsupportedError, match="strided run"):
        from_linear(lk.Layout([4], lambda i: i % 2 + i // 2 * 4).to_linear())


@pytest.mark.parametrize("kind", ["quarter", "half", "full"])
@pytest.mark.parametrize("dtype", ["float16", "int8", "float32"])
@pytest.mark.parametrize("rows", [8, 32])
def test_nv_bank_swizzle_is_a_cute_swizzle(kind, dtype, rows):
    width = {"quarter": 2, "half": 4, "full": 8}[kind] * (128 // nv.element_bits(dtype))
    L = nv.make_bank_swizzled_layout((rows, 2 * width), dtype, kind)
    C = cute_swizzled_layout(L)
    assert np.array_equal(C.offset_table(), L.linearized().table()[..., 0])
    assert swizzle_kind(C.outer, dtype) == kind  # and back: the swizzle names the NV kind
    assert cute_swizzle(kind, dtype) == C.outer


def test_cute_swizzle_examples():
    assert cute_swizzle("full", "float16") == tla.Swizzle(3, 3, 3)  # the classic 128B swizzle
    assert cute_swizzle("half", "float16") == tla.Swizzle(2, 3, 3)
    assert swizzle_kind(tla.Swizzle(3, 4, 3), "float16") is None
    assert swizzle_kind(tla.Swizzle(3, 4, 3), "int8") == "full"
    with pytest.raises(UnsupportedError):
        cute_swizzled_layout(nv.make_linear_layout((16, 64), "float16"))
