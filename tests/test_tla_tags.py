"""CATLASS layout tags (RowMajor ColumnMajor VectorLayout zN zZ nZ nN L0C): worked vectors in
several dtypes, whole tables against direct numpy formulas, predicates, and (once it exists) the
equality with the layoutkit.targets.ascend layouts."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit import tla
from layoutkit.errors import ShapeError

DTYPES = {"float16": 16, "float32": 8, "int8": 32, "bfloat16": 16, "float8_e4m3fn": 32, "int4": 64}
"""dtype -> C0 = 256 / bits (elements per 32-byte fractal row)."""

THREE = ("float16", "float32", "int8")
SIZES = ((100, 100), (37, 50), (16, 64), (129, 7), (1, 1))


def cdiv(a, b):
    return -(-a // b)


def fractal_offset(tag: str, c0: int, r: int, c: int, i: int, j: int) -> int:
    """One offset from the tag's *fractal* description (not from its stride table):

    z = row-major inside a fractal, n = column-major inside; Z = fractals row-major, N = fractals
    column-major.  z-fractals are 16 rows x C0 columns, n-fractals C0 rows x 16 columns; L0C is a zN
    of 16 x 16 fractals whatever the type.
    """
    if tag == "RowMajor":
        return i * c + j
    if tag == "ColumnMajor":
        return i + j * r
    if tag == "VectorLayout":
        return j
    if tag == "L0C":
        tag, c0 = "zN", 16
    if tag[0] == "z":
        fr, fc = 16, c0  # fractal rows x cols
        inside = (i % fr) * fc + j % fc
    else:
        fr, fc = c0, 16
        inside = (j % fc) * fr + i % fr
    n_rows, n_cols = cdiv(r, fr), cdiv(c, fc)
    fi, fj = i // fr, j // fc
    index = fi * n_cols + fj if tag[1] == "Z" else fj * n_rows + fi
    return index * fr * fc + inside


def table_formula(tag: str, c0: int, r: int, c: int) -> np.ndarray:
    """Every offset at once, straight from the stride table of docs/reference.md#layout-tags (RU = round up)."""
    i, j = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")

    def ru(a, b):
        return cdiv(a, b) * b

    if tag == "RowMajor":
        return i * c + j
    if tag == "ColumnMajor":
        return i + j * r
    if tag == "VectorLayout":
        return np.broadcast_to(np.arange(c), (1, c)) if r == 1 else None
    if tag == "zN":
        return (i % 16) * c0 + (i // 16) * 16 * c0 + (j % c0) + (j // c0) * ru(r, 16) * c0
    if tag == "zZ":
        return (i % 16) * c0 + (i // 16) * ru(c, c0) * 16 + (j % c0) + (j // c0) * 16 * c0
    if tag == "nZ":
        return (i % c0) + (i // c0) * ru(c, 16) * c0 + (j % 16) * c0 + (j // 16) * 16 * c0
    if tag == "nN":
        return (i % c0) + (i // c0) * 16 * c0 + (j % 16) * c0 + (j // 16) * ru(r, c0) * 16
    if tag == "L0C":
        return (i % 16) * 16 + (i // 16) * 256 + (j % 16) + (j // 16) * ru(r, 16) * 16
    raise AssertionError(tag)


MATRIX_TAGS = ("RowMajor", "ColumnMajor", "zN", "zZ", "nZ", "nN", "L0C")


# ---- worked vectors ------------------------------------------------------------------------------------


def test_worked_vectors_zn_float16_100x100():
    """By hand: C0 = 16, 7 fractal rows (112 padded rows), a fractal holds 16 * 16 = 256 elements,
    a column of fractals holds 112 * 16 = 1792."""
    zn = tla.make_layout_from_tag("zN", "float16", 100, 100)
    assert zn(0, 0) == 0
    assert zn(1, 0) == 16  # next row inside the fractal
    assert zn(0, 1) == 1
    assert zn(15, 15) == 15 * 16 + 15
    assert zn(16, 0) == 256  # the next fractal down
    assert zn(0, 16) == 1792  # the next column of fractals
    assert zn(99, 99) == 6 * 1792 + 6 * 256 + 3 * 16 + 3


def test_worked_vectors_three_dtypes():
    """zN / nZ / L0C at one coordinate in fp16 (C0 16), fp32 (C0 8), int8 (C0 32) for 40 x 50,
    derived by hand from the fractal picture."""
    r, c, (i, j) = 40, 50, (17, 9)
    # zN: row 17 is row 1 of fractal-row 1; col 9 in fractal-col 9 // C0.  3 fractal rows (48 padded).
    assert tla.make_layout_from_tag("zN", "float16", r, c)(i, j) == 0 * 48 * 16 + 1 * 256 + 1 * 16 + 9
    assert tla.make_layout_from_tag("zN", "float32", r, c)(i, j) == 1 * 48 * 8 + 1 * 128 + 1 * 8 + 1
    assert tla.make_layout_from_tag("zN", "int8", r, c)(i, j) == 0 * 48 * 32 + 1 * 512 + 1 * 32 + 9
    # nZ: n-fractals are C0 rows x 16 cols, column-major inside; fractal rows hold RU(c, 16) * C0.
    assert tla.make_layout_from_tag("nZ", "float16", r, c)(i, j) == 1 * 64 * 16 + 0 * 256 + 9 * 16 + 1
    assert tla.make_layout_from_tag("nZ", "float32", r, c)(i, j) == 2 * 64 * 8 + 0 * 128 + 9 * 8 + 1
    assert tla.make_layout_from_tag("nZ", "int8", r, c)(i, j) == 0 * 64 * 32 + 0 * 512 + 9 * 32 + 17
    # L0C: 16 x 16 fractals whatever the type (fp32 accumulators)
    for dtype in THREE:
        assert tla.make_layout_from_tag("L0C", dtype, r, c)(i, j) == 0 * 48 * 16 + 1 * 256 + 1 * 16 + 9


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("tag", MATRIX_TAGS)
def test_spot_offsets_from_the_fractal_picture(tag, dtype):
    c0 = DTYPES[dtype]
    assert tla.c0(dtype) == c0
    for r, c in SIZES:
        L = tla.make_layout_from_tag(tag, dtype, r, c)
        assert L.origin_shape == (r, c)
        for i, j in {(0, 0), (r - 1, c - 1), (r // 2, c // 3), (min(16, r - 1), min(c0, c - 1)), (r - 1, 0)}:
            assert L(i, j) == fractal_offset(tag, c0, r, c, i, j), (tag, dtype, r, c, i, j)


@pytest.mark.parametrize("dtype", THREE)
@pytest.mark.parametrize("tag", MATRIX_TAGS)
def test_whole_tables_match_the_stride_table(tag, dtype):
    c0 = DTYPES[dtype]
    for r, c in SIZES:
        L = tla.make_layout_from_tag(tag, dtype, r, c)
        want = table_formula(tag, c0, r, c)
        assert np.array_equal(L.offset_table(), want), (tag, dtype, r, c)
        assert np.array_equal(L.to_layout().table()[..., 0], want)


@pytest.mark.parametrize("dtype", THREE)
def test_vector_layout(dtype):
    v = tla.make_layout_from_tag("VectorLayout", dtype, 7, 300)  # rows are ignored
    assert v.shape == (300,) and v.stride == (1,) and v.origin_shape == (300,)
    assert np.array_equal(v.offset_table(), np.arange(300))
    assert tla.is_vector(v) and not tla.is_row_major(v)


@pytest.mark.parametrize("dtype", THREE)
@pytest.mark.parametrize("tag", ("zN", "zZ", "nZ", "nN", "L0C"))
def test_padded_fractal_layouts_are_bijective(tag, dtype):
    c0 = 16 if tag == "L0C" else DTYPES[dtype]
    fr, fc = (16, c0) if tag[0] in "zL" else (c0, 16)
    r, c = 3 * fr, 2 * fc
    M = tla.make_layout_from_tag(tag, dtype, r, c).to_layout()
    assert M.output_shape == (r * c,)
    assert M.is_bijective()


def test_static_and_dynamic_parts_print_like_catlass():
    assert str(tla.make_layout_from_tag("zN", "float16", 100, 100)) == "((_16,7),(_16,7)):((_16,_256),(_1,1792))"
    assert str(tla.make_layout_from_tag("zZ", "float32", 20, 40)) == "((_16,2),(_8,5)):((_8,640),(_1,_128))"
    assert str(tla.make_layout_from_tag("nZ", "int8", 20, 40)) == "((_32,1),(_16,3)):((_1,1536),(_32,_512))"
    assert str(tla.make_layout_from_tag("nN", "float16", 20, 40)) == "((_16,2),(_16,3)):((_1,_256),(_16,512))"
    assert str(tla.make_layout_from_tag("L0C", "float32", 20, 40)) == "((_16,2),(_16,3)):((_16,_256),(_1,512))"
    assert str(tla.make_layout_from_tag("RowMajor", "float16", 20, 40)) == "(20,40):(40,_1)"
    assert str(tla.make_layout_from_tag("ColumnMajor", "float16", 20, 40)) == "(20,40):(_1,20)"


# ---- predicates -----------------------------------------------------------------------------------------


PREDICATES = {
    "RowMajor": tla.is_row_major,
    "ColumnMajor": tla.is_column_major,
    "VectorLayout": tla.is_vector,
    "zN": tla.is_zN,
    "zZ": tla.is_zZ,
    "nZ": tla.is_nZ,
    "nN": tla.is_nN,
    "L0C": tla.is_L0C,
}


@pytest.mark.parametrize("dtype", THREE)
def test_predicates_recognise_each_tag(dtype):
    r, c = 64, 96  # more than one fractal in each direction, so the tags are distinguishable
    for tag in tla.TAGS:
        L = tla.make_layout_from_tag(tag, dtype, r, c)
        matches = tla.layout_tags(L, dtype)
        assert tag in matches, (tag, matches)
        others = set(matches) - {tag}
        if dtype != "float16" or tag not in ("zN", "L0C"):
            assert not others, (tag, dtype, others)
        else:  # a 16-bit zN *is* the L0C map
            assert others == ({"L0C"} if tag == "zN" else {"zN"})


def test_predicates_check_the_dtype_and_survive_tiling():
    zn = tla.make_layout_from_tag("zN", "bfloat16", 64, 64)
    assert tla.is_zN(zn, "bfloat16") and tla.is_zN(zn, "float16") and not tla.is_zN(zn, "float32")
    tile = tla.get_tile_layout(zn, (32, 32), (16, 16))
    assert tla.is_zN(tile, "bfloat16")
    nz = tla.make_layout_from_tag("nZ", "float32", 64, 64)
    assert tla.is_nZ(nz, "float32") and not tla.is_nZ(nz, "int8")
    assert not tla.is_zN(tla.make_layout((4, 4))) and not tla.is_zN("zN")
    assert not tla.is_row_major(zn) and not tla.is_vector(zn)
    assert tla.is_zN(tla.make_layout_from_tag("L0C", "float32", 64, 64))  # without a dtype: C0 = 16 from the shape
    # at most 16 rows, a zN and a zZ are the same map
    small = tla.make_layout_from_tag("zN", "float16", 16, 64)
    assert tla.is_zZ(small) and np.array_equal(
        small.offset_table(), tla.make_layout_from_tag("zZ", "float16", 16, 64).offset_table()
    )


def test_tag_names_and_dtypes():
    assert tla.make_layout_from_tag("zn", "fp16", 32, 32) == tla.make_layout_from_tag("zN", "float16", 32, 32)
    assert tla.make_layout_from_tag("NZ", "float32", 32, 32) == tla.make_layout_from_tag("nZ", "float32", 32, 32)
    assert tla.make_layout_from_tag("row_major", "int8", 3, 4) == tla.make_layout_from_tag("RowMajor", "int8", 3, 4)
    assert tla.make_layout_from_tag("zN", np.dtype("float16"), 32, 32).shape == ((16, 2), (16, 2))
    with pytest.raises(ShapeError, match="unknown layout tag"):
        tla.make_layout_from_tag("zX", "float16", 16, 16)
    with pytest.raises(ShapeError, match="unknown dtype"):
        tla.make_layout_from_tag("zN", "complex64", 16, 16)
    with pytest.raises(ShapeError, match="rows"):
        tla.make_layout_from_tag("zN", "float16", 0, 16)
    with pytest.raises(ShapeError):
        tla.make_layout_from_tag("zN", "float16", (16, 2), 16)
    assert tla.MakeLayoutFromTag is tla.make_layout_from_tag


# ---- the Ascend target --------------------------------------------------------------------------------


def test_tags_equal_the_ascend_target_layouts():
    """CATLASS zN == TileLang NZ (MajorK), nZ == MajorMN, L0C == L0C: with padded canonical storage,
    TileLang's 4-D output flattened row-major equals the TLA offset."""
    from layoutkit.targets import ascend

    needed = ("make_ascend_nz_layout", "make_ascend_major_mn_layout", "make_ascend_l0c_layout")
    if not all(hasattr(ascend, name) for name in needed):
        pytest.skip("layoutkit.targets.ascend does not provide the fractal layouts yet (the Ascend target issue)")
    for dtype in THREE:
        c0 = DTYPES[dtype]
        for tag, make, (r, c) in (
            ("zN", ascend.make_ascend_nz_layout, (48, 3 * c0)),
            ("nZ", ascend.make_ascend_major_mn_layout, (3 * c0, 48)),
            ("L0C", lambda shape, dtype: ascend.make_ascend_l0c_layout(shape), (48, 32)),
        ):
            target = make((r, c), dtype).linearized()
            assert np.array_equal(target.table()[..., 0], tla.make_layout_from_tag(tag, dtype, r, c).offset_table())
