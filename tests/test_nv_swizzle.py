"""NV shared-memory layouts: the dispatch rules, errors, tags, merging and closed-form inverses."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.algebra.nodes import Xor
from layoutkit.targets import nv

DTYPES = ["float16", "bfloat16", "float32", "int8", "float8_e4m3fn", "float64"]


def _has_xor(expr) -> bool:
    return isinstance(expr, Xor) or any(_has_xor(k) for k in expr.children())


def test_dtype_helper():
    assert [nv.element_bits(d) for d in ("float16", "bf16", "fp32", "int8", "float8_e5m2", "fp64", "int32")] == [
        16, 16, 32, 8, 8, 64, 32]
    assert nv.canonical_dtype(np.float16) == "float16"
    with pytest.raises(nv.DtypeError) as err:
        nv.element_bits("float12")
    assert isinstance(err.value, lk.LayoutError) and "float12" in str(err.value)
    with pytest.raises(nv.DtypeError):
        nv.make_swizzled_layout((8, 64), "complex")


@pytest.mark.parametrize("kind", ["quarter", "half", "full"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_bank_swizzle_formula(kind, dtype):
    """docs/reference.md#nvidia-shared-memory-swizzles, evaluated with plain integers."""
    bits = nv.element_bits(dtype)
    per, vec = {"quarter": 2, "half": 4, "full": 8}[kind], 128 // bits
    shape = (16, vec * per * 2)
    layout = getattr(nv, f"make_{kind}_bank_swizzled_layout")(shape, dtype)
    i, j = np.indices(shape)
    key = (i % 8) >> {2: 2, 4: 1, 8: 0}[per]
    chunk = j // vec
    want = np.stack([chunk // per, i // 8, j % vec + (((chunk % per) ^ key) + (i % 8) * per) * vec], axis=-1)
    assert np.array_equal(layout.table(), want)
    assert _has_xor(layout.forward_index[-1]) or kind == "quarter" and shape[0] < 4
    assert layout.swizzle.kind == kind and layout.swizzle.granularity == {"quarter": 32, "half": 64, "full": 128}[kind]


@pytest.mark.parametrize(
    ("shape", "dtype", "k_major", "allow_pad", "kind"),
    [
        ((64, 64), "float16", True, True, "full"),
        ((64, 32), "float16", True, True, "half"),
        ((64, 16), "float16", True, True, "quarter"),
        ((64, 24), "float16", True, True, "padded"),
        ((32, 128), "int8", False, True, "padded"),  # int8 K x N
        ((32, 128), "int8", True, True, "full"),
        ((16, 16), "float64", True, True, "fp64_k_inner"),
        ((16, 16), "float64", False, True, "fp64_k_outer"),
        ((16, 8), "float64", True, True, "padded"),
        ((4, 64), "float16", True, False, "linear"),  # Hopper: R % 8 != 0
        ((4, 64), "float16", True, True, "full"),  # the 4-row period is allowed with padding on
        ((16, 8), "float64", True, False, "quarter"),
        ((12, 8), "float64", True, False, "linear"),
        ((64, 8), "float16", True, False, "linear"),
    ],
)
def test_make_swizzled_layout_dispatch(shape, dtype, k_major, allow_pad, kind):
    assert nv.make_swizzled_layout(shape, dtype, k_major, allow_pad).swizzle.kind == kind


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: nv.make_full_bank_swizzled_layout((12, 64), "float16"), lk.ShapeError),  # R precondition
        (lambda: nv.make_swizzled_layout((12, 64), "float16"), lk.ShapeError),  # R = 12 raises, not padded
        (lambda: nv.make_half_bank_swizzled_layout((16, 16), "float16"), lk.ShapeError),  # C % 32
        (lambda: nv.make_wgmma_swizzled_layout((64, 4), "float16"), lk.ShapeError),  # C % vec on Hopper
        (lambda: nv.make_tcgen05mma_swizzled_layout((16, 16), "float64"), lk.UnsupportedError),
        (lambda: nv.make_quarter_bank_swizzled_layout((64,), "float16"), lk.ShapeError),  # rank 1
        (lambda: nv.make_swizzled_layout((8, 0), "float16"), lk.ShapeError),
    ],
)
def test_errors(call, error):
    with pytest.raises(error) as info:
        call()
    assert "found" in str(info.value)


def test_leading_dims_pass_through_like_expand():
    base = nv.make_half_bank_swizzled_layout((32, 64), "float16")
    staged = nv.make_half_bank_swizzled_layout((3, 32, 64), "float16")
    assert staged.is_equal(base.expand([3]))
    assert nv.make_swizzled_layout((2, 4, 64), "float16", allow_pad=False).is_equal(
        nv.make_swizzled_layout((4, 64), "float16", allow_pad=False).expand([2]))
    # make_linear_layout on its own is one row-major output over every dim
    assert nv.make_linear_layout((2, 4, 64)).forward_index == lk.Layout([2, 4, 64], lambda a, b, c: a * 256 + b * 64 + c
                                                                       ).forward_index


