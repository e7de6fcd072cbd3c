"""Hypothesis properties of fragments: injectivity, inverse, replicate/condense/repeat laws,
containment reflexive and transitive."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.testing.strategies import fragments


def _coords(shape):
    return np.moveaxis(np.indices(shape), 0, -1).reshape(-1, len(shape))


@given(fragments(replicate=1))
def test_unique_slots_iff_injective(f):
    threads = f.apply_thread(_coords(f.input_shape))
    index = f.apply(_coords(f.input_shape))
    pairs = {(int(t), tuple(int(v) for v in i)) for t, i in zip(threads, index)}
    assert (len(pairs) == f.size) == f.prove_injective().verdict


@given(fragments(replicate=1))
def test_inverse_round_trips_when_injective_onto_the_box(f):
    layout = lk.Layout.from_exprs(f.input_shape, f.forward_index + (f.forward_thread,))
    if not layout.is_bijective():
        return
    inv = f.inverse()
    coords = _coords(f.input_shape)
    back = inv.apply(np.concatenate([f.apply(coords), f.apply_thread(coords)[:, None]], axis=1))
    assert np.array_equal(back[:, :-1], coords) and not back[:, -1].any()


@given(fragments(), st.integers(1, 3))
def test_replicate_law(f, k):
    r = f.replicate(k)
    table = r.thread_table()
    for rep in range(r.replicate_size):
        base = f.thread_table()[rep % f.replicate_size]
        assert np.array_equal(table[rep], base + f.thread_extent * (rep // f.replicate_size))
    assert r.contains(f)


@given(fragments())
def test_condense_keeps_the_thread_sets(f):
    c = f.condense_rep_var()
    assert c.replicate_size <= f.replicate_size
    a = np.unique(f.thread_table().reshape(f.replicate_size, -1), axis=0)
    b = np.unique(c.thread_table().reshape(c.replicate_size, -1), axis=0)
    assert np.array_equal(a, b)


@given(fragments(replicate=1), st.data())
def test_repeat_law(f, data):
    reps = [data.draw(st.integers(1, 3)) for _ in f.input_shape]
    on_thread = data.draw(st.booleans())
    if not on_thread and len(f.forward_index) != 1:
        return
    r = f.repeat(reps, on_thread, True)
    coords = _coords(r.input_shape)
    inner = coords % np.asarray(f.input_shape)
    q = coords // np.asarray(f.input_shape)
    ri = np.zeros(len(coords), dtype=np.int64)
    for d in range(len(reps)):
        ri = ri * reps[d] + q[:, d]
    if on_thread:
        assert np.array_equal(r.apply_thread(coords), f.apply_thread(inner) + f.thread_extent * ri)
    else:
        assert np.array_equal(r.apply(coords)[:, 0], f.apply(inner)[:, 0] + f.output_shape[0] * ri)


@given(fragments(), st.integers(1, 2), st.integers(1, 2))
def test_containment_reflexive_and_transitive(f, k1, k2):
    a = f
    b = a.replicate(k1)
    c = b.replicate(k2)
    assert a.contains(a) and b.contains(b)
    assert b.contains(a) and c.contains(b) and c.contains(a)


@given(fragments(replicate=4), fragments(replicate=4), st.integers(1, 4))
def test_contains_mask_and_sort_paths_agree(a, b, rep):
    """Fragment.contains tests membership with a (thread, element) mask, or by sorting past a size limit: both
    decide alike (the witness included)."""
    from layoutkit.fragment import fragment as proofs

    b = b if b.input_shape == a.input_shape else a.replicate(rep)
    # more than 256 replica pairs: the mask (or sort) path, not the pairwise one
    pairs = ((a.replicate(32), b.replicate(4)), (b.replicate(32), a.replicate(4)), (a.replicate(64), a),
             (a.replicate(4), a.replicate(128)))  # the last is refuted: the witness must match too
    for x, y in pairs:
        fast = x.contains(y)
        saved, proofs.MASK_LIMIT = proofs.MASK_LIMIT, 0
        try:
            slow = x.contains(y)
        finally:
            proofs.MASK_LIMIT = saved
        assert (fast.verdict, fast.witness) == (slow.verdict, slow.witness)
