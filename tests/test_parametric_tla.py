"""Parametric TLA layouts: CuTe shape:stride over symbolic extents, bridged to the parametric Layout,
proved for every value and compared table for table with the concrete TLA layout of several bindings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutkit import tla
from layoutkit.algebra.parametric import ParametricLayout, Symbol
from layoutkit.errors import ShapeError, UnsupportedError
from layoutkit.targets import nv
from layoutkit.tla.parametric import ParametricTlaLayout, swizzle_block

M, N = Symbol("M", lo=1), Symbol("N", lo=1)
BINDINGS = [{"M": m, "N": n} for m in (1, 2, 5) for n in (1, 3, 8)]


def is_permutation(table) -> bool:
    flat = np.asarray(table).reshape(-1)
    return np.array_equal(np.sort(flat), np.arange(flat.size))


def concrete_table(layout) -> np.ndarray:
    """Offsets of a concrete TLA layout (or Swizzle o layout) over its logical coordinates."""
    inner = layout.inner if isinstance(layout, tla.ComposedLayout) else layout
    table = inner.to_layout().table()[..., 0]
    return layout.outer(table) if isinstance(layout, tla.ComposedLayout) else table


def test_row_major_over_symbolic_extents_is_bijective_and_matches_every_binding():
    rm = ParametricTlaLayout((M, N), (N, 1))
    assert bool(rm.prove_bijective()) and bool(rm.prove_injective())
    assert str(rm) == "(M,N):(N,1)" and rm.size() == M.sym * N.sym
    for values in BINDINGS:
        bound = rm.bind(values)
        assert bound == tla.make_layout((values["M"], values["N"]), (values["N"], 1))
        assert np.array_equal(rm.table(values), concrete_table(bound))
        assert bool(bound.to_layout().prove_bijective())
        last = values["M"] * values["N"] - 1
        assert rm.inverse(last, values) == (values["M"] - 1, values["N"] - 1)
        assert rm.apply(rm.inverse(last, values), values) == last
    assert bool(rm.contains(0))
    c = rm.contains(3)
    assert not c and c.witness["values"] == {"M": 1, "N": 1}


def test_default_strides_are_column_major_and_hierarchical_modes_split_colexicographically():
    cm = ParametricTlaLayout((M, N))
    assert str(cm) == "(M,N):(1,M)" and bool(cm.prove_bijective())
    panels = ParametricTlaLayout(((8, M), N), ((1, 8 * N.sym), 8))
    assert str(panels) == "((8,M),N):((1,8*N),8)" and bool(panels.prove_bijective())
    assert panels.cosize() == panels.size() == 8 * M.sym * N.sym
    for values in BINDINGS:
        bound = panels.bind(values)
        assert bound == tla.make_layout(((8, values["M"]), values["N"]), ((1, 8 * values["N"]), 8))
        assert np.array_equal(panels.table(values), concrete_table(bound))
        assert np.array_equal(panels.to_parametric_layout().table(values), concrete_table(bound))
        top = ((7, values["M"] - 1), values["N"] - 1)  # a nested coordinate of the top-level modes
        assert panels.apply(top, values) == bound(*top) == 8 * values["M"] * values["N"] - 1
        assert panels.apply(3, values) == bound(3)  # a colexicographic 1-D index, as in CuTe
        assert np.array_equal(cm.table(values), concrete_table(cm.bind(values)))


def test_padded_layout_is_injective_for_all_values_not_bijective_with_the_breaking_value():
    P = Symbol("P", lo=0, multiple=8)
    padded = ParametricTlaLayout((M, N), (N.sym + P.sym, 1), symbols=(M, N, P))
    assert bool(padded.prove_injective())
    for values in BINDINGS:
        for p in (0, 8, 24):
            flat = concrete_table(padded.bind({**values, "P": p})).reshape(-1)
            assert np.unique(flat).size == flat.size
    proof = padded.prove_bijective()
    assert not proof and proof.witness["values"]["P"] > 0
    assert not is_permutation(concrete_table(padded.bind(proof.witness["values"])))
    with pytest.raises(UnsupportedError, match="not proved bijective"):
        padded.inverse(0, {"M": 1, "N": 1, "P": 0})


@pytest.mark.parametrize(("bits", "dtype", "cols"), [(3, "float16", 64), (2, "float16", 32), (1, "float16", 16),
                                                     (3, "int8", 128)])
def test_swizzle_over_symbolic_rows_is_bijective_and_is_the_nv_bank_swizzle(bits, dtype, cols):
    """128B / 64B / 32B CuTe swizzles ``Sw<b, 16B-vector, 3>`` over R rows of one swizzle width."""
    R = Symbol("R", lo=8, multiple=8)
    base = {"float16": 3, "int8": 4}[dtype]
    sw = ParametricTlaLayout((R, cols), (cols, 1), swizzle=tla.Swizzle(bits, base, 3))
    assert bool(sw.prove_bijective()) and bool(sw.prove_injective())
    kind = {3: "full", 2: "half", 1: "quarter"}[bits]
    for rows in (8, 16, 24, 64):
        want = nv.make_bank_swizzled_layout((rows, cols), dtype, kind).linearized().table()[..., 0]
        got = sw.table({"R": rows})
        assert np.array_equal(got, want) and np.array_equal(concrete_table(sw.bind({"R": rows})), want)
        assert is_permutation(got)
        assert sw.inverse(int(want[rows - 1, cols - 1]), {"R": rows}) == (rows - 1, cols - 1)


def test_a_swizzle_that_leaves_its_block_for_some_value_gets_that_value_as_witness():
    K = Symbol("K", lo=1)
    narrow = ParametricTlaLayout((K, 32), (32, 1), swizzle=tla.Swizzle(3, 3, 3))
    assert bool(narrow.prove_injective())
    proof = narrow.prove_bijective()
    assert not proof and proof.witness["values"] == {"K": 9}
    for k in range(1, 9):  # below the witness every row count is a bijection
        assert is_permutation(concrete_table(narrow.bind({"K": k})))
    assert not is_permutation(concrete_table(narrow.bind({"K": 9})))
    assert swizzle_block(tla.Swizzle(3, 3, 3)) == 64


def test_bridge_round_trip_and_errors():
    L = ParametricLayout.strided(((4, M), N), ((1, 4 * N.sym), 4))
    T = ParametricTlaLayout.from_parametric_layout(L)
    assert str(T) == "((4,M),N):((1,4*N),4)" and T.to_parametric_layout().digits == L.digits
    assert T == ParametricTlaLayout(((4, M), N), ((1, 4 * N.sym), 4)) and len({T, T}) == 1
    with pytest.raises(UnsupportedError, match="atom"):
        ParametricTlaLayout.from_parametric_layout(ParametricLayout.tiled(nv.make_full_bank_swizzled_layout(
            (8, 64), "float16"), (M, 1), (512, 0)))
    with pytest.raises(UnsupportedError, match="swizzled"):
        ParametricTlaLayout((M, 64), (64, 1), swizzle=tla.Swizzle(3, 3, 3)).to_parametric_layout()
    with pytest.raises(ShapeError, match="congruent"):
        ParametricTlaLayout((M, N), (1, (M, 1)))
    with pytest.raises(ShapeError, match="Swizzle"):
        ParametricTlaLayout((M, N), swizzle=3)
    with pytest.raises(ShapeError, match="no value"):
        ParametricTlaLayout((M, N)).bind({"M": 2})
    M8 = Symbol("M8", lo=8, multiple=4)
    # M / 8 is 1/8 at M = 1: refused when built, not when bound
    with pytest.raises(ShapeError, match=r"expected every extent >= 1 for all values; found M/8 = 1/8 at \{'M': 1"):
        ParametricTlaLayout((M.sym / 8, N), symbols=(M, N))
    with pytest.raises(ShapeError, match="expected an integer"):
        ParametricTlaLayout((M8.sym / 8, N), symbols=(M8, N)).bind({"M8": 12, "N": 1})
    # a negative or empty extent used to be "proved" bijective for all values
    for extent in (-M.sym, M.sym - 1, 3 - M.sym):
        with pytest.raises(ShapeError, match="expected every extent >= 1 for all values"):
            ParametricTlaLayout((M, extent), (1, M))


EXTENT = st.sampled_from([1, 2, 3, "M", "N"])
STRIDE = st.sampled_from([0, 1, 2, 3, 4, 8, "M", "N", "MN", "2N"])


def _x(code):
    return {"M": M.sym, "N": N.sym, "MN": M.sym * N.sym, "2N": 2 * N.sym}.get(code, code)


MODE = st.lists(st.tuples(EXTENT, STRIDE), min_size=1, max_size=2)


@given(st.lists(MODE, min_size=1, max_size=3))
def test_proof_verdicts_agree_with_the_concrete_proofs_of_several_bindings(modes):
    """Soundness against the concrete layouts: a proof holds on every enumerated binding (the concrete
    ``to_layout().prove_bijective()`` or an injectivity count), a refutation's witness binding fails.
    A mode of two leaves is hierarchical (split colexicographically)."""

    def one(mode, k):
        return tuple(_x(leaf[k]) for leaf in mode) if len(mode) > 1 else _x(mode[0][k])

    shape, stride = tuple(one(m, 0) for m in modes), tuple(one(m, 1) for m in modes)
    T = ParametricTlaLayout(shape, stride, symbols=(M, N))
    for name in ("prove_injective", "prove_bijective"):
        try:
            proof = getattr(T, name)()
        except UnsupportedError:
            continue

        def holds(values, name=name):
            bound = T.bind(values).to_layout()
            if name == "prove_bijective":
                return is_permutation(bound.table()[..., 0])
            flat = bound.table()[..., 0].reshape(-1)
            return np.unique(flat).size == flat.size

        if proof:
            assert all(holds(values) for values in BINDINGS)
            if name == "prove_bijective":  # the inverse of every offset is its logical coordinate
                values = {"M": 3, "N": 2}
                table = T.table(values)
                for coord in np.ndindex(table.shape):
                    assert T.inverse(int(table[coord]), values) == coord
        else:
            assert not holds(proof.witness["values"])
