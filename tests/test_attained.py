"""Exact output ranges from the node intervals (``output_shape`` without evaluating the domain),
checked against evaluating every coordinate."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import given, settings

import layoutkit as lk
from layoutkit.algebra.attained import attained_range, attained_ranges
from layoutkit.algebra.evaluate import compile_numpy, grid
from layoutkit.algebra.nodes import FloorMod, Sum
from layoutkit.testing import strategies as lks

from .test_properties import _built, raw_expressions


@settings(max_examples=300, deadline=None)
@given(raw_expressions())
def test_attained_range_is_the_true_range(case: tuple) -> None:
    tree, shape = case
    e = _built(tree, shape)
    got = attained_range(e)
    if got is None:
        return
    variables = tuple(lk.algebra.placeholder(d, n) for d, n in enumerate(shape))
    (values,) = compile_numpy((e,), variables)(*grid(shape))
    assert got == (int(np.min(values)), int(np.max(values))), str(e)


@settings(max_examples=200, deadline=None)
@given(lks.layouts(max_size=4096))
def test_output_shape_from_intervals_matches_the_table(layout: lk.Layout) -> None:
    table = layout.table().reshape(-1, len(layout.forward_index))
    want = tuple(int(m) + 1 for m in table.max(axis=0))
    fresh = lk.Layout.from_exprs(layout.input_shape, layout.forward_index)
    assert fresh.output_shape == want
    for r, lo, hi in zip(attained_ranges(layout.forward_index), table.min(axis=0), table.max(axis=0)):
        assert r is None or r == (int(lo), int(hi))


def test_output_shape_of_a_huge_quasi_affine_domain_is_read_off_the_intervals() -> None:
    layout = lk.Layout([65536, 65536], lambda i, j: ((i * 65536 + j) % 1000, (i * 3 + j) // 7))
    start = time.process_time()
    assert layout.output_shape == (1000, (3 * 65535 + 65535) // 7 + 1)
    assert time.process_time() - start < 1.0  # evaluating 2**32 points is refused, not slow


def test_a_sum_with_gaps_is_not_taken_for_a_full_residue_range() -> None:
    # i * 3 + j takes 0, 1, 3, 4, 6, 7, 9, 10 (never 2 mod 3), so % 6 stays below 5; built from the
    # node classes because the simplifier would rewrite it to (i % 2) * 3 + j
    i, j = lk.algebra.Var("_i", 4), lk.algebra.Var("_j", 2)
    gappy = FloorMod(Sum(((i, 3), (j, 1)), 0), 6)
    assert (gappy.lo, gappy.hi) == (0, 5)
    assert attained_range(gappy) is None
    dense = FloorMod(Sum(((i, 2), (j, 1)), 0), 5)  # 2 * i + j takes 0..7
    assert attained_range(dense) == (0, 4)
