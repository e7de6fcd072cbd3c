"""Bounded work under hostile inputs: parametric layouts over hostile symbolic shapes and strides (every
claim is proved, refuted or refused within its budgets), and programs whose free-mode components grow
large (every one solves or stops at free mode's budget).  Every outcome is a result or a LayoutError."""

from __future__ import annotations

from unittest import mock

import numpy as np
import sympy
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer, tla
from layoutkit.infer import engine, free
from layoutkit.infer.rules import EMPTY
from layoutkit.tla.parametric import ParametricTlaLayout

from .hostile import HUGE_INTS, attempt

# ---- parametric layouts -------------------------------------------------------------------------------

_SYMBOLS = st.builds(
    lambda name, lo, multiple, hi: attempt(lambda: lk.Symbol(name, lo=lo, multiple=multiple, hi=hi)),
    st.sampled_from(["M", "N", "K", "S0", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"]),
    st.sampled_from([1, 2, 8, 1000, 10**6, 2**40, 2**62, 2**63]),
    st.sampled_from([1, 2, 8, 64, 4096, 2**31, 2**70]),
    st.sampled_from([None, None, 1, 64, 10**9]))
"""Symbols with assumptions from ordinary to hostile (huge lower bounds and multiples, empty ranges)."""


@st.composite
def _polynomials(draw, symbols: list) -> object:
    """An extent or stride: an int, a symbol, or a sympy expression built from them (sums, products and
    powers up to degree 70, and the non-polynomial forms a caller might hand in)."""
    syms = [s.sym for s in symbols]
    leaf = st.one_of(st.integers(-3, 64), HUGE_INTS, st.sampled_from(syms)) if syms else st.integers(1, 8)
    kind = draw(st.sampled_from(["int", "symbol", "sum", "product", "power", "odd", "big"]))
    if kind == "int":
        return draw(st.one_of(st.integers(1, 64), HUGE_INTS))
    if kind == "symbol" and symbols:
        return draw(st.sampled_from(symbols))
    a, b = draw(leaf), draw(leaf)
    if kind == "sum":
        return sympy.sympify(a) + b
    if kind == "product":
        return sympy.sympify(a) * b
    if kind == "power":
        return sympy.sympify(a) ** draw(st.integers(0, 70))
    if kind == "big":  # a product of binomials: its expansion has 2**k monomials
        return sympy.Mul(*[s + draw(st.integers(1, 3)) for s in syms] * draw(st.integers(1, 9)))
    x = syms[0] if syms else sympy.Symbol("M", integer=True)
    return draw(st.sampled_from([sympy.sqrt(x), sympy.Float(1.5) * x, sympy.oo, sympy.nan, sympy.I * x, 2**x,
                                 1 / x, sympy.floor(x / 3), sympy.Rational(1, 3) * x, sympy.zoo, -x]))


@st.composite
def parametric_tla_layouts(draw) -> tuple:
    """``(shape, stride, swizzle, symbols)`` for a ParametricTlaLayout: hostile symbols, extents and strides,
    nested modes."""
    symbols = list({s.name: s for s in draw(st.lists(_SYMBOLS, min_size=0, max_size=10)) if s}.values())
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(_polynomials(symbols)) if draw(st.integers(0, 3)) else
                  tuple(draw(_polynomials(symbols)) for _ in range(draw(st.integers(1, 3)))) for _ in range(rank))
    stride = None
    if draw(st.booleans()):
        stride = tuple(tuple(draw(_polynomials(symbols)) for _ in m) if isinstance(m, tuple) else
                       draw(_polynomials(symbols)) for m in shape)
    swizzle = draw(st.sampled_from([None, tla.Swizzle(3, 3, 3), tla.Swizzle(2, 4, 3), tla.Swizzle(1, 0, 1)]))
    return shape, stride, swizzle, symbols


@given(parametric_tla_layouts(), st.data())
def test_parametric_tla_layouts_prove_refute_or_refuse_typed(spec, data):
    shape, stride, swizzle, symbols = spec
    layout = attempt(lambda: ParametricTlaLayout(shape, stride, swizzle=swizzle, symbols=symbols))
    if layout is None:
        return
    attempt(layout.size)
    attempt(layout.cosize)
    injective = attempt(layout.prove_injective)
    bijective = attempt(layout.prove_bijective)
    values = {s.name: data.draw(st.sampled_from(s.values(3) or [s.lo]), label=s.name) for s in symbols}
    size = attempt(lambda: int(layout.size().subs({s.sym: v for s, v in zip(symbols, values.values())})))
    # a table within TABLE_LIMIT may still hold 2**26 points (seconds to build and sort): check small ones
    table = attempt(lambda: layout.table(values)) if size is not None and size <= 1 << 20 else None
    if table is not None and bijective is not None and layout.symbols and symbols:
        # a proof for every value holds at this one (when the values are admissible and the table was built)
        flat = np.sort(table.reshape(-1))
        if bijective.verdict:
            assert np.array_equal(flat, np.arange(flat.size))
        if injective is not None and injective.verdict:
            assert not np.any(flat[1:] == flat[:-1])


@given(parametric_tla_layouts())
def test_parametric_layouts_and_fragments_on_hostile_extents(spec):
    shape, stride, _, symbols = spec
    leaves = [m[0] if isinstance(m, tuple) else m for m in shape]
    strides = [m[0] if isinstance(m, tuple) else m for m in (stride or shape)]
    layout = attempt(lambda: lk.ParametricLayout(symbols, None, leaves, strides))
    if layout is not None:
        attempt(layout.prove_injective)
        attempt(layout.prove_bijective)
        attempt(layout.size)
    atom = lk.Fragment([2] * len(leaves), forward_thread_fn=lambda *xs: xs[0], forward_index_fn=lambda *xs: xs[-1])
    frag = attempt(lambda: lk.ParametricFragment(symbols, atom, leaves, strides, [0] * len(leaves)))
    if frag is not None:
        attempt(frag.prove_injective)
        attempt(frag.prove_bijective)
        attempt(frag.thread_extent)
        attempt(lambda: frag.contains(frag))


# ---- free mode over large components --------------------------------------------------------------------

def _ident(i, j):
    return (i, j)


def _transposed(i, j):
    return (j, i)


@st.composite
def large_components(draw) -> tuple[infer.Program, str]:
    """A program whose fragments form a few large components: chains and fans of loops (read as is or
    transposed, in mixed dtypes), fills and reductions, and optionally an op free mode cannot prove local
    (so every root runs); and the cost model to solve it with."""
    infer.register_rule("fuzz_budget_opaque", "*", lambda op, ctx, level: EMPTY)
    n = draw(st.one_of(st.integers(1, 12), st.integers(13, 40)))
    rows, cols = draw(st.sampled_from([(16, 16), (64, 64), (32, 8), (12, 20)]))
    p = infer.Program(threads=draw(st.sampled_from([32, 128, 256])), target="sm_80")
    frags = [p.alloc_fragment("f0", (rows, cols), "float32")]
    for k in range(n):
        kind = draw(st.sampled_from(["chain", "chain", "fan", "fill", "reduce"]))
        src = frags[-1] if kind != "fan" else frags[draw(st.integers(0, len(frags) - 1))]
        if kind == "fill":
            p.fill(src, 0.0)
        elif kind == "reduce":
            p.reduce(src, p.alloc_fragment(f"r{k}", (src.shape[0],), "float32"), dim=1, kind="sum")
        else:
            transposed = draw(st.integers(0, 4)) == 0
            dst = p.alloc_fragment(f"f{k + 1}", src.shape[::-1] if transposed else src.shape,
                                   draw(st.sampled_from(["float16", "float32"])))
            p.parallel(src.shape, writes=[(dst, _transposed if transposed else _ident)], reads=[(src, _ident)])
            frags.append(dst)
    if draw(st.booleans()):
        p.ops.append(infer.Op("fuzz_budget_opaque", 100_000, {}, None, (), ("f0",)))
    return p, draw(st.sampled_from(["register-count", "smem-aware"]))


@given(large_components())
def test_large_components_solve_or_stop_at_free_modes_budget(case):
    program, model = case
    # a twentieth of the budgets, so that a program of a few dozen ops reaches them and an example stays well
    # under a second (the real budgets take about 2 s each: tests/test_infer_scale.py)
    with mock.patch.object(free, "FREE_RULE_RUNS", free.FREE_RULE_RUNS // 20), \
            mock.patch.object(engine, "EXPLAIN_WORK", engine.EXPLAIN_WORK // 20):
        result = attempt(lambda: infer.infer_layouts(program, cost_model=model))
    if result is not None:
        assert set(result.layout_map) >= {b for op in program.ops for b in op.buffers}
