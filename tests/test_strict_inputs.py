"""Edge inputs that used to answer (or be coerced) silently are refused with typed errors: TLA shapes
with float or zero extents, empty layouts, a missing dtype, float bounds, thread ranges and slices;
and ``Layout.from_linear`` keeps every output of a view whose inputs all have extent 1."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer, tla
from layoutkit.dtypes import canonical_dtype

# ---- TLA ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,stride,message", [
    ((2.5, 4), (1, 2), r"leaf \(0,\) is float 2.5"),
    ((2.0, 4), (1, 2), r"leaf \(0,\) is float 2.0"),
    ((0, 4), (1, 2), r"integer leaves >= 1; found \(0,4\)"),
    (((2, 0), 4), ((1, 2), 4), r"leaf \(0, 1\) is 0"),
    ((2, 4), (1, 2.0), r"crd2offset stride .* is float 2.0"),
])
def test_crd2offset_refuses_float_and_zero_extents(shape, stride, message):
    with pytest.raises(lk.ShapeError, match=message):
        tla.crd2offset(1, shape, stride)
    with pytest.raises(lk.ShapeError):
        tla.crd2offset((1, 2), shape, stride)


def test_crd2idx_and_idx2crd_refuse_them_too():
    with pytest.raises(lk.ShapeError, match="crd2idx shape"):
        tla.crd2idx(3, (4.0, 4))
    with pytest.raises(lk.ShapeError, match="idx2crd shape"):
        tla.idx2crd(3, (0, 4))
    with pytest.raises(lk.ShapeError, match="needs a stride"):
        tla.crd2offset(1, (2, 4), None)
    # valid inputs keep their answers
    assert tla.crd2offset((1, 5), ((4, 2), (4, 3)), ((4, 16), (1, 32))) == 37
    assert tla.idx2crd(17, (4, 2), (1, 4)) == (1, 0) and tla.crd2idx(13, (4, 8)) == 13


@given(st.tuples(st.integers(1, 6), st.integers(1, 6)), st.integers(0, 35))
def test_crd2offset_agrees_with_the_layout(shape, idx):
    idx %= shape[0] * shape[1]
    L = tla.make_layout(shape, (shape[1], 1))
    assert tla.crd2offset(idx, shape, (shape[1], 1)) == L(idx)


@pytest.mark.parametrize("args", [((),), ((), ()), (((), 4), (1, 2)), ([],)])
def test_make_layout_refuses_an_empty_shape(args):
    with pytest.raises(lk.ShapeError, match="at least one extent in every mode"):
        tla.make_layout(*args)


def test_make_layout_from_tag_needs_a_dtype():
    with pytest.raises(lk.DtypeError, match="dtype must be given"):
        tla.make_layout_from_tag("RowMajor", None, 4, 4)
    assert str(tla.make_layout_from_tag("RowMajor", "float16", 4, 4)) == "(4,4):(4,_1)"


# ---- dtypes, bounds, ranges, slices -----------------------------------------------------------------


def test_a_missing_dtype_is_refused_not_float64():
    with pytest.raises(lk.DtypeError, match="found None"):
        canonical_dtype(None)
    p = infer.Program(threads=32)
    with pytest.raises(lk.DtypeError):
        p.alloc_fragment("x", (4,), None)
    with pytest.raises(lk.DtypeError):
        p.tensor("T", (4,), None)
    assert canonical_dtype(np.float64) == "float64"          # an explicit numpy dtype still works


def test_tvm_custom_dtype_names_are_read_as_the_type_they_name():
    """TVM prints run-time registered types as ``custom[NAME]`` (TileLang's ``T.tfloat32``), with the bits
    or lanes after it; anything but a known name with its own bit width is refused."""
    assert canonical_dtype("custom[tfloat32]") == "tfloat32"
    assert canonical_dtype("custom[tfloat32]32") == "tfloat32"
    assert canonical_dtype("custom[tfloat32]32x4") == "tfloat32x4"
    for bad in ("custom[tfloat32]16", "custom[float17]", "custom[tfloat32", "custom[]"):
        with pytest.raises(lk.DtypeError, match="unknown dtype"):
            canonical_dtype(bad)


def test_float_region_bounds_are_refused():
    L = lk.Layout([8, 8], lambda i, j: i * 8 + j)
    with pytest.raises(lk.ShapeError, match=r"region dim 0 must be .*integer bounds; found \(0.5, 4.2\)"):
        L.map_region_bounds([(0.5, 4.2), (0, 8)])
    with pytest.raises(lk.ShapeError, match="region dim 1"):
        L.map_region_bounds([(0, 4), (0, 8.0)])
    assert L.map_region_bounds([(0, 4), (np.int64(0), 8)]) == ((0, 32),)


@pytest.mark.parametrize("rng", [(0.5, 32), (0, 32.0), (True, 32), ("0", 32)])
def test_float_thread_ranges_are_refused(rng):
    with pytest.raises(lk.ShapeError, match="thread_range"):
        lk.Fragment([4], forward_thread_fn=lambda i: i, thread_range=rng)
    with pytest.raises(lk.ShapeError, match="thread_range"):
        lk.Fragment([4], forward_thread_fn=lambda i: i).bind_thread_range(*rng)


def test_integer_thread_ranges_still_bind():
    f = lk.Fragment([4], forward_thread_fn=lambda i: i).bind_thread_range(np.int64(32), 64)
    assert f.thread_range == (32, 64) and type(f.thread_range[0]) is int


_bad = st.one_of(st.floats(allow_nan=False, allow_infinity=False, min_value=0, max_value=64), st.none(),
                 st.booleans(), st.text(max_size=2))


@given(bad=_bad, where=st.sampled_from(["start", "stop", "point"]))
def test_non_integer_subscripts_are_refused(bad, where):
    p = infer.Program(threads=32)
    G = p.tensor("G", (64, 64), "float32")
    key = {"start": (slice(bad, 8), slice(0, 8)), "stop": (slice(0, bad), slice(0, 8)),
           "point": (bad, slice(0, 8))}[where]
    if bad is None and where != "point":
        G[key]                                                    # an open slice is the full range
        return
    with pytest.raises(lk.ShapeError, match="buffer G: subscript 0 must be an integer"):
        G[key]


def test_integer_subscripts_still_index():
    p = infer.Program(threads=32)
    G = p.tensor("G", (64, 64), "float32")
    r = G[np.int64(2):10, 0:8]
    assert (r.starts, r.extents) == ((2, 0), (8, 8))
    assert G[3, 4].starts == (3, 4)
    with pytest.raises(lk.ShapeError, match="no step"):
        G[0:8:1.0, 0:8]


# ---- F2 round trip ----------------------------------------------------------------------------------


def test_issue_reproducer_from_linear_keeps_every_output():
    L = lk.Layout([1], lambda i: (i % 4, i % 4))
    back = lk.Layout.from_linear(L.to_linear())
    assert len(back.forward_index) == 2 and back.table().tolist() == L.table().tolist()


@given(shape=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3), n_out=st.integers(1, 3),
       data=st.data())
def test_from_linear_round_trips(shape, n_out, data):
    """Random F2-linear layouts (extent-1 dims included): from_linear(to_linear()) has the same table."""
    bits = [e.bit_length() - 1 for e in shape]
    bases = [[tuple(data.draw(st.integers(0, 7)) for _ in range(n_out)) for _ in range(b)] for b in bits]
    L = lk.Layout.from_linear(bases, shape) if any(bits) else lk.Layout(shape, lambda *xs: (0,) * n_out)
    back = lk.Layout.from_linear(L.to_linear())
    assert len(back.forward_index) == len(L.forward_index) == n_out
    assert back.table().tolist() == L.table().tolist()


def test_a_strided_region_slice_is_refused():
    L = lk.Layout([8, 8], lambda i, j: i * 8 + j)
    with pytest.raises(lk.ShapeError, match="contiguous range"):
        L.map_region_bounds([slice(0, 8, 2), (0, 8)])
    assert L.map_region_bounds([slice(0, 8), slice(2, 4, 1)]) == ((2, 60),)


@pytest.mark.parametrize("shape", [(), ((), 4), (2, ())])
def test_coordinate_maps_refuse_an_empty_mode(shape):
    with pytest.raises(lk.ShapeError, match="has an empty mode"):
        tla.crd2idx(1, shape)
    with pytest.raises(lk.ShapeError, match="has an empty mode"):
        tla.idx2crd(1, shape)
