"""Parametric layouts: proofs for every value of the symbols, checked against enumeration of several
concrete values; refuted claims carry the assignment that breaks them."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit.algebra.parametric import ParametricLayout, Symbol
from layoutkit.errors import ShapeError, UnsupportedError
from layoutkit.targets import nv

M, N = Symbol("M", lo=1), Symbol("N", lo=1)
CONCRETE = [{"M": m, "N": n} for m in (1, 2, 3, 7) for n in (1, 4, 5, 16)]


def is_permutation(table):
    flat = np.asarray(table).reshape(-1)
    return np.array_equal(np.sort(flat), np.arange(flat.size))


def test_row_major_over_symbolic_extents_is_bijective_for_all_values():
    L = ParametricLayout.strided((M, N), (N, 1))
    proof = L.prove_bijective()
    assert proof.verdict and bool(L.prove_injective())
    for values in CONCRETE:
        table = L.table(values)
        assert is_permutation(table)
        m, n = values["M"], values["N"]
        assert np.array_equal(table, np.arange(m * n).reshape(m, n))
        o = m * n - 1
        assert L.inverse(o, values) == (m - 1, n - 1)
    assert bool(L.contains(0))
    c = L.contains(5)  # M = N = 1 has a single offset
    assert not c and c.witness["values"] == {"M": 1, "N": 1}


def test_padded_layout_is_injective_for_all_values_but_not_bijective():
    P = Symbol("P", lo=0, multiple=8)
    L = ParametricLayout((M, N, P), None, (M, N), (N.sym + P.sym, 1))
    assert bool(L.prove_injective())
    for values in CONCRETE:
        for p in (0, 8, 16):
            flat = L.table({**values, "P": p}).reshape(-1)
            assert np.unique(flat).size == flat.size
    proof = L.prove_bijective()
    assert not proof
    values = proof.witness["values"]
    assert values["P"] > 0 and values["M"] > 1  # padding between rows leaves offsets out
    assert not is_permutation(L.table(values))


def test_swizzle_128b_over_symbolic_rows_is_bijective_for_all_values():
    R = Symbol("R", lo=8, multiple=8)
    atom = nv.make_full_bank_swizzled_layout((8, 64), "float16")
    L = ParametricLayout((R,), atom, (R.sym / 8, 1), (512, 0))
    assert bool(L.prove_bijective())
    for rows in (8, 16, 24, 64):
        want = nv.make_full_bank_swizzled_layout((rows, 64), "float16").linearized().table()[..., 0]
        got = L.table({"R": rows})
        assert np.array_equal(got, want)
        assert is_permutation(got)
        assert L.inverse(int(want[rows - 1, 63]), {"R": rows}) == (rows - 1, 63)


def test_a_layout_that_fails_for_some_value_gets_that_value_as_witness():
    L = ParametricLayout.strided((M, N), (16, 1))  # a fixed pitch: fine while N <= 16
    proof = L.prove_injective()
    assert not proof
    assert proof.witness["values"] == {"M": 2, "N": 17}
    a, b, image = proof.witness["collision"]
    assert L.apply(a, proof.witness["values"]) == L.apply(b, proof.witness["values"]) == image
    for n in (1, 8, 16):  # below the witness every value is injective
        flat = L.table({"M": 3, "N": n}).reshape(-1)
        assert np.unique(flat).size == flat.size
    bounded = ParametricLayout.strided((M, Symbol("N", lo=1, hi=16)), (16, 1))
    assert bool(bounded.prove_injective())


def test_bad_bindings_and_symbols():
    L = ParametricLayout.strided((M, N), (N, 1))
    with pytest.raises(ShapeError, match="no value"):
        L.apply((0, 0), {"M": 2})
    with pytest.raises(ShapeError, match="assumptions"):
        L.apply((0, 0), {"M": 0, "N": 2})
    with pytest.raises(ShapeError, match="identifier"):
        Symbol("M N")
    with pytest.raises(UnsupportedError, match="not proved bijective"):
        ParametricLayout.strided((M, N), (16, 1)).inverse(3, {"M": 2, "N": 4})


@pytest.mark.parametrize("kind", ["quarter", "half", "full"])
@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_nv_bank_swizzle_over_symbolic_rows_matches_every_concrete_row_count(kind, dtype):
    from layoutkit.targets.nv.parametric import make_parametric_bank_swizzled_layout

    R = Symbol("R", lo=8, multiple=8)
    width = {"quarter": 2, "half": 4, "full": 8}[kind] * (128 // nv.element_bits(dtype))
    L = make_parametric_bank_swizzled_layout(kind, R, 2 * width, dtype)
    assert bool(L.prove_bijective())
    for rows in (8, 16, 40, 64):
        want = nv.make_bank_swizzled_layout((rows, 2 * width), dtype, kind).linearized().table()[..., 0]
        assert np.array_equal(L.table({"R": rows}), want)
    with pytest.raises(ShapeError, match="multiples of 8"):
        make_parametric_bank_swizzled_layout(kind, Symbol("R", lo=8), 2 * width, dtype)


def test_a_dim_with_several_digits_splits_colexicographically_and_inverts():
    """Rows ``(8, M)`` at strides ``(1, 8N)``: column-major 8-row panels, each panel ``8N`` long."""
    L = ParametricLayout((M, N), None, ((8, M), N), ((1, 8 * N.sym), 8))
    assert bool(L.prove_bijective()) and L.size() == 8 * M.sym * N.sym
    for values in CONCRETE:
        m, n = values["M"], values["N"]
        i, j = np.meshgrid(np.arange(8 * m), np.arange(n), indexing="ij")
        want = (i % 8) + (i // 8) * 8 * n + j * 8
        assert np.array_equal(L.table(values), want)
        assert L.bound(values) == ((8 * m, n), (8 * m, n), ((1, 8 * n), 8))
        for o in range(0, 8 * m * n, 7):
            coord = L.inverse(o, values)
            assert L.apply(coord, values) == o and int(want[coord]) == o
    overlapping = ParametricLayout((M, N), None, ((8, M), N), ((1, 4 * N.sym), 8))
    proof = overlapping.prove_injective()
    assert not proof and proof.witness["values"] == {"M": 2, "N": 1}  # panel pitch 4 < 8 rows
    flat = overlapping.table(proof.witness["values"]).reshape(-1)
    assert np.unique(flat).size < flat.size
    with pytest.raises(ShapeError, match="as many strides"):
        ParametricLayout((M,), None, ((8, M),), (1,))
    assert L == ParametricLayout((M, N), None, ((8, M), N), ((1, 8 * N.sym), 8)) and L != overlapping
    assert len({L, overlapping, L}) == 2


def test_conditions_zero_only_on_the_admissible_values_are_proved():
    one = Symbol("K", lo=1, hi=1)
    L = ParametricLayout((one, N), None, (one, N), (N.sym * 5, one.sym))  # K = 1: stride 5N never used
    assert bool(L.prove_bijective())
    assert is_permutation(L.table({"K": 1, "N": 6}))


@pytest.mark.parametrize("kind", ["quarter", "half", "full"])
def test_nv_bank_swizzle_over_symbolic_rows_and_columns(kind):
    from layoutkit.targets.nv.parametric import make_parametric_bank_swizzled_layout

    width = {"quarter": 2, "half": 4, "full": 8}[kind] * 8
    R, C = Symbol("R", lo=8, multiple=8), Symbol("C", lo=width, multiple=width)
    L = make_parametric_bank_swizzled_layout(kind, R, C, "float16")
    assert bool(L.prove_bijective()) and L.size() == R.sym * C.sym
    for rows in (8, 24):
        for cols in (width, 3 * width):
            want = nv.make_bank_swizzled_layout((rows, cols), "float16", kind).linearized().table()[..., 0]
            assert np.array_equal(L.table({"R": rows, "C": cols}), want)
    with pytest.raises(ShapeError, match="for every value"):
        make_parametric_bank_swizzled_layout(kind, R, Symbol("C", lo=8), "float16")


@pytest.mark.parametrize("bindings", [[(1, 1), (2, 3), (5, 4), (8, 16)]])
def test_parametric_verdicts_equal_the_concrete_layouts_proofs_for_several_bindings(bindings):
    """Row-major over (M, N), a padded pitch, and the 128B swizzle over R rows: the for-all verdict is the
    verdict of ``lk.Layout.prove_bijective`` / ``prove_injective`` on every enumerated binding, and the
    refuted claim's witness is a binding where the concrete proof fails too."""
    import layoutkit as lk

    P, R = Symbol("P", lo=0, multiple=8), Symbol("R", lo=8, multiple=8)
    rm = ParametricLayout.strided((M, N), (N, 1))
    padded = ParametricLayout((M, N, P), None, (M, N), (N.sym + P.sym, 1))
    from layoutkit.targets.nv.parametric import make_parametric_bank_swizzled_layout

    swizzle = make_parametric_bank_swizzled_layout("full", R, 64, "float16")
    assert bool(rm.prove_bijective()) and bool(padded.prove_injective()) and bool(swizzle.prove_bijective())
    assert bool(swizzle.prove_injective())
    assert not padded.prove_bijective()
    for m, n in bindings:
        assert bool(lk.Layout([m, n], lambda i, j, n=n: i * n + j).prove_bijective())
        for p in (0, 8):
            concrete = lk.Layout([m, n], lambda i, j, n=n, p=p: i * (n + p) + j)
            assert injective(concrete.table()[..., 0])
            assert bool(concrete.prove_bijective()) == (p == 0 or m == 1)  # padding between rows only
            assert np.array_equal(padded.table({"M": m, "N": n, "P": p}), concrete.table()[..., 0])
    for rows in (8, 16, 32, 72):
        concrete = nv.make_full_bank_swizzled_layout((rows, 64), "float16").linearized()
        assert bool(concrete.prove_bijective())
        assert np.array_equal(swizzle.table({"R": rows}), concrete.table()[..., 0])
    witness = padded.prove_bijective().witness["values"]
    m, n, p = witness["M"], witness["N"], witness["P"]
    assert not lk.Layout([m, n], lambda i, j: i * (n + p) + j).prove_bijective()
    pitch = ParametricLayout.strided((M, N), (16, 1)).prove_injective().witness["values"]
    concrete = lk.Layout([pitch["M"], pitch["N"]], lambda i, j: i * 16 + j)
    assert not injective(concrete.table()[..., 0]) and not concrete.prove_bijective()


