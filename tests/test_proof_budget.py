"""Proofs take a time budget: islpy on xor-heavy maps stops at it with a typed ProofBudgetError instead of
running for minutes, and ``auto`` never picks an unbounded method."""

from __future__ import annotations

import time

import pytest

import layoutkit as lk
from layoutkit.algebra import layout as layout_module

# affine over the input bits: islpy needs tens of seconds on these (21 s and 94 s for the first two),
# so an "isl" request is decided by the F2 rank (see test_isl_on_f2_maps_is_decided_by_the_rank)
F2_MAPS = [
    lambda i: i ^ (i & 85),
    lambda i: i ^ (i & 1365),
    lambda i: i ^ (i >> 1) ^ (i >> 2) ^ (i >> 3) ^ (i >> 5),
]
# bitwise but not affine over the bits (// 3, * 3): only islpy's bit encoding is symbolic, and it is slow
SLOW_FOR_ISL = [
    lambda i: i ^ (i // 3),
    lambda i: i ^ ((i * 3) & 85),
    lambda i: i ^ (i // 3) ^ (i // 5),
]


@pytest.mark.parametrize("fn", SLOW_FOR_ISL, ids=["xor-div", "and-mask-mul", "xor-chain-div"])
def test_isl_stops_at_a_tiny_budget(fn):
    layout = lk.Layout([4096], fn)
    start = time.perf_counter()
    with pytest.raises(lk.ProofBudgetError, match=r"prove_bijective\('isl'\).*still running after the budget of "
                                                   r"0.1 s") as info:
        layout.prove_bijective("isl", budget_s=0.1)
    elapsed = time.perf_counter() - start
    assert elapsed < 10, elapsed  # wall time of a forked proof: generous for a loaded machine
    assert isinstance(info.value, lk.LimitError) and isinstance(info.value, lk.ProofError)
    assert info.value.limit == 0.1 and info.value.found >= 0.1


@pytest.mark.parametrize("fn", F2_MAPS, ids=["and-mask", "wide-mask", "xor-chain"])
def test_isl_on_f2_maps_is_decided_by_the_rank(fn):
    proof = lk.Layout([4096], fn).prove_bijective("isl", budget_s=1.0)
    assert proof.method == "f2" and proof.detail.startswith("isl asked for; affine over F2")


@pytest.mark.parametrize("fn", F2_MAPS, ids=["and-mask", "wide-mask", "xor-chain"])
def test_auto_decides_them_structurally(fn):
    layout = lk.Layout([4096], fn)
    start = time.process_time()  # CPU time: decided by the rank, not by racing the budget
    proof = layout.prove_bijective(budget_s=1.0)
    assert proof.method == "f2" and time.process_time() - start < 1.0
    assert proof.verdict == layout.prove_bijective("enumerate").verdict
    assert layout.is_bijective(budget_s=1.0) == proof.verdict


def test_auto_bounds_isl_by_default(monkeypatch):
    # quasi-affine and too large to enumerate: auto asks islpy, bounded by AUTO_BUDGET_S (made tiny here)
    layout = lk.Layout([3 * 2**23], lambda i: (i % 3) * 2**23 + i // 3)
    monkeypatch.setattr(layout_module, "AUTO_BUDGET_S", 0.001)
    start = time.perf_counter()
    with pytest.raises(lk.ProofBudgetError, match="budget of 0.001 s"):
        layout.is_bijective()
    assert time.perf_counter() - start < 10


def test_a_budget_that_suffices_gives_the_same_proof():
    layout = lk.Layout([8, 4], lambda i, j: (j, i))
    assert layout.prove_bijective("isl", budget_s=30) == lk.Layout([8, 4], lambda i, j: (j, i)).prove_bijective("isl")
    assert layout.prove_bijective("enumerate", budget_s=30).verdict
    assert layout.prove_bijective("f2", budget_s=30).verdict
    refuted = lk.Layout([8, 6], lambda i, j: (i, 0)).prove_bijective("isl", budget_s=30)
    assert not refuted.verdict and "collision" in refuted.witness


def test_errors_inside_the_budgeted_proof_stay_typed():
    with pytest.raises(lk.ProofError, match="islpy cannot decide"):
        lk.Layout([6, 4], lambda i, j: (i * j, i)).prove_bijective("isl", budget_s=30)


@pytest.mark.parametrize("budget", [0, -1, float("nan"), float("inf"), "1", True, [1]])
def test_bad_budgets(budget):
    with pytest.raises(lk.ShapeError, match="budget_s must be a positive number of seconds"):
        lk.Layout([4], lambda i: i).prove_bijective(budget_s=budget)


@pytest.mark.parametrize("method", ["ISL", None, 3, ["isl"], "exhaustive"])
def test_unknown_methods(method):
    with pytest.raises(lk.LayoutError, match="unknown proof method"):
        lk.Layout([4], lambda i: i).prove_bijective(method)


def test_cli_budget(capsys):
    from layoutkit.cli import main

    assert main(["check", "lambda i: i ^ (i // 3)", "--shape", "1024", "--method", "isl", "--budget", "0.2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "budget of 0.2 s" in err[0]
    assert main(["check", "lambda i: i ^ (i & 85)", "--shape", "1024", "--budget", "5"]) == 1  # f2: not bijective


def test_a_spent_budget_is_remembered(monkeypatch):
    layout = lk.Layout([4096], SLOW_FOR_ISL[0])
    with pytest.raises(lk.ProofBudgetError):
        layout.prove_bijective("isl", budget_s=0.2)
    start = time.process_time()
    with pytest.raises(lk.ProofBudgetError):  # no larger budget: the same answer, at once (no child)
        layout.prove_bijective("isl", budget_s=0.1)
    assert time.process_time() - start < 0.05
