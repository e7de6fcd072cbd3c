"""Hash-consed expression nodes, the canonical term order without printing, and compose chains that
stay linear in size."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.algebra import Var
from layoutkit.algebra.nodes import compare_text, text_prefix, to_str, walk
from layoutkit.errors import LimitError

from .test_properties import _built, raw_expressions


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _text_cmp(a: str, b: str) -> int:
    return (a > b) - (a < b)


def test_equal_nodes_are_one_object() -> None:
    i, j = Var("_i", 8), Var("_j", 8)
    assert Var("_i", 8) is i
    a = (i + j) % 4 * 2 + j // 2
    b = (j + i) % 4 * 2 + (j // 2)
    assert a is b
    assert pickle.loads(pickle.dumps(a)) is a
    assert Var("_i", 16) is not i  # the extent is part of the node


@settings(max_examples=150, deadline=None)
@given(raw_expressions(), raw_expressions())
def test_compare_text_is_the_order_of_the_printed_texts(first: tuple, second: tuple) -> None:
    a, b = _built(*first), _built(*second)
    nodes = list(walk([a, b]))
    for x in nodes[:12]:
        for y in nodes[:12]:
            assert _sign(compare_text(x, y)) == _text_cmp(to_str(x), to_str(y)), (str(x), str(y))


@settings(max_examples=60, deadline=None)
@given(raw_expressions(), st.integers(0, 60))
def test_text_prefix_is_a_prefix(case: tuple, limit: int) -> None:
    e = _built(*case)
    text, head = to_str(e), text_prefix(e, limit)
    assert head == (text if len(text) <= limit else text[:limit] + "...")


def _chain(base: lk.Layout, depth: int) -> lk.Layout:
    out = base
    for _ in range(depth - 1):
        out = out.compose(base)
    return out


def test_compose_chain_is_a_dag_of_linear_size() -> None:
    """20 compositions of a quasi-affine permutation: the printed text doubles with every step (the
    outputs use both previous outputs), the DAG grows by a few nodes."""
    base = lk.Layout([16, 16], lambda i, j: ((i + j) % 16, (i + 2 * j) % 16))
    sizes = [len(list(walk(list(_chain(base, d).forward_index)))) for d in (10, 20)]
    assert sizes[1] - sizes[0] <= 5 * 10
    deep = _chain(base, 20)
    assert len(to_str(deep.forward_index[0])) > 1 << 20
    assert len(deep.describe()) < 1200  # error messages show a prefix, not megabytes
    want = base.table()
    for _ in range(19):  # the reference: the table composed with itself, point by point
        want = base.table()[want[..., 0], want[..., 1]]
    assert (deep.table() == want).all()


def test_deep_nesting_still_refused() -> None:
    x: lk.algebra.Expr = Var("_i", 8)
    try:
        for _ in range(200):
            x = (x ^ 3) * 2 + 1
    except LimitError:
        return
    raise AssertionError("nesting past MAX_DEPTH was accepted")
