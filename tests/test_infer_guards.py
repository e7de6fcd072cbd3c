"""Guards as values: the expression of a loop guard holds exactly on the (thread, register) slots of the loop
layout that hold an element, and the printed form is TileLang's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutkit import infer
from layoutkit.errors import UnsupportedError
from layoutkit.infer.guards import Guard, Predicate
from layoutkit.infer.loops import plan_partition, plan_slot_guard, slot_guard


def _owned(frag, threads: int) -> np.ndarray:
    """[threads, local] bool: which slots of ``frag`` (replica 0 .. n) hold an element."""
    coords = np.moveaxis(np.indices(frag.input_shape), 0, -1).reshape(-1, len(frag.input_shape))
    out = np.zeros((threads, frag.local_size), bool)
    index = frag.apply(coords)[:, 0]
    for rep in range(frag.replicate_size):
        out[frag.apply_thread(coords, rep=rep), index] = True
    return out


def _slots(threads: int, local: int) -> tuple[np.ndarray, np.ndarray]:
    t, i = np.meshgrid(np.arange(threads), np.arange(local), indexing="ij")
    return t, i


@given(st.lists(st.integers(1, 40), min_size=1, max_size=2), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from([32, 64, 128]), st.booleans())
def test_planned_guard_holds_exactly_on_owned_slots(loop, vec, threads, has_fragment):
    frag, guard = plan_partition(tuple(loop), vec, threads, has_fragment, (0, threads))
    guard = guard or plan_slot_guard(tuple(loop), vec, threads, has_fragment)
    owned = _owned(frag, threads)
    if guard is None:
        assert owned.all()
        return
    if guard.is_note:
        assert not owned.all() and "holds an element of" in str(guard)
        return
    t, i = _slots(threads, frag.local_size)
    holds = np.broadcast_to(guard.holds(_thread=t, _index=i), owned.shape)
    assert not (owned & ~holds).any(), "a slot holding an element is guarded off"
    if "_index" in str(guard):  # the unsimplified sum: exactly the slots with an element
        np.testing.assert_array_equal(holds, owned)
    else:  # ``_thread < n``: exactly the threads with work (a ragged last round is the loop's bounds check)
        np.testing.assert_array_equal(holds[:, 0], owned.any(axis=1))


def test_raw_guard_prints_as_tilelang_and_evaluates():
    frag, guard = plan_partition((100, 7), 2, 128, False, (0, 128))
    assert str(guard) == "_index // 2 * 256 + _thread * 2 + _index % 2 < 700"
    assert (guard.relation, guard.bound) == ("<", 700)
    t, i = _slots(128, frag.local_size)
    assert int(guard.holds(_thread=t, _index=i).sum()) == 700


def test_loop_guard_reaches_the_result_typed_and_as_text():
    p = infer.Program(threads=128)
    a = p.alloc_fragment("a", (100, 7), "float32")
    loop = p.parallel((100, 7), writes=[(a, lambda i, j: (i, j))])
    r = infer.infer_layouts(p)
    assert r.predicates[loop.name] == "_thread < 100"
    pred = r.guards[loop.name]
    assert isinstance(pred, Predicate) and pred.holds(_thread=np.array([99, 100])).tolist() == [True, False]


def test_notes_are_text_only():
    note = Guard.note("replica 0 of the loop layout only")
    assert note.is_note and str(Predicate.of(None, note)) == "replica 0 of the loop layout only"
    with pytest.raises(UnsupportedError, match="is a note"):
        note.holds(_thread=0)
    assert Predicate.of(None, None) is None


def test_slot_guard_of_a_full_layout_is_none():
    frag, _ = plan_partition((64, 64), 8, 128, True, (0, 128))
    assert slot_guard(frag, 128) is None
