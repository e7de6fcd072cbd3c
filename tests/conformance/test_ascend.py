"""Replays every public ``ascend`` record of TileLang 0.1.15 (tables, fractal info and errors)."""

from __future__ import annotations

import pytest

import layoutkit as lk
from layoutkit.errors import DtypeError, ShapeError, UnsupportedError
from layoutkit.targets import ascend

from .records import assert_layout_matches, load

CASES = load("ascend")
TABLE_CASES = [c for c in CASES.values() if c.get("kind") == "layout"]
# The public records hold no error case; data/ascend_grid.json.gz (tools/record_ascend.py: every constructor over a
# grid of shapes, dtypes and k_align values, run through TileLang 0.1.15) holds the inputs TileLang refuses.
GRID = list(load("ascend_grid").values())
ERROR_CASES = [c for c in GRID if "error" in c]


def _refused_on_purpose(case: dict) -> bool:
    """Inputs TileLang 0.1.15 accepts and layoutkit refuses with a ShapeError: a ``k_align`` below 1 (TileLang
    silently treats it as 1) and an empty dimension (a layout of nothing, which no kernel can use)."""
    return case["args"].get("k_align", 1) < 1 or 0 in case["args"]["buffer_shape"]


GRID_TABLES = [c for c in GRID if "error" not in c and not _refused_on_purpose(c)]
GRID_REFUSED = [c for c in GRID if "error" not in c and _refused_on_purpose(c)]

# TileLang's ValueError / InternalError (ICHECK) -> the typed errors layoutkit raises for the same input.
EXPECTED_ERRORS = (ShapeError, DtypeError, UnsupportedError)


def construct(case: dict) -> lk.Layout:
    args = case["args"]
    ctor = getattr(ascend, case["constructor"])
    shape, dtype = args["buffer_shape"], args.get("dtype", "float16")
    if case["constructor"] == "make_ascend_l0c_layout":
        return ctor(shape)
    if "k_align" in args:
        return ctor(shape, dtype, k_align=args["k_align"])
    return ctor(shape, dtype)


def test_public_counts():
    assert len(TABLE_CASES) == len(CASES) >= 18
    assert len(ERROR_CASES) >= 180 and len({c["constructor"] for c in ERROR_CASES}) == 6
    assert len(GRID_TABLES) >= 450 and len(GRID_REFUSED) >= 300


@pytest.mark.parametrize("case", TABLE_CASES, ids=lambda c: c["id"])
def test_ascend_tables(case):
    layout = construct(case)
    assert_layout_matches(layout, case)
    if "C0" in case["args"] and case["constructor"] != "make_ascend_sf_layout":
        assert ascend.c0(case["args"]["dtype"]) == case["args"]["C0"]
    if "fractal_info" in case:
        assert ascend.fractal_info(layout).as_record() == case["fractal_info"], case["id"]
    else:
        assert case.get("type_key") != "_AscendFractalLayout", case["id"]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c["id"])
def test_ascend_errors(case):
    with pytest.raises(EXPECTED_ERRORS):
        construct(case)


@pytest.mark.parametrize("case", GRID_TABLES, ids=lambda c: c["id"])
def test_ascend_grid_tables(case):
    assert_layout_matches(construct(case), case)


@pytest.mark.parametrize("case", GRID_REFUSED, ids=lambda c: c["id"])
def test_ascend_grid_refused_on_purpose(case):
    with pytest.raises(ShapeError):
        construct(case)
