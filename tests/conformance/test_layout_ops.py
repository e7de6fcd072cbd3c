"""Replays every public layout_ops record of TileLang 0.1.15, table for table."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import layoutkit as lk

from .records import assert_layout_matches, build_named, load

CASES = load("layout_ops")

# TileLang's error class -> the typed error layoutkit raises for the same input.
EXPECTED_ERRORS = {
    "Layout.reshape": lk.ShapeError,
    "Layout.inverse": lk.NotBijectiveError,
}


def build(case_id: str) -> lk.Layout:
    if case_id in CASES and "error" not in CASES[case_id]:
        return construct(CASES[case_id])
    return build_named(case_id)


def construct(case: dict) -> lk.Layout:
    args = case.get("args", {})
    ctor = case["constructor"]
    if ctor == "Layout":
        return lk.Layout(args["shape"], lk.parse_index_fn(args["fn"]))
    if "of" in args:
        base = build(args["of"])
    else:
        m = re.fullmatch(r"Layout\((\[[\d, ]*\]),\s*(lambda .*)\)\.inverse\(\)", args["fn"])
        assert m, args
        base = lk.Layout(json.loads(m.group(1)), lk.parse_index_fn(m.group(2)))
    if ctor == "Layout.repeat":
        return base.repeat(args["dim"], args["factor"])
    if ctor == "Layout.expand":
        return base.expand(args["leading_shape"])
    if ctor == "Layout.reshape":
        return base.reshape(args["shape"], args.get("rescale_num", 1), args.get("rescale_den", 1))
    if ctor == "Layout.inverse":
        return base.inverse()
    raise NotImplementedError(ctor)


TABLE_CASES = [c for c in CASES.values() if c.get("kind") == "layout"]
ERROR_CASES = [c for c in CASES.values() if "error" in c]


@pytest.mark.parametrize("case", TABLE_CASES, ids=lambda c: c["id"])
def test_layout_tables(case):
    assert_layout_matches(construct(case), case)


def _is_swizzle_inverse(case: dict) -> bool:
    return case["constructor"] == "Layout.inverse" and "swizzled" in case["args"].get("of", "")


@pytest.mark.parametrize("case", [c for c in ERROR_CASES if not _is_swizzle_inverse(c)], ids=lambda c: c["id"])
def test_expected_errors(case):
    with pytest.raises(EXPECTED_ERRORS[case["constructor"]]) as info:
        construct(case)
    if isinstance(info.value, lk.NotBijectiveError):
        assert info.value.witness, "a NotBijectiveError must carry a witness"


@pytest.mark.parametrize("case", [c for c in ERROR_CASES if _is_swizzle_inverse(c)], ids=lambda c: c["id"])
def test_swizzle_inverse_where_tilelang_fails(case):
    """TileLang cannot invert its own xor swizzles (its iter-map normaliser rejects `(a+b)%2`);
    layoutkit must: the inverse exists in closed form and round-trips over the whole domain."""
    base = build(case["args"]["of"])
    inv = base.inverse()
    assert inv.input_shape == base.output_shape
    coords = np.indices(base.input_shape).reshape(len(base.input_shape), -1).T
    assert np.array_equal(inv.apply(base.apply(coords)), coords)
    assert "^" in str(inv)  # closed form, not a lookup table


def test_noninjective_witness_is_a_real_collision():
    with pytest.raises(lk.NotBijectiveError) as info:
        lk.Layout([4, 4], lambda i, j: i).inverse()
    x, y, image = info.value.witness["collision"]
    assert x != y and x[0] == y[0] and image == (x[0],)


def test_padded_witness_is_unreachable():
    L = lk.Layout([4, 6], lambda i, j: i * 8 + j)
    with pytest.raises(lk.NotBijectiveError) as info:
        L.inverse()
    (out,) = info.value.witness["unreachable"]
    assert out not in set(L.table().ravel().tolist()) and 0 <= out < L.output_shape[0]


IS_EQUAL_BUILDERS = {
    "transpose": lambda: lk.Layout([4, 4], lambda i, j: (j, i)),
    "inverse(transpose)": lambda: lk.Layout([4, 4], lambda i, j: (j, i)).inverse(),
    "identity": lambda: lk.Layout([4, 4], lambda i, j: (i, j)),
    "linear8x8": lambda: lk.Layout([8, 8], lambda i, j: i * 8 + j),
    "(i*8+j) written as (j + 8*i)": lambda: lk.Layout([8, 8], lambda i, j: j + 8 * i),
    "(i//2*16 + i%2*8 + j)": lambda: lk.Layout([8, 8], lambda i, j: i // 2 * 16 + i % 2 * 8 + j),
    "full_bank fp16 64x64": lambda: build_named("swizzle/make_full_bank_swizzled_layout/fp16/64x64"),
    "make_swizzled_layout fp16 64x64": lambda: build_named("swizzle/make_full_bank_swizzled_layout/fp16/64x64"),
    "half_bank fp16 64x64": lambda: build_named("swizzle/make_half_bank_swizzled_layout/fp16/64x64"),
}


def test_is_equal_table():
    (case,) = [c for c in CASES.values() if c.get("kind") == "is_equal_table"]
    for pair in case["pairs"]:
        a_name, b_name = pair["pair"].split(" vs ")
        a, b = IS_EQUAL_BUILDERS[a_name](), IS_EQUAL_BUILDERS[b_name]()
        assert a.is_equal(b) is pair["is_equal"], pair["pair"]
        assert b.is_equal(a) is pair["is_equal"], pair["pair"]
        assert_reads_back(a, pair["a_expr"])
        assert_reads_back(b, pair["b_expr"])


def assert_reads_back(layout: lk.Layout, tilelang_exprs: list[str]) -> None:
    """TileLang's printed expressions parse (safely) into the same map; where ours has no xor
    (TileLang spells xor bit by bit as ``(a + b) % 2``), the printed text is identical."""
    names = {v.name: v for v in layout.forward_vars}
    theirs = lk.Layout.from_exprs(layout.input_shape, [lk.parse_expr(t, names) for t in tilelang_exprs])
    assert theirs.is_equal(layout), (tilelang_exprs, str(layout))
    ours = [str(e) for e in layout.forward_index]
    if not any("^" in e for e in ours):
        assert ours == tilelang_exprs


def test_printed_forms_match_tilelang():
    """Simplifier canonical forms print exactly as TileLang prints them for these cases."""
    for case in TABLE_CASES:
        assert_reads_back(construct(case), case["forward_expr"])