def injective(table) -> bool:
    flat = np.asarray(table).reshape(-1)
    return np.unique(flat).size == flat.size


def test_a_non_injective_atom_is_refuted_with_its_collision():
    import layoutkit as lk

    atom = lk.Layout([2, 4], lambda i, j: j // 2 + i * 2)  # (0, 0) and (0, 1) share offset 0
    L = ParametricLayout.tiled(atom, (M, 1), (8, 0))
    proof = L.prove_injective()
    assert not proof and proof.witness["collision"] == ((0, 0), (0, 1), 0)
    assert not L.prove_bijective()


@pytest.mark.parametrize(("cols", "dtype"), [(64, "float16"), (32, "float32"), (24, "float16")])
def test_nv_padded_layout_over_symbolic_rows(cols, dtype):
    """Injective for every row count; a bijection for every row count only without padding (24 halves:
    48 bytes, not a multiple of 256 bits), otherwise refuted at two rows."""
    from layoutkit.targets.nv.parametric import make_parametric_padded_layout

    R = Symbol("R", lo=1)
    L = make_parametric_padded_layout(R, cols, dtype)
    assert bool(L.prove_injective())
    padded = nv.make_padded_layout((2, cols), dtype).map_forward_index([1, 0])[0] != cols
    proof = L.prove_bijective()
    assert bool(proof) == (not padded)
    if padded:
        assert proof.witness["values"] == {"R": 2}
    for rows in (1, 2, 5, 16):
        concrete = nv.make_padded_layout((rows, cols), dtype)
        assert np.array_equal(L.table({"R": rows}), concrete.table()[..., 0])
        assert bool(concrete.prove_bijective()) == (rows == 1 or not padded)
