"""Reducers in layout inference (:mod:`layoutkit.infer.reducers`): the PartialFragment an update site induces,
the widening of disagreeing sites, the finalize destination, and the law the partial keeps: combining the
addend lanes of the registers the updates leave gives the reduction of the contributions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.errors import ShapeError
from layoutkit.infer import Program, infer_layouts
from layoutkit.infer.reducers import induced_partial, site_problem, wide_partial


def row_sum(M, N, threads, index=lambda i, k: (i,)):
    p = Program(threads=threads)
    A = p.tensor("A", (M, N), "float32")
    a = p.alloc_fragment("a", (M, N), "float32")
    p.copy(A, a)
    acc = p.alloc_reducer("acc", (M,), "float32")
    p.reducer_init(acc)
    p.parallel((M, N), reads=[(a, lambda i, k: (i, k))], updates=[(acc, index)])
    out = p.alloc_fragment("out", (M,), "float32")
    p.finalize_reducer(acc, out)
    return p


def test_row_sum_partial_is_induced_by_its_loop():
    r = infer_layouts(row_sum(32, 128, 128))
    acc, out = r.layout_map["acc"], r.layout_map["out"]
    assert isinstance(acc, lk.PartialFragment) and (acc.combine_size, acc.copy_size) == (32, 1)
    assert str(acc.forward_thread) == "_i % 4 * 32 + _rep" and acc.output_shape == (8,)
    assert not isinstance(out, lk.PartialFragment) and out.is_equal(acc.as_post_collective())


def test_replicated_loop_gives_copy_groups_above_the_addend_lanes():
    loop = lk.Fragment([8], forward_thread_fn=lambda i, r: r * 8 + i, replicate=16, forward_index_fn=lambda i: 0)
    P = induced_partial(loop, [-1], (1,))
    assert (P.combine_size, P.copy_size) == (8, 16)
    assert P.combine_steps() == [(8, 1)]


def test_two_sites_that_disagree_widen_to_every_thread_an_addend():
    p = Program(threads=128)
    a, b = p.alloc_fragment("a", (8,), "float32"), p.alloc_fragment("b", (16,), "float32")
    p.fill(a, 1.0)
    p.fill(b, 1.0)
    acc = p.alloc_reducer("acc", (1,), "float32", op="max")
    p.reducer_init(acc)
    p.parallel((8,), reads=[(a, lambda i: (i,))], updates=[(acc, lambda i: (0,))])
    p.parallel((16,), reads=[(b, lambda i: (i,))], updates=[(acc, lambda i: (0,))])
    lay = infer_layouts(p).layout_map["acc"]
    assert lay.is_equal(wide_partial((1,), (0, 128))) and lay.combine_size == 128


def test_reducer_without_updates_starts_wide():
    p = Program(threads=64)
    acc = p.alloc_reducer("acc", (4,), "float32")
    p.reducer_init(acc)
    out = p.alloc_fragment("out", (4,), "float32")
    p.finalize_reducer(acc, out)
    r = infer_layouts(p)
    assert r.layout_map["acc"].is_equal(wide_partial((4,), (0, 64)))
    assert r.layout_map["out"].replicate_size == 64


def test_index_that_is_no_loop_variable_takes_the_wide_plan():
    r = infer_layouts(row_sum(32, 128, 128, index=lambda i, k: (i // 2 * 2,)))
    assert r.layout_map["acc"].is_equal(wide_partial((32,), (0, 128)))
    loop = lk.Fragment([4], forward_thread_fn=lambda i: i)
    assert site_problem(loop, (4,), None, (4,), (0, 4), True).startswith("an update index")
    assert site_problem(loop, (4,), [0], (4,), (0, 4), False) == "contribution value is not replica-safe"
    assert site_problem(loop, (4,), [0], (4,), (0, 8), True) == "loop layout does not cover the full participant extent"


def test_a_partial_never_equals_its_post_collective_reading():
    P = wide_partial((4,), (0, 32))
    assert not P.is_equal(P.as_post_collective()) and P.as_post_collective().is_equal(P.as_post_collective())


def test_bad_reducer_programs_are_typed():
    p = Program(threads=32)
    with pytest.raises(ShapeError, match="op 'avg'"):
        p.alloc_reducer("r", (4,), "float32", op="avg")
    acc = p.alloc_reducer("acc", (4,), "float32")
    with pytest.raises(ShapeError, match="expected the same shape"):
        p.finalize_reducer(acc, p.alloc_fragment("out", (8,), "float32"))
    with pytest.raises(ShapeError, match="expected a reducer"):
        p.reducer_init(p.alloc_fragment("f", (4,), "float32"))


def test_reducer_program_round_trips_through_json():
    p = row_sum(16, 64, 64)
    q = Program.from_json(p.to_json())
    assert q.to_json() == p.to_json()
    assert infer_layouts(q).layout_map["acc"].is_equal(infer_layouts(p).layout_map["acc"])


@settings(max_examples=25, deadline=None)
@given(m=st.sampled_from([1, 2, 4, 8, 16, 32]), n=st.sampled_from([1, 2, 4, 8, 16, 64, 128]),
       threads=st.sampled_from([32, 64, 128]), seed=st.integers(0, 2**16))
def test_law_addend_lanes_combine_to_the_row_sums(m, n, threads, seed):
    """Every thread running loop point (i, k) (each replica of the loop layout) adds x[i, k] to its register
    of acc[i]; the addend lanes of every copy group then sum to the row sums."""
    r = infer_layouts(row_sum(m, n, threads))
    loop, P = r.loop_layouts["parallel#2"], r.layout_map["acc"]
    x = np.random.default_rng(seed).integers(-50, 50, size=(m, n))
    regs = np.zeros((threads, max(P.local_size, 1)), dtype=np.int64)
    lt, pt, pi = loop.thread_table(), P.thread_table(), P.index_table()
    for rep in range(loop.replicate_size):
        for i in range(m):
            for k in range(n):
                regs[lt[rep, i, k], pi[i]] += x[i, k]
    assert P.combine(regs).tolist() == x.sum(axis=1).tolist()
    for g in range(P.copy_size):  # every copy group holds the same partials
        lanes = [regs[pt[lane + g * P.combine_size, i], pi[i]] for i in range(m) for lane in range(P.combine_size)]
        assert np.array(lanes).reshape(m, -1).sum(axis=1).tolist() == x.sum(axis=1).tolist()
