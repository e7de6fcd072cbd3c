"""The warp-access prices against a plain count: the sectors of every warp-0 instruction, one Python set each."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from layoutkit.algebra.linear import F2Linear
from layoutkit.cost.warp_access import warp_sectors


def _coord(view: F2Linear, name: str, i: int) -> np.ndarray:
    per = dict(zip(view.in_names, view.bases))
    out = np.zeros(len(view.out_dims), dtype=np.int64)
    for b, v in enumerate(per.get(name, ())):
        if i >> b & 1:
            out ^= np.asarray(v, dtype=np.int64)
    return out


def _plain(view: F2Linear, strides, elem_bytes: int, vector: int) -> int:
    regs, lanes = view.in_dim_size("register"), view.in_dim_size("lane")
    vector = max(1, min(vector, regs))
    total = 0
    for g in range(regs // vector):
        touched = set()
        for lane in range(lanes):
            for r in (g * vector, g * vector + vector - 1):
                x = _coord(view, "lane", lane) ^ _coord(view, "register", r)
                touched.add(int(x @ np.asarray(strides)) * elem_bytes // 32)
        total += len(touched)
    return total * view.in_dim_size("warp")


@st.composite
def _views(draw):
    rank = draw(st.integers(1, 2))
    bits = [draw(st.integers(1, 5)) for _ in range(rank)]
    dims = [(f"dim{d}", 1 << b) for d, b in enumerate(bits)]

    def basis():
        d = draw(st.integers(0, rank - 1))
        v = [0] * rank
        v[d] = 1 << draw(st.integers(0, bits[d] - 1))
        return v

    n = {name: draw(st.integers(0, k)) for name, k in (("register", 3), ("lane", 5), ("warp", 2))}
    return F2Linear.from_bases({name: [basis() for _ in range(k)] for name, k in n.items()}, dims,
                               require_surjective=False)


@given(_views(), st.lists(st.sampled_from([0, 1, 2, -1, 3, 64, 1000]), min_size=2, max_size=2),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8]))
def test_warp_sectors_counts_each_instructions_distinct_sectors(view, strides, elem_bytes, vector):
    strides = strides[:len(view.out_dims)]
    assert warp_sectors(view, strides, elem_bytes, vector) == _plain(view, strides, elem_bytes, vector)
