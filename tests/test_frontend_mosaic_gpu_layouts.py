"""Mosaic GPU's register layouts convert exactly to layoutkit fragments and back
(``docs/mosaic_gpu.md#conversions``): every layout Mosaic names, on several shapes, element for element
against a re-enactment of Mosaic's own ``thread_idxs`` (its tiling strides and register shape), and
random F2 permutation fragments round-trip through a tiled layout or are refused by name."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutkit.algebra.linear import F2Linear
from layoutkit.errors import NotLinearError, NotTiledError, ShapeError, UnsupportedError
from layoutkit.fragment.fragment import fragment_from_linear
from layoutkit.fragment.tiled import (
    Replica,
    TiledRegisterLayout,
    reduce_tiled,
    tile_dims,
    tiled_fragment,
    tiled_from_fragment,
)

pytestmark = pytest.mark.oracle
fa = pytest.importorskip("jax.experimental.mosaic.gpu.fragmented_array")
tcgen05 = pytest.importorskip("jax.experimental.mosaic.gpu.tcgen05")
ml = pytest.importorskip("layoutkit.frontends.mosaic_gpu_layouts")


def named_layouts():
    out = {n: getattr(fa, n) for n in dir(fa) if isinstance(getattr(fa, n), fa.TiledLayout)}
    out.update({f"tcgen05.{n}": getattr(tcgen05, n) for n in dir(tcgen05)
                if isinstance(getattr(tcgen05, n), fa.TiledLayout) and not isinstance(getattr(tcgen05, n),
                                                                                     tcgen05.TMEMLayout)})
    out["tmem_native_layout(8)"] = fa.tmem_native_layout(8)
    out["fa_m64_collective_layout(64)"] = tcgen05.fa_m64_collective_layout(64)
    return out


NAMED = named_layouts()


def mosaic_placement(layout, shape):
    """``{element: {(thread, register)}}`` the way Mosaic's ``TiledLayout.thread_idxs`` computes it, with
    Mosaic's own tile strides and register shape (vector elements follow the vector dim's stride)."""
    contig = tuple(int(np.prod(shape[d + 1:])) for d in range(len(shape)))
    strides = layout.tiling.tile_strides(contig)
    tiled = layout.tiled_tiling_shape
    rank = len(tiled)

    def delinearize(idx, dims):
        sizes = [d.times if isinstance(d, fa.Replicated) else tiled[d] for d in dims]
        full = [0] * rank
        stride = int(np.prod(sizes))
        for d, s in zip(dims, sizes):
            stride //= s
            if not isinstance(d, fa.Replicated):
                full[d] = idx // stride % s
        return full

    regs = layout.registers_shape(tuple(shape))
    vlen, vstride = layout.vector_length, strides[layout.vector_dim]
    placement = {}
    for t in range(128):
        w, lane = delinearize(t // 32, layout.warp_dims), delinearize(t % 32, layout.lane_dims)
        offset = sum((a + b) * s for a, b, s in zip(w, lane, strides[-rank:]))
        for r, tile_idx in enumerate(np.ndindex(regs)):
            lin = offset + sum(i * s for i, s in zip(tile_idx, strides))
            for v in range(vlen):
                elem = np.unravel_index(lin + v * vstride, shape)
                placement.setdefault(tuple(int(x) for x in elem), set()).add((t, r * vlen + v))
    return placement


def fragment_placement(frag):
    threads = frag.thread_table()
    index = frag.index_table()
    out = {}
    for elem in np.ndindex(frag.input_shape):
        out[elem] = {(int(threads[(r, *elem)]), int(index[elem])) for r in range(frag.replicate_size)}
    return out


def shapes_for(layout):
    base = layout.base_tile_shape
    yield tuple(base)
    yield tuple(b * (2 if i == 0 else 1) for i, b in enumerate(base))
    yield (2, *base)


@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_named_layout_places_elements_as_mosaic_does(name):
    layout = NAMED[name]
    for shape in shapes_for(layout):
        frag = ml.to_fragment(layout, shape)
        assert fragment_placement(frag) == mosaic_placement(layout, shape), (name, shape)
        assert frag.local_size == int(np.prod(layout.registers_shape(shape))) * layout.vector_length


@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_named_layout_comes_back_from_its_fragment(name):
    layout = NAMED[name]
    for shape in shapes_for(layout):
        frag = ml.to_fragment(layout, shape)
        back = ml.from_fragment(frag)
        assert ml.to_fragment(back, shape).is_equal(frag)
        assert ml.from_fragment(frag, candidates=list(NAMED.values())) == next(
            v for v in NAMED.values() if _fits(v, frag))


def _fits(layout, frag):
    try:
        return ml.to_fragment(layout, frag.input_shape).is_equal(frag)
    except (ShapeError, ValueError):
        return False


def test_spec_round_trip_keeps_mosaic_fields():
    spec = ml.to_spec(fa.WGMMA_ROW_LAYOUT)
    assert spec.lane_dims == (-2, Replica(4)) and spec.replication == 4
    assert ml.from_spec(spec) == fa.WGMMA_ROW_LAYOUT
    assert ml.from_spec(ml.to_spec(fa.WGMMA_TRANSPOSED_LAYOUT)) == fa.WGMMA_TRANSPOSED_LAYOUT


def test_strided_and_splat_layouts():
    for shape, vec in [((128,), 1), ((4, 256), 8), ((2, 8, 64), 4)]:
        layout = fa.WGStridedFragLayout(shape, vec)
        frag = ml.to_fragment(layout, shape)
        assert frag.thread_extent == 128 and frag.local_size == int(np.prod(shape)) // 128
        # strided: thread t holds elements [t*vec + i*128*vec, +vec) of the flattened tile
        flat_thread = frag.thread_table()[0].reshape(-1)
        assert flat_thread.tolist() == [(k // vec) % 128 for k in range(int(np.prod(shape)))]
        assert ml.from_fragment(frag) == layout
    splat = fa.WGSplatFragLayout((64, 8))
    frag = ml.to_fragment(splat, (64, 8))
    assert frag.local_size == 1 and frag.replicate_size == 128
    assert ml.from_fragment(frag) == splat


def test_layout_on_a_shape_it_does_not_tile_is_refused():
    with pytest.raises(ShapeError, match="does not divide"):
        ml.to_fragment(fa.WGMMA_LAYOUT, (64, 12))
    with pytest.raises(UnsupportedError, match="splat layout of shape"):
        ml.to_fragment(fa.WGSplatFragLayout((8,)), (16,))


def test_tile_dims_follow_mosaic_tiling():
    for layout in NAMED.values():
        base = layout.base_tile_shape
        ours = [s for _, _, s in tile_dims(layout.tiling.tiles, base)][len(base):]
        assert tuple(ours) == layout.tiled_tiling_shape


@st.composite
def permutation_fragments(draw):
    """A random F2 permutation fragment: every register / lane / warp bit moves one element bit."""
    rows_bits, cols_bits = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    total = rows_bits + cols_bits
    extra = max(0, 7 - total)
    rows_bits += extra
    total = rows_bits + cols_bits
    element_bits = [(0, b) for b in range(rows_bits)] + [(1, b) for b in range(cols_bits)]
    order = draw(st.permutations(element_bits))
    regs = total - 7

    def image(bit):
        d, b = bit
        return (1 << b, 0) if d == 0 else (0, 1 << b)

    bases = (tuple(image(x) for x in order[:regs]), tuple(image(x) for x in order[regs:regs + 5]),
             tuple(image(x) for x in order[regs + 5:]))
    view = F2Linear((("register", 1 << regs), ("lane", 32), ("warp", 4)),
                    (("dim0", 1 << rows_bits), ("dim1", 1 << cols_bits)), bases)
    return fragment_from_linear(view)


@given(permutation_fragments())
def test_random_permutation_fragments_round_trip_or_are_refused(frag):
    try:
        spec = tiled_from_fragment(frag)
    except NotTiledError as err:
        assert "register order" in str(err) and err.witness is not None
        return
    assert tiled_fragment(spec, frag.input_shape).is_equal(frag)
    layout = ml.from_spec(spec)
    assert ml.to_fragment(layout, frag.input_shape).is_equal(frag)


def test_non_tiled_placements_are_refused_with_a_witness():
    # a lane bit that moves two element bits at once (an xor placement) has no tiling
    view = F2Linear((("register", 1), ("lane", 32), ("warp", 4)), (("dim0", 16), ("dim1", 8)),
                    ((), ((1, 1), (2, 0), (4, 0), (8, 0), (0, 2)), ((0, 1), (0, 4))))
    with pytest.raises(NotTiledError, match="lane bit 0 moves the element by") as err:
        tiled_from_fragment(fragment_from_linear(view))
    assert err.value.witness == ("lane", 0)
    odd = TiledRegisterLayout(((24,), (8,)), (Replica(4),), (Replica(4), -1), -2)
    with pytest.raises(NotLinearError):
        tiled_from_fragment(tiled_fragment(odd, (24,)))


@pytest.mark.parametrize("name", sorted(NAMED))
def test_reduce_tiled_is_mosaics_reduction(name):
    layout = NAMED[name]
    rank = len(layout.base_tile_shape)
    for k in range(1, rank):
        for axes in itertools.combinations(range(rank), k):
            assert ml.from_spec(reduce_tiled(ml.to_spec(layout), axes)) == layout.reduce(axes), (name, axes)
    # and the reduced fragment holds each kept element where the full one holds its row / column
    if rank == 2:
        shape = tuple(2 * b for b in layout.base_tile_shape)
        full = ml.to_fragment(layout, shape)
        small = ml.to_fragment(ml.from_spec(reduce_tiled(ml.to_spec(layout), (1,))), shape[:1])
        threads = full.thread_table()
        for i in range(shape[0]):
            assert set(int(t) for t in threads[:, i, :].ravel()) == set(int(t) for t in small.thread_table()[:, i])


@pytest.mark.parametrize("dtype,bits", [("float16", 16), ("float32", 32), ("int8", 8), ("bfloat16", 16)])
def test_shared_memory_transforms_round_trip(dtype, bits):
    from jax._src.lib import mosaic_gpu_dialect as mgpu_dialect
    from jax.experimental.mosaic.gpu import launch_context

    for sw in (128, 64, 32):
        elems = sw * 8 // bits
        for shape in ((32, 2 * elems), (2, 16, elems)):
            transforms = [launch_context.TileTransform((8, elems)), mgpu_dialect.SwizzlingMode(sw)]
            layout = ml.smem_layout(shape, transforms, dtype)
            back = ml.transforms_from_layout(layout, dtype)
            assert [str(t) for t in back] == [str(t) for t in transforms]
            assert ml.smem_layout(shape, back, dtype).is_equal(layout)
    untiled = ml.smem_layout((16, 64), [], dtype)
    assert ml.transforms_from_layout(untiled, dtype) == []


def test_tma_swizzle_is_the_bank_swizzle_on_one_swizzle_row():
    from layoutkit.targets.nv import make_bank_swizzled_layout
    from layoutkit.targets.nv.tma_swizzle import make_tma_swizzled_layout

    for sw, dtype, bits in ((128, "float16", 16), (64, "float16", 16), (32, "int8", 8), (128, "float32", 32)):
        cols = sw * 8 // bits
        ours = make_tma_swizzled_layout((32, cols), (8, cols), sw, dtype)
        bank = make_bank_swizzled_layout((32, cols), dtype, sw)
        coords = np.array([(i, j) for i in range(32) for j in range(cols)])
        flat = np.array([ours.map_forward_index(list(c))[0] for c in coords])
        theirs = np.array([(lambda o: o[-2] * 8 * cols + o[-1])(bank.map_forward_index(list(c))) for c in coords])
        assert np.array_equal(flat, theirs), (sw, dtype)
