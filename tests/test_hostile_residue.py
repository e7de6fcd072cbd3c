"""Inputs a held-out hostile generator found untyped or unbounded: each is now a typed error, and an explicit islpy
proof of an xor map answers or refuses within 5 s."""

from __future__ import annotations

import time

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.algebra import layout as layout_module
from layoutkit.errors import ProofBudgetError, ShapeError


@pytest.mark.parametrize("bad", [None, 3, "dim0", [[1]], [[[-1]]], [[[True]]], {"dim0": [None]}])
def test_layout_from_linear_refuses_what_is_no_basis(bad):
    with pytest.raises(ShapeError, match="F2 bases: "):
        lk.Layout.from_linear(bad)


def test_layout_from_linear_still_takes_bases():
    assert lk.Layout.from_linear({"dim0": [[1], [2]]}).is_equal(lk.Layout([4], lambda i: (i,)))


@pytest.mark.parametrize("bad", [None, {"register": [[1]]}, [[[1]]]])
def test_fragment_from_linear_refuses_what_is_no_f2_linear(bad):
    with pytest.raises(ShapeError, match="Fragment.from_linear: expected an F2Linear with in dims register / lane / "
                                         "warp; found"):
        lk.Fragment.from_linear(bad)


def test_collect_refuses_a_register_table_of_the_wrong_shape():
    f = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
    tile = np.arange(64).reshape(8, 8)
    assert np.array_equal(f.collect(f.distribute(tile)), tile)
    for shape in [(3, 3), (32,), (32, 1), (31, 2)]:
        with pytest.raises(ShapeError, match=r"collect: expected registers of shape \(threads >= 32, registers >= 2\)"):
            f.collect(np.zeros(shape))


def test_an_explicit_isl_proof_of_an_xor_map_answers_or_refuses_within_5_s():
    xor = lk.Layout([4736], lambda i: (i ^ (i & 5),))
    start = time.perf_counter()
    with pytest.raises(ProofBudgetError, match=r"prove_bijective\('isl'\) .*method='enumerate' decides its 4736 "
                                               r"coordinates.*still running after the budget of 4 s"):
        xor.prove_bijective("isl")
    assert time.perf_counter() - start < 5.0
    assert layout_module.ISL_BUDGET_S == 4.0
    assert xor.prove_bijective("enumerate").verdict is False
