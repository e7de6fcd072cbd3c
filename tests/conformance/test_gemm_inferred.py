"""Layouts chosen by ``infer_layouts`` against TileLang 0.1.15's LayoutInference (gemm_inferred.json),
table for table, for every buffer on record."""

from __future__ import annotations

import pytest

from layoutkit.fragment.fragment import Fragment
from layoutkit.infer import infer_layouts, kernels

from .records import assert_fragment_matches, assert_layout_matches, load

CASES = load("gemm_inferred")


def _record(case: dict, name: str) -> dict:
    rec = case["buffers"][name]
    if "equal_to" in rec:
        cid, buf = rec["equal_to"].split("#")
        rec = {**CASES[cid]["buffers"][buf], "id": rec["equal_to"]}
    return {**rec, "id": rec.get("id", f"{case['id']}#{name}")}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_inferred_layouts_match_tilelang(case_id):
    case = CASES[case_id]
    program = kernels.from_record(case["kernel"], case["target"])
    result = infer_layouts(program)
    for name in case["buffers"]:
        rec = _record(case, name)
        ours = result.layout_map[name]
        assert list(program.shape_of(name)) == case["buffers"][name]["buffer_shape"]
        if rec["kind"] == "fragment":
            assert isinstance(ours, Fragment), name
            assert_fragment_matches(ours, rec)
        else:
            assert not isinstance(ours, Fragment), name
            assert_layout_matches(ours, rec)


def test_every_public_buffer_is_checked():
    assert sum(len(c["buffers"]) for c in CASES.values()) >= 3
