"""Fragment API: construction, thread evaluation, algebra, containment, registers, partials."""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest

import layoutkit as lk


def atom8x8() -> lk.Fragment:
    return lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)


def mma_a_base_m16k16() -> lk.Fragment:
    """One warp's m16k16 fp16 A operand (docs/reference.md#mma-atoms, 16-bit atom)."""
    return lk.Fragment(
        [16, 16],
        forward_thread_fn=lambda s, k: 4 * (s % 8) + k % 8 // 2,
        forward_index_fn=lambda s, k: 4 * (k // 8) + 2 * (s // 8) + k % 2,
    )


def test_paper_construction_equals_the_mma_load_layout():
    """TileLang paper: base warp fragment -> repeat (index) -> repeat (threads) -> replicate gives
    the 4-warp (2x2) m128k16 A layout of make_mma_load_layout (brw=2, bcw=2, warp_row_tiles=64)."""
    built = mma_a_base_m16k16().repeat([4, 1], repeat_on_thread=False).repeat([2, 1], repeat_on_thread=True)
    built = built.replicate(2)
    brw, warp_rows, local_size = 2, 4, 8

    def thread(s, k, q):
        lane = 4 * (s % 8) + (k % 8) // 2
        return lane + 32 * (s // (16 * warp_rows)) + 32 * brw * q

    def index(s, k):
        local = 4 * ((k % 16) // 8) + 2 * ((s % 16) // 8) + k % 2
        return local + local_size * ((s // 16) % warp_rows + warp_rows * (k // 16))

    expected = lk.Fragment([128, 16], forward_thread_fn=thread, replicate=2, forward_index_fn=index)
    assert built.is_equal(expected)
    assert np.array_equal(built.thread_table(), expected.thread_table())
    assert built.thread_extent == 128 and built.local_size == 32 and built.replicate_size == 2
    assert str(built.forward_thread) == "_rep * 64 + _i // 64 * 32 + _i % 8 * 4 + _j % 8 // 2"
    from layoutkit.targets import nv

    target = nv.make_mma_load_layout("A", "float16", 2, 2, 64, 64, 16)
    assert built.is_equal(target) and np.array_equal(built.thread_table(), target.thread_table())


def test_construction_errors():
    with pytest.raises(lk.ExprError):
        lk.Fragment([8, 8])
    with pytest.raises(lk.ShapeError):
        lk.Fragment([8, 8], forward_thread_fn=lambda i: i)
    with pytest.raises(lk.ShapeError):
        lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i, replicate=0)
    with pytest.raises(lk.ExprError, match="must not depend on _rep"):
        lk.Fragment.from_exprs([4], [lk.Var("_rep", 2)], lk.Var("_i", 4), 2)
    with pytest.raises(lk.ShapeError):
        lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i, thread_range=(0, 0))


def test_thread_fn_with_and_without_rep():
    f = lk.Fragment([4], forward_thread_fn=lambda i, rep: i + 4 * rep, replicate=2)
    assert f.thread_table().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    g = lk.Fragment([4], forward_thread_fn=lambda i: i, replicate=2)
    assert g.thread_table().tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    h = lk.Fragment([4], forward_thread_fn=lambda i, rep: i)  # rep is 0 when replicate == 1
    assert str(h.forward_thread) == "_i"


def test_apply_thread_and_map_forward_thread():
    f = atom8x8().replicate(2)
    coords = np.array([[0, 0], [7, 7], [3, 5]])
    assert f.apply_thread(coords).tolist() == [0, 31, 14]
    assert f.apply_thread(coords, rep=1).tolist() == [32, 63, 46]
    assert f.apply_thread(coords, rep=None).shape == (2, 3)
    assert f.map_forward_thread([3, 5], rep=1) == 46
    assert str(f.map_forward_thread([lk.Var("x", 8), 0], rep=lk.Var("r", 2))) == "r * 32 + x * 4"
    with pytest.raises(lk.ShapeError):
        f.apply_thread(coords, rep=2)
    with pytest.raises(lk.CoordinateError):
        f.apply_thread(np.array([[8, 0]]))


def test_condense_reorders_replica_digits_even_when_it_drops_none():
    """TileLang's CondenseReplicateVar: the digit with the larger thread stride becomes the low
    digit of the new _rep, also when every digit is kept (same threads, another replica order)."""
    f = lk.Fragment([8], forward_thread_fn=lambda i, rep: rep // 8 * 64 + i * 8 + rep % 8, replicate=16)
    c = f.condense_rep_var()
    assert (str(c.forward_thread), c.replicate_size) == ("_rep % 2 * 64 + _i * 8 + _rep // 2", 16)
    assert [str(e) for e in c.forward_index] == [str(e) for e in f.forward_index] == ["0"]
    rep = np.arange(16)
    expected = (rep % 2 * 64 + rep // 2)[:, None] + np.arange(8)[None, :] * 8
    assert np.array_equal(c.thread_table(), expected)
    # one digit only: nothing to re-order, the fragment is kept as it is
    g = lk.Fragment([8], forward_thread_fn=lambda i, rep: rep * 8 + i, replicate=4)
    assert g.condense_rep_var() is g


def test_index_takes_the_unused_digits_of_fused_sums():
    """DivideUnusedIterators: (_j*12 + _i//4) is one iterator of extent 288; the thread reads its
    digit % 32, so its digit // 32 (extent 9) joins the index after the unused _i % 4."""
    f = lk.Fragment([48, 24], forward_thread_fn=lambda i, j: (j * 12 + i // 4) % 32)
    assert [str(e) for e in f.forward_index] == ["_i % 4 * 9 + (_j * 12 + _i // 4) // 32"]
    assert f.output_shape == (36,) and f.thread_extent == 32
    i, j = np.indices((48, 24))
    assert np.array_equal(f.index_table(), i % 4 * 9 + (j * 12 + i // 4) // 32)
    # every (thread, register) pair holds exactly one element
    pairs = f.thread_table()[0] * 36 + f.index_table()
    assert np.array_equal(np.sort(pairs.ravel()), np.arange(32 * 36))


def test_index_inference_sets_the_replica_to_zero():
    """TileLang infers the index with _rep in [0, 1): a fused sum with a replica term is read
    without it."""
    f = lk.Fragment([24, 16], forward_thread_fn=lambda i, j, rep: (rep * 48 + j * 6 + i // 4) % 32, replicate=2)
    assert str(f.forward_thread) == "(_rep * 48 + _j * 6 + _i // 4) % 32"
    assert [str(e) for e in f.forward_index] == ["_i % 4 * 3 + (_j * 6 + _i // 4) // 32"]
    assert f.output_shape == (12,)
    # every (thread, register) pair of replica 0 holds exactly one element
    pairs = f.thread_table()[0] * 12 + f.index_table()
    assert np.array_equal(np.sort(pairs.ravel()), np.arange(32 * 12))


def test_replicate_and_condense():
    f = lk.Fragment([8], forward_thread_fn=lambda i, rep: i + rep % 2 * 32, replicate=4)
    c = f.condense_rep_var()
    assert (str(c.forward_thread), c.replicate_size) == ("_rep * 32 + _i", 2)
    g = lk.Fragment([8], forward_thread_fn=lambda i, rep: i + rep // 2 * 64, replicate=4)
    c = g.condense_rep_var()
    assert (str(c.forward_thread), c.replicate_size) == ("_rep * 64 + _i", 2)
    h = lk.Fragment([8], forward_thread_fn=lambda i, rep: i + rep % 2 * 32 + rep // 4 * 64, replicate=8)
    c = h.condense_rep_var()
    # TileLang's replica order: the digit with the larger thread stride becomes the low digit
    assert (str(c.forward_thread), c.replicate_size) == ("_rep % 2 * 64 + _rep // 2 * 32 + _i", 4)
    r = atom8x8().replicate(3)
    assert str(r.forward_thread) == "_rep * 32 + _i * 4 + _j // 2" and r.thread_extent == 96


def test_inverse_round_trip():
    f = atom8x8().repeat([2, 2], True, True)
    inv = f.inverse()
    assert inv.input_shape == (2, 128) and inv.output_shape == (16, 16, 1)
    coords = np.moveaxis(np.indices((16, 16)), 0, -1).reshape(-1, 2)
    back = inv.apply(np.stack([f.apply(coords)[:, 0], f.apply_thread(coords)], axis=-1))
    assert np.array_equal(back[:, :2], coords) and not back[:, 2].any()


def test_contains():
    a = atom8x8()
    assert a.contains(a)
    rep = a.replicate(2)
    assert rep.contains(a) and not a.contains(rep)
    proof = a.contains(rep)
    coord, replica, thread, holders = proof.witness["missing"]
    assert replica == 1 and thread == a.map_forward_thread(coord) + 32 and holders == [thread - 32]
    full = lk.make_fully_replicated_fragment([8, 8], 32)
    assert full.is_fully_replicated() and full.contains(rep) and not a.is_fully_replicated()
    assert not a.contains(atom8x8().repeat([2, 1], True, True))  # different shapes


def test_prove_injective():
    assert atom8x8().prove_injective()
    bad = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j % 4)
    proof = bad.prove_injective()
    (xa, _), (xb, _), slot = proof.witness["collision"]
    assert xa != xb and bad.map_forward_thread(xa) == bad.map_forward_thread(xb) == slot[0]


def test_distribute_and_collect():
    f = atom8x8().replicate(2)
    tile = np.arange(64).reshape(8, 8)
    regs = f.distribute(tile)
    assert regs.shape == (64, 2)
    assert np.array_equal(f.collect(regs), tile) and np.array_equal(f.collect(regs, rep=1), tile)


def test_partial_fragment():
    base = lk.Fragment([8, 8], forward_thread_fn=lambda i, j, rep: i * 4 + j // 2 + rep * 32,
                       forward_index_fn=lambda i, j: j % 2, replicate=4)
    p = lk.PartialFragment(base, combine_size=2)
    assert (p.combine_size, p.copy_size) == (2, 2) and p.combine_steps() == [(2, 32)]
    tile = np.arange(64, dtype=float).reshape(8, 8)
    assert np.array_equal(p.combine(p.scatter_partials(tile)), tile)
    assert np.array_equal(p.combine(p.scatter_partials(tile, "max"), "max"), tile)
    assert not p.is_equal(base) and p.as_post_collective().is_equal(base)
    assert "combine 2 x copy 2" in str(p)
    with pytest.raises(lk.ShapeError):
        lk.PartialFragment(base, combine_size=3)


def test_text_and_str():
    f = atom8x8().bind_thread_range(128, 32)
    assert str(f) == ("Fragment((8, 8) -> (2,), replicate: 1, thread: 32, forward_thread: _i * 4 + _j // 2, "
                      "forward_index: (_j % 2,), thread_range: [128, 160))")
    lines = f.text().splitlines()
    assert [line.split(":")[0] for line in lines] == ["Shape", "Thread", "Index", "Replicate"]


def test_fragments_are_values():
    f = atom8x8()
    assert f == atom8x8() and hash(f) == hash(atom8x8()) and f != f.replicate(2)
    assert pickle.loads(pickle.dumps(f)) == f
    assert pickle.loads(pickle.dumps(lk.PartialFragment(f.replicate(2)))).combine_size == 2


@pytest.mark.parametrize("chunk", [None, 16])
def test_apply_thread_of_the_whole_domain_equals_the_thread_table(monkeypatch, chunk):
    if chunk is not None:  # many chunk boundaries, the last one ragged
        evaluate = importlib.import_module("layoutkit.algebra.evaluate")
        monkeypatch.setattr(evaluate, "CHUNK", chunk)
        monkeypatch.setattr(evaluate, "MIN_CHUNK", chunk)
    f = lk.Fragment([12, 20], forward_thread_fn=lambda i, j, r: i % 4 * 6 + j // 5 + r * 24,
                    forward_index_fn=lambda i, j: (i // 4, j % 5), replicate=3)
    coords = np.ascontiguousarray(np.indices(f.input_shape).reshape(2, -1).T)
    table = f.thread_table().reshape(3, -1)
    for r in range(3):
        assert np.array_equal(f.apply_thread(coords, rep=r), table[r])
    every = f.apply_thread(coords.reshape(12, 20, 2), rep=None)
    assert every.shape == (3, 12, 20) and np.array_equal(every, f.thread_table())
    assert np.array_equal(f.apply(coords), f.table().reshape(-1, 2))
    with pytest.raises(lk.CoordinateError, match=r"\(12, 0\)"):
        f.apply_thread(np.concatenate([coords, [[12, 0], [0, 20]]]))
    with pytest.raises(lk.CoordinateError, match="integers"):  # as apply(): no silent truncation
        f.apply_thread(np.array([[0.5, 1.0]]))
