"""Replays every public MMA fragment record of TileLang 0.1.15 (load A/B, store C, 8x8 atoms)."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.targets import nv

from .records import assert_fragment_matches, load

CASES = load("mma")

# TileLang raises AssertionError / ValueError from its emitter; layoutkit raises typed errors.
EXPECTED_ERRORS = (lk.ShapeError, lk.UnsupportedError)


def construct(case: dict) -> lk.Fragment:
    ctor = case["constructor"]
    a = case["args"]
    if ctor == "make_gemm_fragment_8x8":
        return nv.make_gemm_fragment_8x8()
    if ctor == "make_gemm_fragment_8x8_transposed":
        return nv.make_gemm_fragment_8x8_transposed()
    warps = (a["block_row_warps"], a["block_col_warps"], a["warp_row_tiles"], a["warp_col_tiles"])
    if ctor.endswith("make_mma_load_layout"):
        op = a["matrix"]
        dtype = a["a_dtype"] if op == "A" else a["b_dtype"]
        transposed = a["a_transposed"] if op == "A" else a["b_transposed"]
        return nv.make_mma_load_layout(op, dtype, *warps, a["chunk"], transposed)
    if ctor.endswith("make_mma_store_layout"):
        return nv.make_mma_store_layout(*warps, dtype=a["a_dtype"], accum_dtype=a["accum_dtype"])
    raise NotImplementedError(ctor)


TABLES = [c for c in CASES.values() if "error" not in c]


@pytest.mark.parametrize("case", TABLES, ids=lambda c: c["id"])
def test_mma_tables(case):
    assert_fragment_matches(construct(case), case)


@pytest.mark.parametrize("case", TABLES, ids=lambda c: c["id"])
def test_injective_for_replicate_one_and_covering(case):
    frag = construct(case)
    threads = frag.thread_table()
    assert threads.min() >= 0 and threads.max() < frag.thread_extent
    assert frag.index_table().min() >= 0
    if frag.replicate_size == 1:
        assert frag.prove_injective()
    # every replica of every element has a thread: replicas land on distinct threads
    per_element = np.sort(threads.reshape(frag.replicate_size, -1), axis=0)
    assert np.all(np.diff(per_element, axis=0) > 0)


# ---- a larger sample measured the same way (data/nv_extra_mma.json.gz) ----------------------------


def _load_extra(name: str) -> list[dict]:
    import gzip
    import json

    from .records import DATA

    with gzip.open(DATA / f"{name}.json.gz", "rt") as f:
        return json.load(f)["cases"]


EXTRA = _load_extra("nv_extra_mma")


def construct_extra(case: dict) -> lk.Fragment:
    from layoutkit.targets.nv import volta, wgmma

    a, arch, ctor = case["args"], case["arch"], case["constructor"]
    warps = (a["block_row_warps"], a["block_col_warps"], a["warp_row_tiles"], a["warp_col_tiles"])
    kind = a.get("kind", "mma")
    if kind == "wgmma":
        if ctor == "store":
            return wgmma.make_wgmma_store_layout(*warps, dtype=a["dtype"], chunk=a["chunk"])
        return wgmma.make_wgmma_load_layout(a["dtype"], *warps, a["chunk"], a["transposed"])
    if kind == "volta":
        if ctor == "store":
            return volta.make_volta_store_layout(*warps, dtype=a["dtype"], accum_dtype=a["accum_dtype"])
        return volta.make_volta_load_layout(a["matrix"], a["dtype"], *warps, a["chunk"], a["transposed"])
    if ctor == "make_mma_store_layout":
        return nv.make_mma_store_layout(*warps, dtype=a["dtype"], accum_dtype=a["accum_dtype"], arch=arch)
    return nv.make_mma_load_layout(a["matrix"], a["dtype"], *warps, a["chunk"], a["transposed"], arch=arch)


EXTRA_TABLES = [c for c in EXTRA if "error" not in c]
ERRORS = [c for c in EXTRA if "error" in c]  # the public records hold no error case; the measured sample does


def test_error_cases_present():
    assert len(ERRORS) >= 70 and {c["constructor"] for c in ERRORS} >= {"make_mma_load_layout", "store"}


@pytest.mark.parametrize("case", EXTRA_TABLES, ids=lambda c: c["id"])
def test_extra_fragment_cases(case):
    """sm_80 and sm_75 emitters (all operand widths, fp64 stores, chunk-cut atoms, N atoms of 8), the
    WGMMA and sm_70 emitters."""
    case = dict(case, thread_range=None, index_depends_on_rep=False)
    assert_fragment_matches(construct_extra(case), case)


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: c["id"])
def test_mma_errors(case):
    """Every input TileLang 0.1.15's emitters refuse (AssertionError / ValueError there) is refused here with a
    typed error."""
    with pytest.raises(EXPECTED_ERRORS):
        construct_extra(case)
