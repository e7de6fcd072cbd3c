"""The SSA layout search (``layoutkit.infer.ssa``): forced proposals propagate, preferred candidates come before
low ones, defaults last, a failed check backtracks, fuel bounds the guesses, and a conflict names the constraint
and the layouts it saw."""

import pytest

from layoutkit.errors import LayoutConflictError, LimitError
from layoutkit.infer.ssa import Constraint, SsaConflictError, SsaFuelError, SsaProblem, same_as, solve


def equal(a, b, forced=False, what="="):
    return Constraint((a, b), lambda ls: ls[0] == ls[1], same_as(a, b, forced), what)


def test_forced_proposals_propagate_without_fuel():
    p = SsaProblem()
    a, b, c = (p.variable(n) for n in "abc")
    p.pin(a, "x", "pin a")
    p.add(equal(a, b, forced=True))
    p.add(equal(b, c, forced=True))
    assert solve(p, fuel=0) == {a: "x", b: "x", c: "x"}


def test_preferred_candidates_before_low_ones_then_defaults():
    p = SsaProblem()
    a, b = p.variable("a"), p.variable("b")
    p.add(Constraint((a,), lambda ls: True, lambda known: [(a, "splat", False), (a, "tiled", False)], "cands"))
    p.default(b, ["d"])
    got = solve(p, fuel=10, low=lambda layout: layout == "splat")
    assert got == {a: "tiled", b: "d"}


def test_failed_check_backtracks():
    p = SsaProblem()
    a, b = p.variable("a"), p.variable("b")
    p.default(a, ["bad", "good"])
    p.add(equal(a, b, forced=True))
    p.add(Constraint((b,), lambda ls: ls[0] != "bad", None, "b is not bad"))
    assert solve(p, fuel=10) == {a: "good", b: "good"}


def test_conflict_names_the_constraint_and_layouts():
    p = SsaProblem()
    a, b = p.variable("a"), p.variable("b")
    p.pin(a, "row", "cast a")
    p.pin(b, "col", "cast b")
    p.add(equal(a, b, what="add(a, b)"))
    with pytest.raises(SsaConflictError, match=r"add\(a, b\) cannot hold: a = row, b = col") as err:
        solve(p, fuel=10)
    assert isinstance(err.value, LayoutConflictError)
    assert err.value.witness == ("add(a, b)", {a: "row", b: "col"})


def test_two_pins_of_one_variable_conflict_at_once():
    p = SsaProblem()
    a = p.variable("a")
    p.pin(a, "row", "first")
    with pytest.raises(SsaConflictError, match="pinned to row by first and to col by second"):
        p.pin(a, "col", "second")


def test_fuel_bounds_the_guesses():
    p = SsaProblem()
    vs = [p.variable(str(k)) for k in range(4)]
    for v in vs:
        p.default(v, ["a", "b"])
    p.add(Constraint(tuple(vs), lambda ls: False, None, "never"))
    with pytest.raises(SsaFuelError, match="deepest failure so far: never cannot hold") as err:
        solve(p, fuel=5)
    assert isinstance(err.value, LimitError) and err.value.witness[0] == "never"
    with pytest.raises(SsaConflictError, match="never cannot hold"):
        solve(p, fuel=1000)
