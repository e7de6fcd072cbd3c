"""Parametric fragments: proofs for every value of the symbols, checked table for table against the
concrete fragments of several bindings; refuted claims carry the breaking assignment."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.algebra.parametric import Symbol
from layoutkit.errors import ShapeError, UnsupportedError
from layoutkit.fragment.parametric import ParametricFragment
from layoutkit.targets import nv
from layoutkit.targets.nv.parametric import make_parametric_mma_store_layout

ATOM = lk.Fragment([16, 8], forward_thread_fn=lambda i, j: i % 8 * 4 + j // 2,
                   forward_index_fn=lambda i, j: i // 8 * 2 + j % 2)
M = Symbol("M", lo=16, multiple=16)


def slots_are_a_bijection(frag: lk.Fragment) -> bool:
    keys = frag.thread_table() * frag.local_size + frag.index_table()[None]
    return np.array_equal(np.sort(keys.reshape(-1)), np.arange(frag.thread_extent * frag.local_size))


def same_tables(a: lk.Fragment, b: lk.Fragment) -> bool:
    return (a.input_shape == b.input_shape and np.array_equal(a.thread_table(), b.thread_table())
            and np.array_equal(a.index_table(), b.index_table()))


@pytest.mark.parametrize("warp_order", ["layoutkit", "triton"])
@pytest.mark.parametrize(("brw", "bcw", "wct"), [(1, 1, 16), (2, 1, 8), (1, 2, 32), (2, 2, 16), (4, 1, 24)])
def test_mma_accumulator_over_symbolic_rows_is_the_concrete_one_for_every_row_count(warp_order, brw, bcw, wct):
    rows = Symbol("M", lo=16 * brw, multiple=16 * brw)
    C = make_parametric_mma_store_layout(rows, brw, bcw, wct, warp_order=warp_order)
    assert bool(C.prove_bijective()) and bool(C.prove_injective())
    for k in (1, 2, 3, 5):
        m = 16 * brw * k
        concrete = nv.make_mma_store_layout(brw, bcw, m // brw, wct, warp_order=warp_order)
        bound = C.bind({"M": m})
        assert same_tables(bound, concrete)
        assert bool(concrete.prove_injective()) and slots_are_a_bijection(concrete)
        assert int(C.thread_extent().subs(rows.sym, m)) == concrete.thread_extent == 32 * brw * bcw
        assert int(C.local_size().subs(rows.sym, m)) == concrete.local_size
        thread, index = C.tables({"M": m})
        assert np.array_equal(thread, concrete.thread_table()) and np.array_equal(index, concrete.index_table())


def test_mma_accumulator_float64_atom_and_refusals():
    rows = Symbol("M", lo=8, multiple=8)
    C = make_parametric_mma_store_layout(rows, 1, 1, 16, dtype="float64")
    assert bool(C.prove_bijective())
    for m in (8, 16, 40):
        assert same_tables(C.bind({"M": m}), nv.make_mma_store_layout(1, 1, m, 16, dtype="float64"))
    with pytest.raises(ShapeError, match="= 32 "):
        make_parametric_mma_store_layout(Symbol("M", lo=16, multiple=16), 2, 1, 16)
    with pytest.raises(UnsupportedError, match="m16n8"):
        make_parametric_mma_store_layout(rows, 1, 1, 16, dtype="float64", warp_order="triton")
    with pytest.raises(ShapeError, match="warp_order"):
        make_parametric_mma_store_layout(M, 1, 1, 16, warp_order="cute")


def test_inverse_and_apply_agree_with_the_concrete_fragment_on_every_slot():
    C = make_parametric_mma_store_layout(Symbol("M", lo=32, multiple=32), 2, 2, 16)
    for m in (32, 64):
        values = {"M": m}
        concrete = C.bind(values)
        inv = concrete.inverse().table()  # (index, thread) -> (i, j, rep)
        for thread in range(0, concrete.thread_extent, 13):
            for index in range(concrete.local_size):
                coord, rep = C.inverse(thread, index, values)
                assert (*coord, rep) == tuple(int(v) for v in inv[index, thread])
                assert C.apply(coord, values, rep) == (thread, index)
                assert concrete.map_forward_thread(coord) == thread
        with pytest.raises(ShapeError, match="outside"):
            C.inverse(concrete.thread_extent, 0, values)


def test_a_fragment_that_fails_for_some_value_gets_that_value_as_witness():
    bad = ParametricFragment((M,), ATOM, (M.sym / 16, 1), (0, 0), (2, 0))  # index stride 2: slots overlap
    proof = bad.prove_injective()
    assert not proof and proof.witness["values"] == {"M": 32}
    (xa, ra), (xb, rb), slot = proof.witness["collision"]
    assert bad.apply(xa, {"M": 32}, ra) == bad.apply(xb, {"M": 32}, rb) == slot
    assert not bad.bind({"M": 32}).prove_injective()
    assert bool(bad.bind({"M": 16}).prove_injective())  # one row tile: below the witness it holds
    assert not bad.prove_bijective()
    with pytest.raises(UnsupportedError, match="not proved bijective"):
        bad.inverse(0, 0, {"M": 32})


def test_a_thread_pitch_that_is_too_small_for_large_values_is_refuted_at_the_first_one():
    N = Symbol("N", lo=1)
    four = lk.Fragment([1, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: 0)
    eight = lk.Fragment([1, 8], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: 0)
    # N column groups of 4 threads at a thread pitch of 16: injective for every N, gaps between groups
    gappy = ParametricFragment((N,), four, (1, N.sym), (0, 16), (0, 0))
    assert bool(gappy.prove_injective()) and not gappy.prove_bijective()
    assert bool(ParametricFragment((N,), four, (1, N.sym), (0, 4), (0, 0)).prove_bijective())
    # groups of 8 threads at a pitch of 4 overlap as soon as there are two groups
    tight = ParametricFragment((N,), eight, (1, N.sym), (0, 4), (0, 0))
    proof = tight.prove_injective()
    assert not proof and proof.witness["values"] == {"N": 2}
    assert not tight.bind({"N": 2}).prove_injective() and bool(tight.bind({"N": 1}).prove_injective())


def test_a_broadcast_digit_breaks_injectivity_unless_its_extent_is_one():
    K = Symbol("K", lo=1)
    F = ParametricFragment((K,), ATOM, (K.sym, 1), (0, 0), (0, 0))
    proof = F.prove_injective()
    assert not proof and proof.witness["values"] == {"K": 2}
    one = ParametricFragment((Symbol("K", lo=1, hi=1),), ATOM, (Symbol("K", lo=1, hi=1).sym, 1), (0, 0), (0, 0))
    assert bool(one.prove_injective()) and bool(one.prove_bijective())


def test_replicated_atom_and_containment():
    rep_atom = lk.Fragment([16, 8], forward_thread_fn=lambda i, j, r: r * 32 + i % 8 * 4 + j // 2,
                           forward_index_fn=lambda i, j: i // 8 * 2 + j % 2, replicate=2)
    big = ParametricFragment((M,), rep_atom, (M.sym / 16, 1), (0, 0), (4, 0))
    small = ParametricFragment((M,), ATOM, (M.sym / 16, 1), (0, 0), (4, 0))
    assert bool(big.prove_injective()) and bool(big.prove_bijective())
    assert bool(big.contains(small)) and bool(big.contains(big))
    moved = ParametricFragment((M,), ATOM, (M.sym / 16, 1), (64, 0), (0, 0))  # row tiles on other threads
    proof = big.contains(moved)
    assert not proof and proof.witness["values"] == {"M": 32}
    assert not big.bind({"M": 32}).contains(moved.bind({"M": 32}))
    for m in (16, 48):
        assert bool(big.bind({"M": m}).contains(small.bind({"M": m})))
    with pytest.raises(ShapeError, match="ParametricFragment"):
        big.contains(ATOM)


def test_bad_arguments():
    with pytest.raises(ShapeError, match="concrete Fragment"):
        ParametricFragment((M,), lk.Layout([4], lambda i: i), (M.sym,), (0,), (1,))
    with pytest.raises(ShapeError, match="thread range"):
        ParametricFragment((M,), ATOM.bind_thread_range(0, 32), (M.sym / 16, 1), (0, 0), (4, 0))
    with pytest.raises(ShapeError, match="expected 2 repeats"):
        ParametricFragment((M,), ATOM, (M.sym,), (0,), (1,))
    with pytest.raises(ShapeError, match="as many thread and index strides"):
        ParametricFragment((M,), ATOM, ((M.sym, 2), 1), ((0,), 0), ((1, 0), 0))
    with pytest.raises(ShapeError, match="no assumptions"):
        ParametricFragment((), ATOM, (M.sym, 1), (0, 0), (4, 0))
    F = ParametricFragment((M,), ATOM, (M.sym / 16, 1), (0, 0), (4, 0))
    with pytest.raises(ShapeError, match="no value"):
        F.apply((0, 0), {})
    with pytest.raises(ShapeError, match="outside"):
        F.apply((16, 0), {"M": 16})
    with pytest.raises(ShapeError, match="assumptions"):
        F.bind({"M": 24})
    assert F == ParametricFragment((M,), ATOM, (M.sym / 16, 1), (0, 0), (4, 0)) and len({F, F}) == 1


ATOMS = [
    ATOM,
    lk.Fragment([2, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i),
    lk.Fragment([4, 2], forward_thread_fn=lambda i, j, r: r * 4 + i, forward_index_fn=lambda i, j: j, replicate=2),
]
STRIDE = st.sampled_from([0, 1, 2, 4, 8, 32, "A", "2A", "B"])


# bijective for every value (rare among the random draws): (atom, per-dim (repeat, thread stride, index stride))
BIJECTIVE = [(0, [("A", 32, 0), (1, 0, 0)]), (1, [(2, 0, 2), ("B", 4, 0)]), (2, [("A", 0, 2), ("B", 8, 0)])]


def _stride(code, A, B):
    return {"A": A.sym, "2A": 2 * A.sym, "B": B.sym}.get(code, code)


@given(st.integers(0, len(ATOMS) - 1), st.lists(st.tuples(st.sampled_from(["A", "B", 1, 2]), STRIDE, STRIDE),
                                                min_size=2, max_size=2))
@example(*BIJECTIVE[0])
@example(*BIJECTIVE[1])
@example(*BIJECTIVE[2])
def test_proof_verdicts_agree_with_enumeration_of_several_bindings(which, dims):
    """Soundness: a proof holds on every enumerated binding; a refutation's witness binding really fails."""
    A, B = Symbol("A", lo=1, hi=4), Symbol("B", lo=1, hi=3)
    reps = [{"A": A.sym, "B": B.sym}.get(r, r) for r, _, _ in dims]
    F = ParametricFragment((A, B), ATOMS[which], reps, [_stride(t, A, B) for _, t, _ in dims],
                           [_stride(i, A, B) for _, _, i in dims])
    if (which, dims) in BIJECTIVE:
        assert bool(F.prove_bijective())
    for name in ("prove_injective", "prove_bijective"):
        try:
            proof = getattr(F, name)()
        except UnsupportedError:
            continue
        check = slots_are_a_bijection if name == "prove_bijective" else (lambda f: bool(f.prove_injective()))
        if proof:
            for a in (1, 2, 4):
                for b in (1, 3):
                    assert check(F.bind({"A": a, "B": b}))
            if name == "prove_bijective":  # the inverse finds every slot's element
                values = {"A": 3, "B": 2}
                thread, index = F.tables(values)
                for r, *x in zip(*(axis.ravel()[::5] for axis in np.indices(thread.shape))):
                    slot = (int(thread[(r, *x)]), int(index[tuple(x)]))
                    assert F.inverse(*slot, values) == (tuple(int(v) for v in x), int(r))
        elif "values" in proof.witness:
            assert not check(F.bind(proof.witness["values"]))


@pytest.mark.parametrize(("brw", "bcw", "wct", "dtype"), [(4, 1, 64, "float16"), (4, 2, 32, "float16"),
                                                          (8, 1, 16, "int8"), (4, 1, 24, "float16")])
def test_wgmma_accumulator_over_symbolic_rows_is_the_concrete_one_for_every_row_count(brw, bcw, wct, dtype):
    from layoutkit.targets.nv.parametric import make_parametric_wgmma_store_layout

    rows = Symbol("M", lo=16 * brw, multiple=16 * brw)
    C = make_parametric_wgmma_store_layout(rows, brw, bcw, wct, dtype=dtype)
    assert bool(C.prove_bijective()) and bool(C.prove_injective())
    for k in (1, 2, 3):
        m = 16 * brw * k
        concrete = nv.make_wgmma_store_layout(brw, bcw, m // brw, wct, dtype=dtype)
        assert same_tables(C.bind({"M": m}), concrete)
        assert slots_are_a_bijection(concrete)
        assert int(C.local_size().subs(rows.sym, m)) == concrete.local_size
    with pytest.raises(ShapeError, match="multiple of 4"):
        make_parametric_wgmma_store_layout(rows, 2, 1, wct)
