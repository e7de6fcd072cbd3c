"""The Layout API: construction errors, evaluation, derived layouts, proofs, inverse, F2 view."""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.algebra import Var


def swizzle128_fp16(rows: int, cols: int) -> lk.Layout:
    return lk.Layout([rows, cols], lambda i, j: (j // 64, i // 8, j % 8 + ((j % 64 // 8 ^ i % 8) + i % 8 * 8) * 8))


# ---- construction errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, fn, error, words",
    [
        ([4, 0], lambda i, j: i, lk.ShapeError, "dim 1 is 0"),
        ([4, -2], lambda i, j: i, lk.ShapeError, "dim 1 is -2"),
        ([], lambda: 0, lk.ShapeError, "at least one dimension"),
        ([4, 2.0], lambda i, j: i, lk.ShapeError, "dim 1 is 2.0"),
        ("44", lambda i, j: i, lk.ShapeError, "positive integers"),
        ([4, 4], lambda i: i, lk.ShapeError, "must take 2 arguments"),
        ([4, 4], lambda i, j, k: i, lk.ShapeError, "must take 2 arguments"),
        ([4, 4], lambda i, j: i * 0.5, lk.ExprError, "float"),
        ([4, 4], lambda i, j: (i, 1.5), lk.ExprError, "output 1"),
        ([4, 4], lambda i, j: i / 2, lk.ExprError, "true division"),
        ([4, 4], lambda i, j: None, lk.ExprError, "output 0"),
        ([4, 4], lambda i, j: (), lk.ShapeError, "no output"),
        ([4, 4], lambda i, j: i + Var("z", 3), lk.ExprError, "not one of the input placeholders"),
        ([4, 4], lambda i, j: i if j else 0, lk.ExprError, "truth value"),
    ],
)
def test_bad_input_gives_typed_errors(shape, fn, error, words):
    with pytest.raises(error) as info:
        lk.Layout(shape, fn)
    assert words in str(info.value)


def test_every_error_is_a_layout_error():
    for cls in (lk.ShapeError, lk.ExprError, lk.NotBijectiveError, lk.CoordinateError, lk.UnsupportedError):
        assert issubclass(cls, lk.LayoutError)


def test_negative_outputs_are_rejected_with_a_witness():
    L = lk.Layout([4, 4], lambda i, j: i - j)
    with pytest.raises(lk.LayoutError) as info:
        _ = L.output_shape
    assert "(0, 3)" in str(info.value)


def test_coordinates_out_of_range():
    L = lk.Layout([4, 8], lambda i, j: i * 8 + j)
    with pytest.raises(lk.CoordinateError, match=r"\(4, 0\)"):
        L.map_forward_index([4, 0])
    with pytest.raises(lk.CoordinateError, match=r"\(1, -1\)"):
        L.apply(np.array([[0, 0], [1, -1]]))
    with pytest.raises(lk.ShapeError):
        L.map_forward_index([1])
    with pytest.raises(lk.ShapeError):
        L.apply(np.zeros((3, 3), dtype=int))
    with pytest.raises(lk.CoordinateError):
        L.apply(np.array([[0.5, 1.0]]))


# ---- evaluation -------------------------------------------------------------------------------


def test_map_forward_index_ints_and_exprs():
    L = lk.Layout([8, 8], lambda i, j: (i // 2, j * 2 + i % 2))
    assert L.map_forward_index([5, 3]) == (2, 7)
    assert L(5, 3) == (2, 7)
    x = Var("x", 4)
    out = L.map_forward_index([x * 2 + 1, 0])
    assert [str(e) for e in out] == ["x", "1"]


def test_apply_and_table_agree():
    L = swizzle128_fp16(32, 64)
    table = L.table()
    assert table.shape == (32, 64, 3)
    coords = np.array([[0, 0], [3, 17], [31, 63]])
    assert np.array_equal(L.apply(coords), table[coords[:, 0], coords[:, 1]])
    assert L.apply(np.array([3, 17])).tolist() == list(L.map_forward_index([3, 17]))


def test_output_shape_is_a_bounding_box():
    assert lk.Layout([64, 128], lambda i, j: i * 144 + j).output_shape == (9200,)
    assert lk.Layout([4, 4], lambda i, j: (j, i + 2)).output_shape == (4, 6)


def test_linearized():
    L = lk.Layout([4, 4], lambda i, j: (j, i))
    lin = L.linearized()
    assert str(lin) == "Layout((4, 4) -> (16,), transform: (_i, _j) -> (_j * 4 + _i,))"
    assert np.array_equal(lin.table()[..., 0], L.linear_table())


def test_map_region_bounds():
    L = lk.Layout([16, 16], lambda i, j: (j, i * 16))
    assert L.map_region_bounds([(2, 4), (8, 16)]) == ((8, 16), (32, 49))
    assert L.map_region_bounds([slice(0, 16), slice(0, 1)]) == ((0, 1), (0, 241))
    with pytest.raises(lk.CoordinateError):
        L.map_region_bounds([(0, 17), (0, 1)])
    with pytest.raises(lk.ShapeError):
        L.map_region_bounds([(0, 1)])


# ---- derived layouts ----------------------------------------------------------------------------


def test_repeat_expand_reshape():
    T = lk.Layout([4, 4], lambda i, j: (j, i))
    assert str(T.repeat(0, 2)) == "Layout((8, 4) -> (2, 4, 4), transform: (_i, _j) -> (_i // 4, _j, _i % 4))"
    assert str(T.repeat(-1, 2)) == str(T.repeat(1, 2))
    assert str(T.expand([2, 3])) == ("Layout((2, 3, 4, 4) -> (2, 3, 4, 4), transform: (_i, _j, _k, _l) -> "
                                     "(_i, _j, _l, _k))")
    assert str(T.reshape([16])) == "Layout((16,) -> (4, 4), transform: (_i,) -> (_i % 4, _i // 4))"
    with pytest.raises(lk.ShapeError):
        T.repeat(2, 2)
    with pytest.raises(lk.ShapeError):
        T.repeat(0, 0)
    with pytest.raises(lk.ShapeError):
        T.reshape([15])


def test_reshape_rescale_narrow_and_widen():
    L = lk.Layout([4, 8], lambda i, j: i * 8 + j)
    narrow = L.reshape([4, 16], 2, 1)  # 32-bit elements viewed as 16-bit halves
    assert str(narrow) == "Layout((4, 16) -> (64,), transform: (_i, _j) -> (_i * 16 + _j,))"
    wide = narrow.reshape([4, 8], 1, 2)
    assert wide.is_equal(L)
    swz = swizzle128_fp16(8, 64)
    wide_swz = swz.reshape([8, 32], 1, 2)  # two fp16 -> one fp32, contiguous pairs
    assert np.array_equal(wide_swz.table()[..., -1] * 2, swz.table()[:, ::2, -1])
    T = lk.Layout([4, 4], lambda i, j: (j, i))
    with pytest.raises(lk.ShapeError, match="not contiguous"):
        T.reshape([4, 2], 1, 2)
    with pytest.raises(lk.ShapeError):
        L.reshape([64], 1, 2)


def test_compose():
    T = lk.Layout([4, 4], lambda i, j: (j, i))
    row = lk.Layout([4, 4], lambda i, j: i * 4 + j)
    col = row.compose(T)
    assert str(col) == "Layout((4, 4) -> (16,), transform: (_i, _j) -> (_j * 4 + _i,))"
    big = lk.Layout([2, 8], lambda i, j: (j, i))
    with pytest.raises(lk.CoordinateError, match="outside the input shape"):
        row.compose(big)
    with pytest.raises(lk.ShapeError):
        row.compose(lk.Layout([16], lambda i: i))


def test_is_equal_is_semantic():
    a = lk.Layout([8, 8], lambda i, j: i * 8 + j)
    b = lk.Layout([8, 8], lambda i, j: i // 2 * 16 + i % 2 * 8 + j)
    assert a.is_equal(b) and a == b  # the simplifier already canonicalises b
    c = lk.Layout([8, 8], lambda i, j: (i * 8 + j) ^ 0)
    assert a.is_equal(c)
    assert not a.is_equal(lk.Layout([64], lambda i: i))
    assert not a.is_equal(lk.Layout([8, 8], lambda i, j: j * 8 + i))
    assert a.first_difference(lk.Layout([8, 8], lambda i, j: j * 8 + i)) == (0, 1)


def test_layouts_are_immutable_hashable_and_picklable():
    L = swizzle128_fp16(16, 64)
    with pytest.raises(AttributeError):
        L.x = 1
    assert hash(L) == hash(swizzle128_fp16(16, 64))
    assert pickle.loads(pickle.dumps(L)) == L
    with pytest.raises(ValueError):
        L.table()[0, 0, 0] = 1


# ---- proofs and inverses -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["enumerate", "isl"])
def test_proofs(method):
    ok = swizzle128_fp16(32, 64).prove_bijective(method)
    # a swizzle is affine over F2: asked for isl, the rank decides (without islpy) and the proof says so
    assert ok.verdict and ok.method == {"isl": "f2"}.get(method, method) and ok.witness is None and bool(ok)
    assert method != "isl" or "isl asked for" in ok.detail
    bad = lk.Layout([4, 4], lambda i, j: (i + j) % 4).prove_bijective(method)
    assert not bad and "collision" in bad.witness
    hole = lk.Layout([4, 6], lambda i, j: i * 8 + j).prove_bijective(method)
    assert not hole and "unreachable" in hole.witness


def test_isl_proves_what_enumeration_cannot_afford():
    big = lk.Layout([4096, 4096], lambda i, j: (j // 8 * 8 + (i % 8 ^ j % 8)) * 4096 + i)
    proof = big.prove_bijective("isl")
    assert proof.method == "f2" and proof.verdict  # a swizzle: the F2 rank, no islpy needed
    assert big.prove_bijective().method == "f2"
    odd = lk.Layout([3000, 4096], lambda i, j: ((j * 3000 + i) % 4096, (j * 3000 + i) // 4096))
    proof = odd.prove_bijective("isl")  # quasi-affine, not over F2 (3000): islpy, symbolically
    assert proof.method == "isl" and proof.verdict
    assert odd.prove_bijective().method == "isl"  # auto: too large to enumerate cheaply, and islpy is fast here


def test_inverse_of_mixed_radix_and_swizzles():
    mixed = lk.Layout([6, 10], lambda i, j: (j % 5 * 12 + i * 2 + j // 5,))
    assert str(mixed.inverse()) == "Layout((60,) -> (6, 10), transform: (_i,) -> (_i % 12 // 2, _i % 2 * 5 + _i // 12))"
    swz = swizzle128_fp16(32, 64)
    inv = swz.inverse()
    assert str(inv) == (
        "Layout((1, 4, 512) -> (32, 64), transform: (_i, _j, _k) -> "
        "(_j * 8 + _k // 64, (_k % 64 // 8 ^ _k // 64) * 8 + _k % 8))"
    )
    assert inv.inverse().is_equal(swz)
    tilelang_xor = lk.Layout([8, 16], lambda i, j: (i, (j // 8 + i % 2) % 2 * 8 + j % 8))
    assert tilelang_xor.inverse().compose(tilelang_xor).is_equal(lk.Layout([8, 16], lambda i, j: (i, j)))


def test_inverse_falls_back_to_f2_for_scrambled_bits():
    # bit 0 of the output mixes bits of both inputs in a way digit matching cannot untangle
    L = lk.Layout([4, 4], lambda i, j: ((i ^ j) % 2 + (i % 2) * 2 + (j // 2) * 4 + (i // 2) * 8,))
    inv = L.inverse()
    coords = np.moveaxis(np.indices((4, 4)), 0, -1)
    assert np.array_equal(inv.apply(L.table()), coords)


def test_not_bijective_errors_carry_witnesses():
    with pytest.raises(lk.NotBijectiveError) as info:
        lk.Layout([4, 4], lambda i, j: (i + j) % 4).inverse()
    x, y, image = info.value.witness["collision"]
    L = lk.Layout([4, 4], lambda i, j: (i + j) % 4)
    assert L.map_forward_index(x) == L.map_forward_index(y) == image


# ---- F2 view ------------------------------------------------------------------------------------


def test_to_linear_and_back():
    swz = swizzle128_fp16(32, 64)
    view = swz.to_linear()
    assert view.bases[0][:3] == ((0, 0, 72), (0, 0, 144), (0, 0, 288))
    assert view.bases[1][3] == (0, 0, 8)
    assert lk.Layout.from_linear(view).is_equal(swz)
    assert view.to_triton()["bases"]["_i"][3] == [0, 1, 0]
    with pytest.raises(lk.NotLinearError, match=r"_i = 1, _j = 1 maps to \(4,\), but the XOR") as err:
        lk.Layout([4, 4], lambda i, j: i * 3 + j).to_linear()
    assert err.value.witness == (1, 1) and isinstance(err.value, lk.UnsupportedError)
    with pytest.raises(lk.NotLinearError, match=r"input dim 0 \(_i\) has extent 3, not a power of two"):
        lk.Layout([3, 4], lambda i, j: i * 4 + j).to_linear()
    built = lk.Layout.from_linear({"lane": [[1], [2]], "reg": [[8], [4]]})
    assert built.input_shape == (4, 4) and built.table()[..., 0].tolist() == [[0, 8, 4, 12], [1, 9, 5, 13],
                                                                               [2, 10, 6, 14], [3, 11, 7, 15]]
    with pytest.raises(lk.ShapeError):
        lk.Layout.from_linear([[[1, 0]], [[2]]])


# ---- whole-array apply: chunked, int32 where safe, one bounds check -------------------------------

_EVALUATE = importlib.import_module("layoutkit.algebra.evaluate")


def _small_chunks(monkeypatch) -> None:
    """Chunks of 16 points, so a few hundred coordinates cross many chunk boundaries."""
    monkeypatch.setattr(_EVALUATE, "CHUNK", 16)
    monkeypatch.setattr(_EVALUATE, "MIN_CHUNK", 16)


def _every_coord(shape) -> np.ndarray:
    return np.ascontiguousarray(np.indices(shape).reshape(len(shape), -1).T)


@pytest.mark.parametrize("chunked", [False, True])
def test_apply_of_the_whole_domain_equals_the_table(monkeypatch, chunked):
    # non-power-of-two divisors, xor, scaled Sum terms, a bare variable, a constant and a repeated output
    L = lk.Layout([12, 40], lambda i, j: (j // 3 * 5 + i % 5 * 7 + 2, (j % 8 ^ i % 8) * 3 + i, j, 4, j))
    if chunked:
        _small_chunks(monkeypatch)
    coords = _every_coord(L.input_shape)
    order = np.random.default_rng(0).permutation(len(coords))
    got = L.apply(coords[order])
    assert got.dtype == np.int64 and got.shape == (480, 5)
    assert np.array_equal(got, L.table().reshape(-1, 5)[order])
    assert L.apply(np.array([11, 39])).tolist() == [13 * 5 + 1 * 7 + 2, (7 ^ 3) * 3 + 11, 39, 4, 39]


def test_apply_keeps_int64_results_beyond_int32():
    i, j = Var("_i", 1 << 16), Var("_j", 1 << 16)
    assert not _EVALUATE.fits_int32((i * 65536 + j,)) and _EVALUATE.fits_int32((i * 16 + j,))
    L = lk.Layout([1 << 16, 1 << 16], lambda i, j: (i * 65536 + j, i * 16 + j, (i ^ j) * 40000))
    coords = np.array([[65535, 65535], [40000, 3], [0, 65535], [1, 0]])
    want = [[(1 << 32) - 1, 65535 * 16 + 65535, 0],
            [40000 * 65536 + 3, 40000 * 16 + 3, (40000 ^ 3) * 40000],
            [65535, 65535, 65535 * 40000],
            [65536, 16, 40000]]
    assert L.apply(coords).tolist() == want


def test_apply_accepts_any_int_dtype_and_memory_order():
    L = swizzle128_fp16(16, 128)
    coords = _every_coord(L.input_shape)
    want = L.table().reshape(-1, 3)
    for arr in (coords.astype(np.int32), coords.astype(np.uint16), np.asfortranarray(coords), coords[::3],
                coords.T.copy().T):
        expect = want[::3] if len(arr) < len(coords) else want
        assert np.array_equal(L.apply(arr), expect)
    grid3 = coords.reshape(16, 128, 2)
    assert np.array_equal(L.apply(grid3), L.table())
    assert L.apply(np.zeros((0, 2), dtype=np.int64)).shape == (0, 3)


@pytest.mark.parametrize("chunked", [False, True])
def test_apply_names_the_first_coordinate_outside_the_domain(monkeypatch, chunked):
    if chunked:
        _small_chunks(monkeypatch)
    L = lk.Layout([4, 100], lambda i, j: i * 100 + j)
    coords = _every_coord(L.input_shape)
    # 99 exceeds the smallest extent but lies inside dim 1: the one-pass check must not reject it
    assert L.apply(coords).reshape(-1).tolist() == list(range(400))
    for bad, witness in [((4, 0), r"\(4, 0\)"), ((0, 100), r"\(0, 100\)"), ((2, -1), r"\(2, -1\)"),
                         ((-5, 3), r"\(-5, 3\)"), ((1 << 62, 0), rf"\({1 << 62}, 0\)")]:
        arr = coords.copy()
        arr[137] = bad
        arr[300] = (9, 9)  # a later bad coordinate is not the witness
        with pytest.raises(lk.CoordinateError, match=witness):
            L.apply(arr)
        with pytest.raises(lk.CoordinateError, match=witness):
            L.apply(np.asfortranarray(arr))
    with pytest.raises(lk.ShapeError, match=r"\[\.\.\., 2\]"):
        L.apply(coords[:, :1])


def test_auto_proof_method_follows_the_structure():
    nested = lk.Layout([4096, 4096], lambda i, j: (i, j ^ (i ^ i // 2)))
    for method in ("auto", "isl"):
        proof = nested.prove_bijective(method)
        assert proof.verdict and proof.method == "f2"
    odd_xor = lk.Layout([3, 2048], lambda i, j: (i, j ^ (i * 5)))  # bitwise, not over F2 (extent 3)
    assert odd_xor.prove_bijective().method == "enumerate"
    assert odd_xor.prove_bijective().verdict == odd_xor.prove_bijective("enumerate").verdict
    small_affine = lk.Layout([6, 10], lambda i, j: ((i * 10 + j) % 6, (i * 10 + j) // 6))
    assert small_affine.prove_bijective().method == "enumerate"  # cheaper than islpy at 60 points
