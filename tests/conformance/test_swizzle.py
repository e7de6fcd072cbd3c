"""Replays every public swizzle record of TileLang 0.1.15 table for table (errors included), and
checks that each swizzle is a bijection onto its storage whose closed-form inverse round-trips."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.targets import nv

from .records import assert_layout_matches, load

CASES = load("swizzle")

# TileLang raises InternalError (an ICHECK) for a failed precondition; layoutkit raises a typed
# LayoutError: ShapeError for shape preconditions, UnsupportedError for float64 on sm_100.
EXPECTED_ERRORS = (lk.ShapeError, lk.UnsupportedError)


def construct(case: dict) -> lk.Layout:
    args = case["args"]
    ctor = case["constructor"]
    shape, dtype = args["buffer_shape"], args["dtype"]
    if ctor == "make_swizzled_layout":
        return nv.make_swizzled_layout(shape, dtype, args.get("k_major", True), args.get("allow_pad", True))
    if ctor == "make_volta_swizzled_layout":
        return nv.make_volta_swizzled_layout(shape, dtype, args.get("is_a", True),
                                             args.get("k_major", args.get("k_inner", True)))
    if ctor in ("make_wgmma_swizzled_layout", "make_tcgen05mma_swizzled_layout"):
        return getattr(nv, ctor)(shape, dtype, args.get("continuity"), args.get("k_major", True))
    return getattr(nv, ctor)(shape, dtype)


def expected(case: dict) -> dict:
    """The record holding the table (``equal_to`` points to another case)."""
    ref = case.get("equal_to")
    return dict(case, forward_linear=CASES[ref]["forward_linear"]) if ref else case


TABLES = [c for c in CASES.values() if "error" not in c]


def test_public_cases_present():
    assert len(CASES) >= 40
    assert sum(1 for c in TABLES if c.get("equal_to")) >= 10


@pytest.mark.parametrize("case", TABLES, ids=lambda c: c["id"])
def test_swizzle_tables(case):
    layout = construct(case)
    assert isinstance(layout, lk.Layout)
    assert_layout_matches(layout, expected(case))


@pytest.mark.parametrize("case", TABLES, ids=lambda c: c["id"])
def test_bijective_onto_storage_and_inverse_round_trips(case):
    layout = construct(case)
    info = layout.swizzle
    coords = np.moveaxis(np.indices(layout.input_shape), 0, -1).reshape(-1, len(layout.input_shape))
    offsets = layout.linear_table().ravel()
    assert np.unique(offsets).size == offsets.size, "two coordinates share a storage slot"
    if info.kind == "padded":  # injective into rows of P >= C elements: not onto its bounding box
        assert offsets.max() + 1 == np.prod(layout.output_shape)
        return
    assert layout.is_bijective()
    inv = layout.inverse()
    assert inv.input_shape == layout.output_shape
    assert np.array_equal(inv.apply(layout.apply(coords)), coords)
    if all(e & (e - 1) == 0 for e in layout.input_shape):
        assert layout.to_linear().in_dims == tuple((v.name, e) for v, e in zip(layout.forward_vars, layout.input_shape))
    else:
        with pytest.raises(lk.NotLinearError, match="not a power of two"):
            layout.to_linear()


# ---- a larger sample measured the same way (data/nv_extra_swizzle.json.gz) ------------------------


def _load_extra(name: str) -> list[dict]:
    import gzip
    import json

    from .records import DATA

    with gzip.open(DATA / f"{name}.json.gz", "rt") as f:
        return json.load(f)["cases"]


EXTRA = _load_extra("nv_extra_swizzle")


EXTRA_TABLES = [c for c in EXTRA if "error" not in c]
ERRORS = [c for c in EXTRA if "error" in c]  # the public records hold no error case; the measured sample does


def test_error_cases_present():
    assert len(ERRORS) >= 100 and len({c["constructor"] for c in ERRORS}) == 6


@pytest.mark.parametrize("case", EXTRA_TABLES, ids=lambda c: c["id"])
def test_extra_swizzle_cases(case):
    """Every constructor x element width x outcome (bank swizzles, padded, linear, fp64, Volta, the
    Hopper and sm_100 rules with ``continuity``, leading dims)."""
    assert_layout_matches(construct(case), case)


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: c["id"])
def test_swizzle_errors(case):
    """The preconditions TileLang 0.1.15 checks (ICHECK / ValueError there) are refused here with a typed error."""
    with pytest.raises(EXPECTED_ERRORS):
        construct(case)
