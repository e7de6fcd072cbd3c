"""Inference never returns an unsound fragment: reductions whose rows share threads get one register per
element instead of TileLang's colliding index, and the solver checks every fragment before returning it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer
from layoutkit.infer import rules
from layoutkit.infer.soundness import UnsoundLayoutError, check_solved, fragment_violation


def _reduce_program(rows: int, cols: int, threads: int, dim: int = 1, store: bool = False) -> infer.Program:
    p = infer.Program(threads=threads)
    G = p.tensor("G", (1024, 1024), "float32")
    f0 = p.alloc_fragment("f0", (rows, cols), "float32")
    f1 = p.alloc_fragment("f1", (cols if dim == 0 else rows,), "float32")
    p.copy(G[0:rows, 0:cols], f0)
    p.reduce(f0, f1, dim=dim, kind="sum")
    if store:
        p.copy(f1, G[0, 0:f1.shape[0]])
    return p


def _holders(frag: lk.Fragment) -> list[set[int]]:
    """The threads holding each element (any replica)."""
    t = frag.thread_table().reshape(frag.replicate_size, -1)
    return [set(col.tolist()) for col in t.T]


def _assert_reduction_sound(res: infer.InferenceResult, dim: int, threads: int) -> None:
    src, dst = res.layout_map["f0"], res.layout_map["f1"]
    assert all(fragment_violation(f, f.input_shape, threads) is None for f in res.fragments().values())
    # every result lands in (at least) a thread that reduced part of its row (threads holding none of the
    # row may join the all-reduce with the identity, so they may hold it too)
    t = np.moveaxis(src.thread_table(), 2 - dim, 0)     # [kept, replica, reduced]
    for k, holders in enumerate(_holders(dst)):
        assert holders & set(t[k].ravel().tolist()), k


@pytest.mark.parametrize("rows,cols,thread", [(8, 12, "(_i * 12 + _rep) % 32"), (32, 100, "(_i * 25 + _rep) % 32")])
def test_issue_reproducer_reduce_output_is_injective(rows, cols, thread):
    """8x12 -> 8 on 32 threads used to give f1 the index ``_i * 3 // 8``: rows 0 and 2 in thread 0,
    register 0."""
    res = infer.infer_layouts(_reduce_program(rows, cols, 32))
    f1 = res.layout_map["f1"]
    assert f1.prove_injective(), f1
    assert str(f1.forward_thread) == thread                 # TileLang's threads, one register per row
    assert [str(e) for e in f1.forward_index] == ["_i"]
    _assert_reduction_sound(res, 1, 32)


@pytest.mark.parametrize("rows,cols", [(8, 12), (32, 100)])
def test_issue_reproducer_storing_the_reduction_is_no_conflict(rows, cols):
    """Copying f1 out used to be a conflict (TileLang could not invert the colliding layout)."""
    res = infer.infer_layouts(_reduce_program(rows, cols, 32, store=True))
    assert res.layout_map["f1"].prove_injective()
    _assert_reduction_sound(res, 1, 32)


def test_tilelang_like_attempts_refuse_the_colliding_layout():
    from layoutkit.infer.reduce import reducer_layout

    src = lk.Fragment([8, 12], forward_thread_fn=lambda i, j: (i * 12 + j) % 32,
                      forward_index_fn=lambda i, j: (i * 12 + j) // 32)
    tl = reducer_layout(src, 1, (8,))
    assert tl.prove_injective().witness == {"collision": (((0,), 0), ((2,), 8), (0, 0))}
    ours = reducer_layout(src, 1, (8,), injective=True)
    assert ours.forward_thread == tl.forward_thread and ours.replicate_size == tl.replicate_size
    assert [str(e) for e in ours.forward_index] == ["_i"] and ours.prove_injective()


@given(rows=st.integers(1, 48), cols=st.integers(1, 48), threads=st.sampled_from([32, 64, 128]),
       dim=st.integers(0, 1), store=st.booleans())
def test_random_reductions_are_sound_or_a_typed_conflict(rows, cols, threads, dim, store):
    try:
        res = infer.infer_layouts(_reduce_program(rows, cols, threads, dim, store))
    except lk.LayoutConflictError:
        return
    # (TileLang's containment proof accepts any destination when the reduced layout is fully replicated
    # over fewer threads than the block, so only the reproducers above check where the results land)
    assert all(fragment_violation(f, f.input_shape, threads) is None for f in res.fragments().values())


# ---- the solver's own check ------------------------------------------------------------------------

def test_the_solver_refuses_to_return_a_non_injective_fragment(monkeypatch):
    """A (deliberately broken) reduce rule proposing two rows on one register is caught before the
    result leaves the solver: an internal error, not an answer."""
    bad = lk.Fragment([8], forward_thread_fn=lambda i: i % 4, forward_index_fn=lambda i: 0)

    def broken(op, ctx, level):
        return rules.RuleResult({op.args["dst"]: bad.bind_thread_range(0, 32)})

    infer.register_rule("reduce", "sm_*", broken)
    infer.clear_caches()
    try:
        with pytest.raises(UnsoundLayoutError, match=r"f1 .*\(0,\) and \(4,\) are both in thread 0, register 0") as e:
            infer.infer_layouts(_reduce_program(8, 12, 32))
    finally:
        infer.unregister_rule("reduce", "sm_*")
    assert e.value.buffer == "f1" and isinstance(e.value, lk.LayoutError)


def test_check_solved_names_each_violation():
    p = _reduce_program(8, 12, 32)
    wide = lk.Fragment([8], forward_thread_fn=lambda i: i * 8, forward_index_fn=lambda i: 0)
    with pytest.raises(UnsoundLayoutError, match="reaches thread 56, outside the 32 threads"):
        check_solved(p, {"f1": wide}, 32)
    with pytest.raises(UnsoundLayoutError, match=r"lays out the shape \[4\], not the buffer's \[8\]"):
        check_solved(p, {"f1": lk.Fragment([4], forward_thread_fn=lambda i: i)}, 32)
    with pytest.raises(UnsoundLayoutError, match="plain Layout"):
        check_solved(p, {"f1": lk.Layout([8], lambda i: i)}, 32)
    twice = lk.Fragment([8], forward_thread_fn=lambda i, r: i % 4, replicate=2,
                        forward_index_fn=lambda i: i // 4)
    with pytest.raises(UnsoundLayoutError, match=r"puts two replicas \(0 and 1\) of element \(0,\)"):
        check_solved(p, {"f1": twice}, 32)
    check_solved(p, {"f1": lk.Fragment([8], forward_thread_fn=lambda i: i)}, 32)   # sound: no error


def test_the_check_is_vectorised():
    """A 128x128 fragment replicated over 64 threads (one million slots) checks in well under a second."""
    import time

    f = lk.Fragment([128, 128], forward_thread_fn=lambda i, j, r: r, replicate=64,
                    forward_index_fn=lambda i, j: i * 128 + j)
    start = time.perf_counter()
    assert fragment_violation(f, (128, 128), 64) is None
    assert time.perf_counter() - start < 2.0
    assert np.asarray(f.thread_table()).size == 64 * 128 * 128

