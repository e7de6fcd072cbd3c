"""Bounded work: parsing and building expressions past explicit limits raise typed errors, at once."""

from __future__ import annotations

import time

import pytest

import layoutkit as lk
from layoutkit.algebra import Var, parse_expr, parse_index_fn
from layoutkit.algebra.nodes import MAX_DEPTH, MAX_SHIFT
from layoutkit.algebra.parse import MAX_PARSE_DEPTH

I = Var("_i", 16)
NAMES = {"_i": I}


@pytest.mark.parametrize("text, error", [
    ("1 << 10**8", lk.ExprError),
    ("1 << 100000000", lk.LimitError),
    ("1 << 2**40", lk.ExprError),
    ("1 << 1099511627776", lk.LimitError),
    ("_i << 100000000", lk.LimitError),
    ("_i >> 1099511627776", lk.LimitError),
    (" + ".join(["_i"] * 10_000), lk.LimitError),
    (" + ".join(f"_i * {k}" for k in range(10_000)), lk.LimitError),
    (" * ".join(["_i"] * 2000), lk.LimitError),
    (" ^ ".join(["_i"] * 3000), lk.LimitError),
    ("-" * 10_000 + "_i", lk.LimitError),
    ("~" * 10 + "_i", lk.ExprError),
    ("(" * 500 + "_i" + ")" * 500, lk.LayoutError),
])
def test_hostile_expression_text_is_refused_quickly(text, error):
    # CPU time of this process, not wall time: a loaded machine must not fail the test; an exponential
    # blow-up in the parser would still take minutes of CPU
    start = time.process_time()
    with pytest.raises(error):
        parse_expr(text, NAMES)
    assert time.process_time() - start < 2


def test_limits_are_explicit_and_generous_enough():
    assert parse_expr(" + ".join(["_i"] * 300), NAMES) == I * 300
    assert parse_expr("-" * 200 + "_i", NAMES) == I
    assert str(parse_expr("_i << 64 >> 64", NAMES)) == "_i"
    with pytest.raises(lk.LimitError) as info:
        parse_expr(" + ".join(["_i"] * (MAX_PARSE_DEPTH + 2)), NAMES)
    assert info.value.limit == MAX_PARSE_DEPTH
    with pytest.raises(lk.LimitError) as info:
        I << (MAX_SHIFT + 1)
    assert info.value.found == MAX_SHIFT + 1


def test_deep_trees_built_by_operators_are_refused():
    x = I
    with pytest.raises(lk.LimitError) as info:
        for k in range(2 * MAX_DEPTH):
            x = x ^ Var(f"v{k}", 2)
    assert info.value.limit == MAX_DEPTH
    # a chain just under the limit still prints, re-parses and simplifies
    y = Var("v0", 4)
    names = {"_j": Var("_j", 16)} | {f"v{k}": Var(f"v{k}", 4) for k in range(100)}
    for k in range(1, 100):
        y = y ^ (names[f"v{k}"] * 3 + names["_j"])
    assert parse_expr(str(y), names) == y


def test_repeated_squaring_keeps_bounds_small():
    x = I + 1
    for _ in range(60):
        x = x * x
    assert x.hi == float("inf") and x.lo >= 0


def test_shift_by_a_variable_or_negative_amount_is_typed():
    with pytest.raises(lk.UnsupportedError):
        1 << I
    with pytest.raises(lk.UnsupportedError):
        8 >> I
    with pytest.raises(lk.ExprError):
        I << lk.Const(-1)


@pytest.mark.parametrize("build", [
    lambda: abs(I), lambda: I < 3, lambda: I > 3, lambda: I <= I, lambda: 3 >= I, lambda: min(I, Var("_j", 4)),
    lambda: max(I, 3), lambda: sorted([I, Var("_j", 4)]), lambda: ~I, lambda: 2 ** I, lambda: I ** 2,
    lambda: round(I), lambda: float(I), lambda: I + 1j,
], ids=["abs", "lt", "gt", "le", "ge", "min", "max", "sorted", "invert", "rpow", "pow", "round", "float", "complex"])
def test_unsupported_operators_raise_expr_error(build):
    with pytest.raises(lk.ExprError):
        build()


def test_huge_variable_extent_is_refused():
    with pytest.raises(lk.LimitError):
        Var("_i", 2**63)


def test_duplicate_lambda_arguments_are_refused():
    with pytest.raises(lk.ExprError, match="distinct"):
        parse_index_fn("lambda i, i: i")
