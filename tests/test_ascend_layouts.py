"""Ascend fractal layouts: formulas (docs/reference.md#ascend-fractal-layouts), tags, errors, CATLASS equivalence."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import tla
from layoutkit.errors import DtypeError, ShapeError, UnsupportedError
from layoutkit.targets import ascend
from layoutkit.targets.ascend import FractalKind

DTYPES = {"float16": 16, "bfloat16": 16, "float32": 8, "int8": 32, "uint8": 32}


def grid(shape):
    return np.indices(shape)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(32, 32), (20, 40), (16, 8), (3, 48, 17)])
def test_formulas(dtype, shape):
    k0 = ascend.c0(dtype)
    assert k0 == DTYPES[dtype]
    *lead, i, j = grid(shape)
    f = 16
    cases = {
        "nz": (ascend.make_ascend_nz_layout(shape, dtype), [j // k0, i // f, i % f, j % k0]),
        "mk": (ascend.make_ascend_major_k_layout(shape, dtype), [j // k0, i // f, i % f, j % k0]),
        "mn": (ascend.make_ascend_major_mn_layout(shape, dtype), [i // k0, j // f, j % f, i % k0]),
        "l0c": (ascend.make_ascend_l0c_layout(shape), [j // f, i // f, i % f, j % f]),
    }
    for name, (layout, want) in cases.items():
        got = layout.table()
        assert np.array_equal(got, np.stack(list(lead) + want, axis=-1)), name


def test_compact_nz_and_sf():
    L = ascend.make_ascend_compact_nz_layout((2, 3, 4, 32), "float16")
    a, b, i, j = grid((2, 3, 4, 32))
    stage = a * 3 + b
    assert np.array_equal(L.table(), np.stack([stage * 2 + j // 16, i, j % 16], axis=-1))
    S = ascend.make_ascend_sf_layout((2, 32, 6), "float8_e8m0fnu")
    s, i, j = grid((2, 32, 6))
    assert np.array_equal(S.table(), np.stack([s, i // 16, j // 2, i % 16, j % 2], axis=-1))
    assert ascend.fractal_info(S).as_record() == {
        "kind": 2, "c0": 2, "row_frac": 16, "rows": 32, "cols": 6, "outer0": 2, "outer1": 3,
        "c0_axis": 1, "row16_axis": 0,
    }
    S16 = ascend.make_ascend_sf_layout((16, 5), "uint16")  # pack 1, any K
    assert ascend.fractal_info(S16).c0 == 1


def test_tags_are_not_guessed_from_the_map():
    # 16x16 fp16: NZ and MajorMN differ only in the swap of the last two outputs; L0C fp16 == NZ map.
    nz = ascend.make_ascend_nz_layout((16, 16), "float16")
    l0c = ascend.make_ascend_l0c_layout((16, 16))
    assert nz == l0c  # same map, plain Layout equality
    assert ascend.fractal_info(nz).kind is FractalKind.MAJOR_K
    assert ascend.fractal_info(l0c).kind is FractalKind.L0C
    with pytest.raises(UnsupportedError, match="untagged"):
        ascend.fractal_info(lk.Layout.from_exprs(nz.input_shape, nz.forward_index))
    info = ascend.fractal_info(ascend.make_ascend_l0c_layout((40, 24)))
    assert (info.c0, info.outer0, info.outer1, info.storage_shape) == (16, 2, 3, (2, 3, 16, 16))
    comp = ascend.fractal_info(ascend.make_ascend_compact_nz_layout((2, 5, 16), "float32"))
    assert comp.kind is FractalKind.COMPACT_NZ and comp.storage_shape == (4, 5, 8)


def test_expand_keeps_the_tag_and_leading_dims_pass_through():
    base = ascend.make_ascend_major_mn_layout((32, 16), "float32")
    big = base.expand([3])
    assert big == ascend.make_ascend_major_mn_layout((3, 32, 16), "float32")
    info = ascend.fractal_info(big)
    assert info.kind is FractalKind.MAJOR_MN and info.leading_shape == (3,)
    assert ascend.catlass_equivalent(big)


def test_c0_and_dtype_errors():
    assert ascend.c0("float4_e2m1fn") == 64
    with pytest.raises(DtypeError):
        ascend.c0("no_such_type")
    with pytest.raises(DtypeError, match="divides 16"):
        ascend.make_ascend_sf_layout((16, 4), "float32")
    with pytest.raises(ShapeError, match="2-byte aligned"):
        ascend.make_ascend_sf_layout((16, 3), "float8_e8m0fnu")


def test_k_align_and_shape_errors():
    assert ascend.make_ascend_major_k_layout((16, 64), "float16", k_align=32).input_shape == (16, 64)
    with pytest.raises(ShapeError, match="multiple of 32"):
        ascend.make_ascend_major_k_layout((64, 48), "float16", k_align=32)
    with pytest.raises(ShapeError, match="witness"):
        ascend.make_ascend_major_mn_layout((48, 64), "float16", k_align=32)  # K is rows for MajorMN
    assert ascend.make_ascend_major_mn_layout((64, 48), "float16", k_align=32).input_shape == (64, 48)
    with pytest.raises(UnsupportedError, match="static"):
        ascend.make_ascend_major_k_layout((16, None), "float16", k_align=16)
    with pytest.raises(ShapeError):
        ascend.make_ascend_major_k_layout((16, 16), "float16", k_align=0)
    with pytest.raises(ShapeError, match="rank >= 2"):
        ascend.make_ascend_nz_layout((16,), "float16")
    with pytest.raises(ShapeError, match="multiple of C0"):
        ascend.make_ascend_compact_nz_layout((4, 20), "float16")


# ---- CATLASS ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("rows,cols", [(48, 64), (20, 40), (1, 1), (33, 7)])
def test_padded_storage_equals_catlass_offsets(dtype, rows, cols):
    for make, tag in (
        (ascend.make_ascend_nz_layout, "zN"),
        (ascend.make_ascend_major_mn_layout, "nZ"),
        (lambda s, d: ascend.make_ascend_l0c_layout(s), "L0C"),
    ):
        L = make((rows, cols), dtype)
        assert ascend.catlass_tag(L) == tag
        want = tla.make_layout_from_tag(tag, dtype, rows, cols).offset_table()
        assert np.array_equal(ascend.storage_offset_table(L), want)
        assert ascend.catlass_equivalent(L)
        assert ascend.fractal_info(ascend.ascend_layout_from_tag(tag, (rows, cols), dtype)).kind is \
            ascend.fractal_info(L).kind


def test_naming_in_both_directions():
    assert ascend.KIND_OF_TAG["zN"] is FractalKind.MAJOR_K  # the naming trap: zN is NZ (MajorK)
    assert ascend.KIND_OF_TAG["nZ"] is FractalKind.MAJOR_MN
    for tag in ("RowMajor", "ColumnMajor", "zN", "zZ", "nZ", "nN", "L0C"):
        assert tag in ascend.tags_of_tla(tla.make_layout_from_tag(tag, "float32", 48, 80), "float32")
    assert ascend.tags_of_tla(tla.make_layout_from_tag("zN", "float32", 48, 80), "float32") == ("zN",)
    assert ascend.tags_of_tla(tla.make_layout_from_tag("L0C", "float16", 48, 80), "float16") == ("zN", "L0C")
    with pytest.raises(UnsupportedError):
        ascend.catlass_tag(ascend.make_ascend_sf_layout((16, 2), "uint8"))
    with pytest.raises(UnsupportedError, match="zZ"):
        ascend.ascend_layout_from_tag("zZ", (16, 16))


def test_mismatch_has_a_witness():
    L = ascend.make_ascend_nz_layout((32, 32), "float16")
    fake = ascend.AscendLayout.from_exprs(L.input_shape, L.forward_index[:2] + L.forward_index[:1:-1])
    object.__setattr__(fake, "_tag", L.fractal)
    with pytest.raises(ascend.CatlassMismatchError) as err:
        ascend.catlass_equivalent(fake)
    assert err.value.witness[0] == (0, 1)


def test_gemm_operand_rule_kinds():
    """MAD rule: the reduce-K axis always lands on the C0 axis."""
    a = ascend.fractal_info(ascend.make_ascend_major_k_layout((64, 32), "float16"))  # A (M, K), not transposed
    assert a.c0_axis == 1  # K = cols
    b = ascend.fractal_info(ascend.make_ascend_major_mn_layout((32, 64), "float16"))  # B (K, N), not transposed
    assert b.c0_axis == 0  # K = rows


def test_mad_rule_operand_layouts():
    kinds = {
        (op, t): ascend.fractal_info(ascend.make_ascend_operand_layout(op, (32, 64), "float16", t)).kind
        for op in "AB" for t in (False, True)
    }
    assert kinds == {
        ("A", False): FractalKind.MAJOR_K, ("A", True): FractalKind.MAJOR_MN,
        ("B", False): FractalKind.MAJOR_MN, ("B", True): FractalKind.MAJOR_K,
    }
    with pytest.raises(ShapeError):
        ascend.make_ascend_operand_layout("C", (16, 16), "float16")
