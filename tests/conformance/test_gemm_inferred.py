"""Layouts chosen by ``infer_layouts`` against TileLang 0.1.15's LayoutInference, table for table, for
every buffer and every ``T.Parallel`` loop on record: ``gemm_inferred.json`` (the public docs GEMM) and
``tilelang_inferred.json.gz`` (99 kernels recorded by ``tools/record_inferred.py``: the 16 kernels of
the conformance schema, variants in threads, dtypes, tiles and architectures, shared-memory epilogues,
transposed reads, conversions, reductions, softmax; two of them TileLang cannot lay out)."""

from __future__ import annotations

import pytest

from layoutkit.fragment.fragment import Fragment
from layoutkit.infer import infer_layouts, programs

from .records import assert_fragment_matches, assert_layout_matches, load

GROUPS = ("gemm_inferred", "tilelang_inferred")
CASES = {(g, cid): case for g in GROUPS for cid, case in load(g).items()}


def _resolve(group: str, rec: dict, fallback_id: str) -> dict:
    """A record with ``equal_to`` replaced by the tables of the record it points to."""
    if "equal_to" in rec:
        cid, name = rec["equal_to"].split("#")
        case = load(group)[cid]
        if name.startswith("loop"):
            target = case["loops"][int(name[4:])]
        else:
            target = case["buffers"][name]
        return {**_resolve(group, target, rec["equal_to"]), "id": rec["equal_to"]}
    return {**rec, "id": rec.get("id", fallback_id)}


def _assert_matches(ours, rec: dict) -> None:
    if rec["kind"] == "fragment":
        assert isinstance(ours, Fragment), rec["id"]
        assert_fragment_matches(ours, rec)
    else:
        assert not isinstance(ours, Fragment), rec["id"]
        assert_layout_matches(ours, rec)


@pytest.mark.parametrize("group,case_id", sorted(CASES), ids=[f"{g}:{c}" for g, c in sorted(CASES)])
def test_inferred_layouts_match_tilelang(group, case_id):
    case = CASES[group, case_id]
    program = programs.from_record(case["kernel"], case["target"])
    result = infer_layouts(program)
    if "error" in case:
        _assert_solved_beyond_tilelang(case, program, result)
        return
    for name, raw in case["buffers"].items():
        assert list(program.shape_of(name)) == raw["buffer_shape"], name
        _assert_matches(result.layout_map[name], _resolve(group, raw, f"{case_id}#{name}"))
    parallels = [op for op in program.ops if op.kind == "parallel"]
    assert len(parallels) == len(case.get("loops", [])) or "loops" not in case
    for k, (op, raw) in enumerate(zip(parallels, case.get("loops", []))):
        assert list(op.loop) == raw["loop_shape"]
        _assert_matches(result.loop_layouts[op.name], _resolve(group, raw, f"{case_id}#loop{k}"))
        assert (op.name in result.predicates) == (raw["predicate"] is not None), (op.name, raw["predicate"])


def _assert_solved_beyond_tilelang(case: dict, program, result) -> None:
    """TileLang finds no layout for a fragment loop whose size is neither below nor a multiple of the
    thread count (its partition is not an exact split); we deal whole rows and guard idle slots."""
    assert case["error"] == "InternalError" and "no available layout found" in case["message"]
    (loop,) = [op for op in program.ops if op.kind == "parallel"]
    frag = result.loop_layouts[loop.name]
    assert frag.prove_injective()
    assert result.predicates[loop.name].startswith("_")
    for name in ("A_frag", "B_frag"):
        assert result.layout_map[name].is_equal(frag)


def test_every_recorded_kernel_is_checked():
    recorded = load("tilelang_inferred")
    assert len(recorded) >= 99
    assert sum(len(c.get("buffers", ())) + len(c.get("loops", ())) for c in recorded.values()) >= 292
    assert sorted(cid for cid, c in recorded.items() if "error" in c) == [
        "elementwise/sm_80/100x7_t128/float16", "elementwise/sm_80/24x40_t128/float16"]


def test_the_public_case_is_recorded_identically():
    """The recording tool reproduces the public record of the docs GEMM bit for bit."""
    public = load("gemm_inferred")
    recorded = load("tilelang_inferred")
    for cid, case in public.items():
        for name, rec in case["buffers"].items():
            mine = recorded[cid]["buffers"][name]
            want = _resolve("gemm_inferred", rec, f"{cid}#{name}")
            got = _resolve("tilelang_inferred", mine, f"{cid}#{name}")
            for key in ("thread", "index_linear", "forward_linear", "input_shape", "output_shape"):
                assert got.get(key) == want.get(key), (cid, name, key)
