"""Layout tags: provenance metadata on one Layout type, outside equality and hashing; the NV xor
swizzles are CuTe's Swizzle<B, M, S> over row-major tiles, table for table."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import tla
from layoutkit.targets import ascend, nv


def test_one_layout_type_and_transitive_equality():
    swz = nv.make_linear_layout((16, 16), "float16")
    plain = lk.Layout.from_exprs(swz.input_shape, swz.forward_index)
    asc = plain.with_tag(ascend.make_ascend_nz_layout((16, 16), "float16").fractal)
    assert type(swz) is type(plain) is type(asc) is lk.Layout
    assert nv.SwizzledLayout is lk.Layout and ascend.AscendLayout is lk.Layout
    assert swz == plain == asc and swz == asc  # transitive: the tag takes no part
    assert len({hash(swz), hash(plain), hash(asc)}) == 1 and len({swz, plain, asc}) == 1
    assert swz.swizzle.kind == "linear" and swz.fractal is None
    assert asc.fractal.kind is ascend.FractalKind.MAJOR_K and asc.swizzle is None
    assert plain.tag is None and plain.swizzle is None
    assert swz != nv.make_linear_layout((16, 8), "float16")  # different maps still differ


def test_tags_survive_pickling_and_only_expand_keeps_them():
    swz = nv.make_full_bank_swizzled_layout((16, 64), "float16")
    back = pickle.loads(pickle.dumps(swz))
    assert back == swz and back.swizzle == swz.swizzle
    assert swz.expand([2]).tag is None  # as before: a staged swizzle is identified by dtype
    assert nv.swizzle_info(swz.expand([2]), dtype="float16").buffer_shape == (2, 16, 64)
    nz = ascend.make_ascend_nz_layout((32, 32), "float16")
    staged = nz.expand([3])
    assert staged.fractal.buffer_shape == (3, 32, 32) and staged.fractal.kind is nz.fractal.kind
    assert ascend.make_ascend_compact_nz_layout((32, 32), "float16").expand([2]).tag is None
    assert swz.reshape([16 * 64]).tag is None and swz.inverse().tag is None


def test_with_tag_copies_without_touching_the_original():
    L = lk.Layout([4, 4], lambda i, j: (j, i))
    table = L.table()
    T = L.with_tag("x")
    assert L.tag is None and T.tag == "x" and T.table() is table
    F = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
    G = F.with_tag("frag")
    assert isinstance(G, lk.Fragment) and G == F and G.tag == "frag"
    assert F.bind_thread_range(0, 4).tag is None


# ---- NV xor swizzles against CuTe Swizzle<B, M, S> ------------------------------------------------

_B = {"quarter": 1, "half": 2, "full": 3}  # log2 of the 16-byte chunks per swizzle row (2 / 4 / 8)


@pytest.mark.parametrize("kind", ["quarter", "half", "full"])
@pytest.mark.parametrize("dtype", ["int8", "float16", "float32"])
@pytest.mark.parametrize("atoms", [(1, 1), (2, 1), (1, 2), (4, 3)])
def test_nv_bank_swizzle_is_cute_swizzle_over_row_major_atoms(kind, dtype, atoms):
    """``make_*_bank_swizzled_layout`` is ``Swizzle<B, M, 3> o (8 x W row-major atoms)``: ``M = log2``
    of the elements per 16-byte chunk, ``B = log2`` of the chunks per row, atoms tiled rows first
    then columns (the column tile outermost), as TileLang stores them."""
    bits = lk.dtypes.element_bits(dtype)
    vec = 128 // bits
    width = vec << _B[kind]  # a swizzle row: 32 / 64 / 128 bytes
    rows, cols = 8 * atoms[0], width * atoms[1]
    layout = nv.make_bank_swizzled_layout((rows, cols), dtype, kind)
    atom_tiling = tla.make_layout(((8, rows // 8), (width, cols // width)),
                                  ((width, 8 * width), (1, rows * width)))
    cute = tla.composition(tla.Swizzle(_B[kind], int(math.log2(vec)), 3), atom_tiling)
    assert np.array_equal(cute.to_layout().table()[..., 0], layout.linear_table())


@pytest.mark.parametrize(("kind", "byte_swizzle"), [("quarter", (1, 4, 3)), ("half", (2, 4, 3)), ("full", (3, 4, 3))])
def test_nv_byte_swizzles_are_cutes_sw32_sw64_sw128(kind, byte_swizzle):
    """On bytes (int8) the three swizzles are CuTe's canonical SW32 / SW64 / SW128 atoms over a
    one-atom-wide row-major tile: ``Swizzle<1|2|3, 4, 3> o (R, W):(W, 1)``."""
    width = 16 << byte_swizzle[0]
    layout = nv.make_bank_swizzled_layout((64, width), "int8", kind)
    cute = tla.composition(tla.Swizzle(*byte_swizzle), tla.make_layout((64, width), (width, 1)))
    assert np.array_equal(cute.to_layout().table()[..., 0], layout.linear_table())
    # and a row-major tile that is not swizzled differs (the test can fail)
    plain = tla.make_layout((64, width), (width, 1)).to_layout()
    assert not np.array_equal(plain.table()[..., 0], layout.linear_table())
