"""Replays every public fragment_ops record of TileLang 0.1.15 (thread tables of every replica,
index tables), and asserts our answer where TileLang has a documented quirk."""

from __future__ import annotations

import re

import numpy as np
import pytest

import layoutkit as lk

from .records import assert_fragment_matches, assert_layout_matches, load

CASES = load("fragment_ops")


def gemm_fragment_8x8() -> lk.Fragment:
    return lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)


NAMED = {
    "fragment_ops/base8x8": gemm_fragment_8x8,
    # held-back base of the condense case: a replica digit the thread map skips
    "fragment_ops/rep_gap": lambda: lk.Fragment([4, 4], forward_thread_fn=lambda i, j, rep: i * 4 + j + rep // 2 * 64,
                                                replicate=4),
}


def build(case_id: str):
    m = re.fullmatch(r"(.*)\.replicate\((\d+)\)", case_id)
    if m:
        return build(m.group(1)).replicate(int(m.group(2)))
    if case_id in NAMED:
        return NAMED[case_id]()
    return construct(CASES[case_id])


def construct(case: dict):
    args = case["args"]
    ctor = case["constructor"]
    if ctor == "make_gemm_fragment_8x8":
        return gemm_fragment_8x8()
    if ctor == "Fragment":
        return lk.Fragment(
            args["shape"],
            forward_thread_fn=lk.parse_index_fn(args["forward_thread_fn"]),
            replicate=args.get("replicate", 1),
            forward_index_fn=lk.parse_index_fn(args["forward_index_fn"]) if args.get("forward_index_fn") else None,
        )
    if ctor == "make_fully_replicated_layout_fragment":
        return lk.make_fully_replicated_fragment(args["buffer_shape"], args["threads"])
    base = build(args["of"])
    if ctor == "Fragment.repeat":
        return base.repeat(args["repeats"], args["repeat_on_thread"], args["lower_dim_first"])
    if ctor == "Fragment.condense_rep_var":
        return base.condense_rep_var()
    if ctor == "Fragment.inverse":
        return base.inverse()
    if ctor == "Fragment.reshape":
        return base.reshape(args["shape"])
    raise NotImplementedError(ctor)


@pytest.mark.parametrize("case", [c for c in CASES.values() if c.get("kind") == "fragment"], ids=lambda c: c["id"])
def test_fragment_tables(case):
    assert_fragment_matches(construct(case), case)


@pytest.mark.parametrize("case", [c for c in CASES.values() if c.get("kind") == "layout"], ids=lambda c: c["id"])
def test_fragment_inverse_tables(case):
    assert_layout_matches(construct(case), case)


def test_printed_forms():
    for case in CASES.values():
        if case.get("kind") != "fragment":
            continue
        frag = construct(case)
        assert str(frag.forward_thread) == case["forward_thread_expr"], case["id"]
        assert [str(e) for e in frag.forward_index] == case["forward_index_expr"], case["id"]


def test_all_sixteen_repeat_combinations_on_the_atom():
    """Every (repeats, on_thread, lower_dim_first) combination obeys docs/reference.md#fragment-repeat-and-replicate."""
    atom = gemm_fragment_8x8()
    for reps in ([1, 1], [2, 1], [1, 2], [2, 3]):
        for on_thread in (False, True):
            for lower_first in (False, True):
                f = atom.repeat(reps, on_thread, lower_first)
                coords = np.moveaxis(np.indices(f.input_shape), 0, -1).reshape(-1, 2)
                q = coords // 8
                ri = q[:, 0] * reps[1] + q[:, 1] if lower_first else q[:, 1] * reps[0] + q[:, 0]
                t0 = atom.apply_thread(coords % 8)
                i0 = atom.apply(coords % 8)[:, 0]
                if on_thread:
                    assert np.array_equal(f.apply_thread(coords), t0 + 32 * ri)
                    assert np.array_equal(f.apply(coords)[:, 0], i0)
                else:
                    assert np.array_equal(f.apply_thread(coords), t0)
                    assert np.array_equal(f.apply(coords)[:, 0], i0 + 2 * ri)


def test_quirk_expand_keeps_the_thread_map():
    """TileLang's Fragment.expand returns a plain Layout without the thread map; ours keeps it."""
    e = gemm_fragment_8x8().expand([2])
    assert isinstance(e, lk.Fragment)
    assert e.input_shape == (2, 8, 8) and str(e.forward_thread) == "_j * 4 + _k // 2"
    assert [str(x) for x in e.forward_index] == ["_i", "_k % 2"]


def test_quirk_is_equal_needs_equal_shapes():
    """TileLang says a 8x8 fragment equals its 16x8 repeat (it ignores input shapes); we do not."""
    a = gemm_fragment_8x8()
    assert not a.is_equal(a.repeat([2, 1], True, True))
    assert a.is_equal(lk.Fragment([8, 8], forward_thread_fn=lambda i, j: j // 2 + 4 * i))