def test_tags_equality_hash_pickle():
    a = nv.make_full_bank_swizzled_layout((64, 64), "float16")
    plain = lk.Layout.from_exprs(a.input_shape, a.forward_index)
    assert a == plain and plain == a and hash(a) == hash(plain)
    assert isinstance(a, lk.Layout) and a.swizzle.dtype == "float16"
    b = pickle.loads(pickle.dumps(a))
    assert b == a and b.swizzle == a.swizzle
    assert nv.swizzle_info(plain) is None
    assert nv.swizzle_info(plain, dtype="float16").kind == "full"
    staged = a.expand([2])  # derived layouts are plain Layouts (no tag) but are still recognised
    assert nv.swizzle_info(staged) is None
    assert nv.swizzle_info(staged, dtype="float16") == nv.make_full_bank_swizzled_layout((2, 64, 64), "f16").swizzle


def test_merge_keeps_smaller_granularity():
    shape = (32, 64)
    q, h, f = (getattr(nv, f"make_{k}_bank_swizzled_layout")(shape, "float16") for k in ("quarter", "half", "full"))
    assert nv.merge_swizzles(f, h).swizzle.kind == "half"
    assert nv.merge_swizzles(h, f).swizzle.kind == "half"
    assert nv.merge_swizzles(q, f).swizzle.kind == "quarter"
    assert nv.merge_swizzles(f, f) == f
    untagged = lk.Layout.from_exprs(h.input_shape, h.forward_index)
    assert nv.merge_swizzles(f, untagged).swizzle.kind == "half"  # identified with f's dtype
    assert nv.merge_swizzles(untagged, untagged) is None  # no dtype to identify them with
    assert nv.merge_swizzles(untagged, untagged, dtype="float16") == h
    assert nv.merge_swizzles(f, nv.make_padded_layout(shape, "float16")) is None
    with pytest.raises(lk.ShapeError):
        nv.merge_swizzles(f, nv.make_full_bank_swizzled_layout((64, 64), "float16"))


@pytest.mark.parametrize("is_a", [True, False])
@pytest.mark.parametrize(("shape", "k_major", "kind"), [((32, 32), True, "volta_crosswise"),
                                                         ((64, 64), False, "volta_congruous"),
                                                         ((8, 64), True, "volta_congruous"),
                                                         ((8, 48), True, "padded")])
def test_volta_layouts(shape, k_major, kind, is_a):
    layout = nv.make_volta_swizzled_layout(shape, "float16", is_a, k_major)
    assert layout.swizzle.kind.startswith(kind)
    offsets = layout.linear_table().ravel()
    assert np.unique(offsets).size == offsets.size
    if kind != "padded":
        assert layout.is_bijective()
        inv = layout.inverse()
        coords = np.moveaxis(np.indices(shape), 0, -1).reshape(-1, 2)
        assert np.array_equal(inv.apply(layout.apply(coords)), coords)


@given(
    kind=st.sampled_from(["quarter", "half", "full", "auto", "hopper"]),
    dtype=st.sampled_from(DTYPES[:-1]),
    lead=st.lists(st.integers(1, 3), max_size=1),
    rows=st.sampled_from([4, 8, 16, 24, 32, 64]),
    col_mult=st.integers(1, 3),
)
def test_every_swizzle_is_a_bijection_with_a_round_tripping_inverse(kind, dtype, lead, rows, col_mult):
    vec = 128 // nv.element_bits(dtype)
    shape = (*lead, rows, vec * 8 * col_mult)
    if kind == "auto":
        layout = nv.make_swizzled_layout(shape, dtype)
    elif kind == "hopper":
        layout = nv.make_wgmma_swizzled_layout(shape, dtype)
    else:
        layout = getattr(nv, f"make_{kind}_bank_swizzled_layout")(shape, dtype)
    proof = layout.prove_bijective()
    assert proof, proof
    inv = layout.inverse()
    coords = np.moveaxis(np.indices(shape), 0, -1).reshape(-1, len(shape))
    assert np.array_equal(inv.apply(layout.apply(coords)), coords)
    if all(e & (e - 1) == 0 for e in shape):
        assert layout.to_linear() is not None  # F2-linear: xor, not (a + b) % 2


@pytest.mark.parametrize("dtype", ["float64"])
@pytest.mark.parametrize("k_major", [True, False])
def test_fp64_layouts_invert(dtype, k_major):
    layout = nv.make_swizzled_layout((16, 32), dtype, k_major)
    assert layout.is_bijective()
    coords = np.moveaxis(np.indices((16, 32)), 0, -1).reshape(-1, 2)
    assert np.array_equal(layout.inverse().apply(layout.apply(coords)), coords)
