"""Fragments as Triton distributed linear layouts (register, lane, warp) -> tensor coordinate:
the slot view is the fragment's placement, and the two conversions invert each other."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.algebra.linear import F2Linear
from layoutkit.targets import nv


def _slots_agree(F: lk.Fragment, f2: F2Linear) -> None:
    """Every slot (register r, lane l, warp w) holds the element f2 names, in some replica."""
    lane_size = f2.in_dim_size("lane")
    threads = F.thread_table()
    for r, l, w in itertools.product(*(range(s) for _, s in f2.in_dims)):
        coord = f2.apply((r, l, w))
        assert F.index_table()[coord] == r
        assert l + lane_size * w in threads[(slice(None),) + coord].tolist()


@pytest.mark.parametrize(
    "make",
    [
        lambda: nv.make_mma_store_layout(1, 1, 16, 16),
        lambda: nv.make_mma_store_layout(2, 2, 32, 32),
        lambda: nv.make_mma_load_layout("A", "float16", 2, 2, 32, 32, 32),  # replicated over column warps
        lambda: nv.make_mma_load_layout("B", "float16", 2, 1, 32, 16, 16),
    ],
    ids=["C-1warp", "C-4warps", "A-replicated", "B-replicated"],
)
def test_mma_fragments_round_trip_through_the_slot_view(make):
    F = make()
    f2 = F.to_linear()
    assert f2 is not None and f2.in_names == ("register", "lane", "warp")
    assert f2.out_dims == tuple((f"dim{d}", e) for d, e in enumerate(F.input_shape))
    assert f2.in_dim_size("register") == F.local_size and f2.in_dim_size("lane") == 32
    _slots_agree(F, f2)
    # broadcast shows as free lane/warp variables, one bit per doubling of the replicas
    free = f2.free_variable_masks()
    assert free["register"] == 0
    assert 2 ** sum(bin(m).count("1") for m in free.values()) == F.replicate_size
    back = lk.Fragment.from_linear(f2)
    assert back.is_equal(F) and back.replicate_size == F.replicate_size and back.thread_extent == F.thread_extent


def test_triton_blocked_layout_matches_a_hand_built_fragment():
    # Triton blocked layout: sizePerThread [1, 4], threadsPerWarp [8, 4], warpsPerCTA [2, 1], order [1, 0]
    # on a 16 x 16 tensor: registers walk dim1, lanes dim1 then dim0, warps dim0
    blocked = F2Linear(
        (("register", 4), ("lane", 32), ("warp", 2)),
        (("dim0", 16), ("dim1", 16)),
        (((0, 1), (0, 2)), ((0, 4), (0, 8), (1, 0), (2, 0), (4, 0)), ((8, 0),)),
    )
    F = lk.Fragment.from_linear(blocked)
    hand = lk.Fragment([16, 16], forward_thread_fn=lambda i, j: i * 4 + j // 4, forward_index_fn=lambda i, j: j % 4)
    assert F.is_equal(hand) and F.to_linear() == blocked
    # num_consecutive measures along the first out dim, Triton's fastest-varying one: dim1 here
    assert blocked.transpose_outs(["dim1", "dim0"]).num_consecutive() == 4  # 4-wide vectors per thread
    assert blocked.num_consecutive() == 1


def test_broadcast_and_partial_warps():
    # 16 elements, 64 threads: every element in 4 threads (lanes 16..31 and the second warp repeat it)
    F = lk.Fragment([16], forward_thread_fn=lambda i, rep: i + 16 * rep, replicate=4, forward_index_fn=lambda i: 0)
    f2 = F.to_linear()
    assert f2 is not None and f2.free_variable_masks() == {"register": 0, "lane": 16, "warp": 1}
    assert lk.Fragment.from_linear(f2).is_equal(F)
    small = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i * 2 + j // 2, forward_index_fn=lambda i, j: j % 2)
    g = small.to_linear()
    assert g is not None and g.in_dims == (("register", 2), ("lane", 8), ("warp", 1))
    assert lk.Fragment.from_linear(g).is_equal(small)


def test_slot_views_that_do_not_exist():
    unused = lk.Fragment([2], forward_thread_fn=lambda i: i * 3, forward_index_fn=lambda i: 0)
    with pytest.raises(lk.NotLinearError, match="register 0 of thread 1 holds no element") as err:
        unused.to_linear()  # threads 0 and 3 of 4 hold the elements; 1 and 2 hold nothing
    assert err.value.witness == (0, 1)
    gaps = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i * 8 + j, forward_index_fn=lambda i, j: 0)
    with pytest.raises(lk.NotLinearError, match="threads = 28, not a power of two"):
        gaps.to_linear()
    odd = lk.Fragment([3, 4], forward_thread_fn=lambda i, j: i * 4 + j, forward_index_fn=lambda i, j: 0)
    with pytest.raises(lk.NotLinearError, match="threads = 12, input dim 0 = 3, not a power of two"):
        odd.to_linear()
    twice_held = lk.Fragment([4], forward_thread_fn=lambda i: 0, forward_index_fn=lambda i: i % 2)
    with pytest.raises(lk.NotLinearError, match="register 0 of thread 0 holds 2 elements"):
        twice_held.to_linear()
    rotated = lk.Fragment([4], forward_thread_fn=lambda i: (i + 1) % 4, forward_index_fn=lambda i: 0)
    with pytest.raises(lk.NotLinearError, match=r"not F2-linear: the origin \(0, 0, 0\) maps to \(3,\)"):
        rotated.to_linear()  # lane 0 holds element 3
    twice = F2Linear((("register", 2), ("lane", 4)), (("dim0", 4),), (((0,),), ((1,), (2,))))
    with pytest.raises(lk.UnsupportedError):
        lk.Fragment.from_linear(twice)  # one thread would hold each element in both registers
    partial = F2Linear((("register", 1), ("lane", 4)), (("dim0", 8),), ((), ((1,), (2,))))
    with pytest.raises(lk.NotBijectiveError):
        lk.Fragment.from_linear(partial)  # elements 4..7 are held by nobody
    with pytest.raises(lk.ShapeError):
        lk.Fragment.from_linear(F2Linear((("thread", 4),), (("dim0", 4),), (((1,), (2,)),)))


def test_plain_layout_view_is_still_available_on_fragments():
    F = nv.make_mma_store_layout(1, 1, 16, 16)
    index_view = lk.Layout.to_linear(F)
    assert index_view is not None and index_view.in_names == ("_i", "_j")
    table = np.asarray(F.index_table())
    assert int(table.max()) + 1 == F.local_size


@pytest.mark.parametrize("make", [
    nv.make_gemm_fragment_8x8,
    nv.make_gemm_fragment_8x8_transposed,
    lambda: nv.make_mma_store_layout(2, 2, 64, 64),
    lambda: nv.make_mma_load_layout("A", "int8", 2, 2, 32, 32, 64),
    lambda: nv.make_mma_load_layout("B", "bfloat16", 1, 4, 16, 32, 32, transposed=True),
], ids=["8x8", "8x8-transposed", "C-128x128", "A-int8", "B-bf16-transposed"])
def test_from_linear_of_to_linear_is_the_fragment(make):
    F = make()
    f2 = F.to_linear()
    assert [n for n, _ in f2.in_dims] == ["register", "lane", "warp"]
    assert [e for _, e in f2.out_dims] == list(F.input_shape)
    back = lk.Fragment.from_linear(f2)
    assert back.is_equal(F)
    assert back.to_linear() == f2


def test_matrix_of_a_layout_with_no_output_bits():
    view = lk.Layout([4], lambda i: 0).to_linear()
    assert view.out_dims == (("dim0", 1),) and view.matrix().shape == (0, 2)
    assert F2Linear((("a", 1),), (("o", 1),), ((),)).matrix().shape == (0, 0)
    assert lk.Layout.from_linear(view).is_equal(lk.Layout([4], lambda i: 0))
