"""Gluon layouts <-> layoutkit: Triton's maps (``gl.to_linear_layout``) reproduced on every layout class and on
random parameters, text round trips, and the Fragment / Layout conversions (docs/gluon.md)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutkit.errors import UnsupportedError
from layoutkit.frontends.gluon.encodings import (
    Blocked,
    DotOperand,
    Linear,
    NvidiaMma,
    NVMMAShared,
    PaddedShared,
    Slice,
    SwizzledShared,
    blocked_of,
    parse_encoding,
)

pow2 = st.integers(0, 3).map(lambda e: 1 << e)


@st.composite
def blocked(draw, rank=None):
    rank = draw(st.integers(1, 3)) if rank is None else rank
    tpw, wpc = [1] * rank, [1] * rank
    for d in draw(st.lists(st.integers(0, rank - 1), min_size=5, max_size=5)):
        tpw[d] *= 2
    for d in draw(st.lists(st.integers(0, rank - 1), max_size=3)):
        wpc[d] *= 2
    order = draw(st.permutations(range(rank)))
    spt = draw(st.lists(pow2, min_size=rank, max_size=rank))
    return Blocked(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


shapes = st.integers(0, 7).map(lambda e: 1 << e)


def test_blocked_map_worked_example():
    b = Blocked((1, 4), (8, 4), (4, 1), (1, 0))
    f = b.linear((64, 64))
    assert f.bases[1] == ((0, 4), (0, 8), (1, 0), (2, 0), (4, 0))
    assert f.bases[2] == ((8, 0), (16, 0))
    # a shape below the tile: registers past it are dropped, lanes past it broadcast
    g = b.linear((4, 8))
    assert g.bases[0] == ((0, 1), (0, 2)) and g.bases[1] == ((0, 4), (0, 0), (1, 0), (2, 0), (0, 0))


def test_mma_maps_worked_examples():
    v3 = NvidiaMma(3, 0, (4, 1), (16, 64, 16)).linear((64, 64))
    assert v3.bases[0] == ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32)) and v3.bases[2] == ((16, 0), (32, 0))
    a = DotOperand(0, NvidiaMma(2, 0, (2, 2), (16, 8)), 2).linear((32, 32))
    assert a.bases[1] == ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)) and a.bases[2] == ((0, 0), (16, 0))


@given(blocked(), st.data())
def test_text_round_trip_and_blocked_recovery(b, data):
    assert parse_encoding(str(b)) == b
    shape = tuple(data.draw(shapes) for _ in range(b.rank))
    found = blocked_of(b.linear(shape), shape)
    # None only where broadcasts hide the parameters (resolve then prints the exact linear encoding)
    f = b.linear(shape)
    broadcast = any(not any(v) for per in f.bases[1:] for v in per)
    assert (found is None and broadcast) or found.linear(shape) == f
    big = tuple(128 for _ in range(b.rank))
    assert blocked_of(b.linear(big), big).linear(big) == b.linear(big)


def test_text_forms():
    aliases = {"mma": str(NvidiaMma(2, 0, (2, 2), (16, 8)))}
    d = parse_encoding("#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>", aliases)
    assert d == DotOperand(0, NvidiaMma(2, 0, (2, 2), (16, 8)), 2)
    p = parse_encoding("#ttg.padded_shared<[64:+8] {order = [1, 0], shape = [64, 64]}>")
    assert isinstance(p, PaddedShared) and p.padded_offset(64) == 72 and parse_encoding(str(p)) == p
    lin = parse_encoding("#ttg.linear<{register = [[0, 1]], lane = [[1, 0]], warp = [], block = []}>")
    assert lin == Linear(((0, 1),), ((1, 0),), ()) and parse_encoding(str(lin)) == lin
    with pytest.raises(UnsupportedError, match="alias #nope"):
        parse_encoding("#nope")
    with pytest.raises(UnsupportedError, match="amd_mfma"):
        parse_encoding("#ttg.amd_mfma<{version = 3}>")


def test_padded_layout_is_linear_map_plus_padding():
    from layoutkit.frontends.gluon.objects import shared_layout
    p = PaddedShared.identity((64,), (8,), (1, 0), (64, 64))
    L = shared_layout(p, (64, 64))
    assert L.map_forward_index([1, 0]) == (72,) and L.map_forward_index([0, 5]) == (5,)


# ---- against Triton ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def triton_map():
    pytest.importorskip("triton.experimental.gluon")
    from triton._C.libtriton import gluon_ir, ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)

    def run(layout, shape, keep=(ctx, builder)):   # the builder needs its context alive
        return keep[1].to_linear_layout(layout._to_ir(keep[1]), list(shape))
    return run


def distributed_bases(f):
    return {n: [list(v) for v in bs] for (n, _), bs in zip(f.in_dims, f.bases)}


def triton_bases(r):
    return {"register": r.reg_bases, "lane": r.lane_bases, "warp": r.warp_bases}


@pytest.mark.oracle
@given(blocked(), st.data())
def test_blocked_and_slice_match_triton(triton_map, b, data):
    from layoutkit.frontends.gluon.objects import gluon_of
    shape = tuple(data.draw(shapes) for _ in range(b.rank))
    assert distributed_bases(b.linear(shape)) == triton_bases(triton_map(gluon_of(b), shape))
    if b.rank > 1:
        d = data.draw(st.integers(0, b.rank - 1))
        s = Slice(d, b)
        small = shape[:d] + shape[d + 1:]
        assert distributed_bases(s.linear(small)) == triton_bases(triton_map(gluon_of(s), small))


@pytest.mark.oracle
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4, 8]),
       st.integers(4, 8), st.integers(3, 8), st.integers(4, 8))
def test_mma_v2_and_operands_match_triton(triton_map, wm, wn, kw, m, n, k):
    from layoutkit.frontends.gluon.objects import gluon_of
    mma = NvidiaMma(2, 0, (wm, wn), (16, 8))
    assert distributed_bases(mma.linear((1 << m, 1 << n))) == triton_bases(triton_map(gluon_of(mma), (1 << m, 1 << n)))
    for idx, shape in ((0, (1 << m, 1 << k)), (1, (1 << k, 1 << n))):
        d = DotOperand(idx, mma, kw)
        assert distributed_bases(d.linear(shape)) == triton_bases(triton_map(gluon_of(d), shape))


@pytest.mark.oracle
@given(st.sampled_from([(4, 1), (4, 2), (8, 1), (8, 2)]), st.integers(3, 8), st.integers(6, 8), st.integers(3, 8))
def test_mma_v3_matches_triton(triton_map, wpc, n, m, cols):
    from layoutkit.frontends.gluon.objects import gluon_of
    mma = NvidiaMma(3, 0, wpc, (16, 1 << n, 16))
    shape = (1 << m, 1 << cols)
    assert distributed_bases(mma.linear(shape)) == triton_bases(triton_map(gluon_of(mma), shape))


@pytest.mark.oracle
@given(st.integers(2, 3).flatmap(lambda r: st.tuples(st.permutations(range(r)), st.lists(
    st.integers(1, 6).map(lambda e: 1 << e), min_size=r, max_size=r))), pow2, st.sampled_from([1, 2, 4]), pow2)
def test_swizzled_shared_matches_triton(triton_map, order_shape, vec, per_phase, max_phase):
    from layoutkit.frontends.gluon.objects import gluon_of
    order, shape = order_shape
    enc = SwizzledShared(vec, per_phase, max_phase, tuple(order))
    assert [list(v) for v in enc.linear(shape).bases[0]] == triton_map(gluon_of(enc), shape).offset_bases


@pytest.mark.oracle
@given(st.sampled_from([8, 16, 32]), st.sampled_from([0, 32, 64, 128]), st.booleans(), st.integers(2, 3),
       st.data())
def test_nvmma_shared_matches_triton(triton_map, bits, swizzle, transposed, rank, data):
    from triton.experimental.gluon import language as gl
    rank = 2 if transposed else rank
    shape = [1 << data.draw(st.integers(3, 6)) for _ in range(rank)]
    col = rank - 2 if transposed else rank - 1
    if swizzle:
        shape[col] = swizzle * 8 // bits      # one swizzle tile wide: the boxes TMA accepts
    enc = NVMMAShared(swizzle, bits, transposed)
    layout = gl.NVMMASharedLayout(swizzle, bits, rank, transposed)
    assert [list(v) for v in enc.linear(shape).bases[0]] == triton_map(layout, shape).offset_bases


@pytest.mark.oracle
@given(blocked(rank=2), st.data())
def test_from_gluon_to_gluon_round_trip(triton_map, b, data):
    from layoutkit.frontends.gluon import from_gluon, to_gluon
    from layoutkit.frontends.gluon.objects import gluon_of
    shape = tuple(data.draw(st.integers(5, 7).map(lambda e: 1 << e)) for _ in range(2))
    frag = from_gluon(gluon_of(b), shape)
    back = to_gluon(frag)
    assert distributed_bases(frag.to_linear()) == triton_bases(triton_map(back, shape))


@pytest.mark.oracle
def test_shared_round_trip(triton_map):
    from triton.experimental.gluon import language as gl

    from layoutkit.frontends.gluon import from_gluon, to_gluon
    L = from_gluon(gl.NVMMASharedLayout(128, 16), (64, 64))
    assert L.map_forward_index([1, 0]) == (72,)          # row 1 starts at 64, its 16-byte groups XOR 1
    back = to_gluon(L)
    assert back.offset_bases == triton_map(gl.NVMMASharedLayout(128, 16), (64, 64)).offset_bases
