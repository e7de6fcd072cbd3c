"""CuTe thread-value layouts as Fragments (``tla.tv_fragment``), and the CuTe DSL bridge's refusal when
CuTe DSL is absent (its differential tests against CuTe DSL are in test_cute_dsl.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import tla
from layoutkit.errors import NotBijectiveError, ShapeError, UnsupportedError
from layoutkit.targets import nv


def _placement_matches(tv: tla.Layout, tile: tuple[int, ...]) -> None:
    """Value ``v`` of thread ``t`` sits where ``tv(t, v)`` points, for every ``(t, v)``."""
    frag = tla.tv_fragment(tv, tile)
    threads, values = tla.size(tv[0]), tla.size(tv[1])
    image = tv.table().reshape(values, threads).T  # [t, v], colexicographic
    coords = np.unravel_index(image, tile, order="F")
    assert np.array_equal(frag.index_table()[coords], np.broadcast_to(np.arange(values), (threads, values)))
    held = frag.thread_table()[(slice(None),) + coords]
    assert np.all(np.any(held == np.arange(threads)[None, :, None], axis=0))


def test_mma_m16n8k16_accumulator_is_the_ptx_placement():
    # CuTe's C layout of SM80_16x8x16: lane 4*g + q holds rows g, g+8 and columns 2q, 2q+1
    tv = tla.make_layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
    frag = tla.tv_fragment(tv, (16, 8))
    i, j = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
    assert np.array_equal(frag.thread_table()[0], i % 8 * 4 + j // 2)
    assert np.array_equal(frag.index_table(), i // 8 * 2 + j % 2)
    _placement_matches(tv, (16, 8))


def test_stride_zero_thread_modes_become_replicas():
    # the A operand of a 2x2 tiled mma.sync m16n8k16: the warps along N (threads 64..127) repeat 0..63
    tv = tla.make_layout(((4, 8, 2, 2), ((2, 2, 2), (1, 1))), ((64, 1, 16, 0), ((32, 8, 256), (0, 0))))
    frag = tla.tv_fragment(tv, (32, 16))
    assert frag.replicate_size == 2 and frag.thread_extent == 128
    assert frag.map_forward_thread([0, 0], 0) == 0 and frag.map_forward_thread([0, 0], 1) == 64
    _placement_matches(tv, (32, 16))


@given(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=2, max_size=5), st.randoms(use_true_random=False),
       st.sampled_from([1, 2, 3]))
def test_random_bijective_tv_layouts(extents, rng, rep):
    order = list(range(len(extents)))
    rng.shuffle(order)
    strides, below = [0] * len(extents), 1
    for k in order:  # compact strides in a random order: a bijection onto [0, prod)
        strides[k] = below
        below *= extents[k]
    cut = rng.randint(1, len(extents) - 1)
    thr_shape, thr_stride = tuple(extents[:cut]) + (rep,), tuple(strides[:cut]) + (0,)
    tv = tla.make_layout((thr_shape, tuple(extents[cut:])), (thr_stride, tuple(strides[cut:])))
    tile = (extents[0] * extents[1], int(np.prod(extents[2:], dtype=np.int64)))
    _placement_matches(tv, tile)
    frag = tla.tv_fragment(tv, tile)
    assert frag.replicate_size == rep
    back = tla.fragment_tv(frag)  # the same function, its modes maybe grouped otherwise
    assert tla.size(back[0]) == tla.size(tv[0]) and np.array_equal(back.table(), tv.table())


@pytest.mark.parametrize("make", [
    lambda: nv.make_mma_store_layout(2, 2, 32, 32),
    lambda: nv.make_mma_load_layout("A", "float16", 2, 2, 32, 32, 32),
    lambda: nv.make_mma_load_layout("B", "float16", 2, 2, 32, 32, 32, transposed=True),
    lambda: nv.make_gemm_fragment_8x8(),
])
def test_layoutkit_fragments_go_to_tv_layouts_and_back(make):
    frag = make()
    tv = tla.fragment_tv(frag)
    assert tla.size(tv[0]) == frag.thread_extent
    assert tla.tv_fragment(tv, frag.input_shape).is_equal(frag)


def test_fragment_tv_refusals():
    swizzled = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + (j // 2 ^ i % 4),
                           forward_index_fn=lambda i, j: j % 2)
    with pytest.raises(UnsupportedError, match="not strided"):
        tla.fragment_tv(swizzled)
    sparse = lk.Fragment([4], forward_thread_fn=lambda i: i * 2, forward_index_fn=lambda i: 0)
    with pytest.raises(UnsupportedError, match="thread 1 register 0 empty"):
        tla.fragment_tv(sparse)
    with pytest.raises(UnsupportedError, match="expected an lk.Fragment"):
        tla.fragment_tv(tla.make_layout(4, 1))


def test_refusals_name_a_witness():
    with pytest.raises(NotBijectiveError, match="index 1 in thread 1 value 0 and thread 0 value 1") as err:
        tla.tv_fragment(tla.make_layout((4, 2), (1, 1)), (8,))
    assert err.value.witness == {"collision": ((1, 0), (0, 1), 1)}
    with pytest.raises(NotBijectiveError, match="none holds index 1") as err:
        tla.tv_fragment(tla.make_layout((2, 2), (2, 4)), (8,))
    assert err.value.witness == {"unreachable": 1}
    with pytest.raises(ShapeError, match="value 1 of thread 0 at index 8, outside the 8 indices"):
        tla.tv_fragment(tla.make_layout((4, 2), (1, 8)), (2, 4))
    with pytest.raises(ShapeError, match="16 .thread, value. slots"):
        tla.tv_fragment(tla.make_layout((4, 4), (1, 4)), (2, 4))
    with pytest.raises(UnsupportedError, match="value mode of stride 0"):
        tla.tv_fragment(tla.make_layout((4, (2, 2)), (1, (4, 0))), (8,))
    with pytest.raises(ShapeError, match="rank-2"):
        tla.tv_fragment(tla.make_layout((4, 2, 2), (1, 4, 8)), (16,))
    with pytest.raises(ShapeError, match="positive extents"):
        tla.tv_fragment(tla.make_layout((4, 2), (1, 4)), (8, 0))


def test_bridge_names_the_extra_when_cute_dsl_is_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "cutlass", None)  # import cutlass now raises ImportError
    monkeypatch.setitem(sys.modules, "cutlass.cute", None)
    with pytest.raises(UnsupportedError, match=r"from_cute_dsl: .*the 'cute' extra"):
        tla.from_cute_dsl(object())
    with pytest.raises(UnsupportedError, match=r"to_cute_dsl: .*nvidia-cutlass-dsl"):
        tla.to_cute_dsl(tla.make_layout((4, 8), (8, 1)))


def test_importing_layoutkit_does_not_import_cute_dsl():
    probe = "import json, sys, layoutkit, layoutkit.tla, layoutkit.plot\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "layoutkit.tla.cute_dsl" in loaded and not [m for m in loaded if m.split(".")[0] == "cutlass"]


def test_the_cute_extra_pins_the_checked_release():
    from layoutkit.tla.cute_dsl import CUTE_DSL_VERSION

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert f'cute = ["nvidia-cutlass-dsl=={CUTE_DSL_VERSION}"]' in pyproject
