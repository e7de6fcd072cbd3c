"""Loops inside a parallel loop nest's body (``for k in T.serial(bK)`` under ``T.Parallel(bM, bN)``), read as
TileLang 0.1.15's loop planner sees them (see :mod:`layoutkit.infer.inner`).

``VectorizePlanner`` keeps the last ``For`` it entered, whatever its kind, as the vector axis: an access is
judged along the variable of the loop visited last before it, and an innermost loop with a runtime extent
stops the planner at width 1 without visiting its body.  The adapter reads a body whose inner loops form
one chain (each the only loop in the one around it).  Accesses inside or after the innermost loop are judged
along it, and the Program's op records them over the parallel and inner loop variables.  An access before
it (``x[i, j] = c[i]`` ahead of ``for k: x[i, j] += ...``) is judged along another loop: the adapter reads
that only where a store judged along the innermost loop does not move with it (TileLang then plans width 1
whatever the others allow) and refuses the rest by name, as it does loops side by side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..algebra.nodes import Const, Expr
from ..algebra.shapes import placeholder
from ..errors import UnsupportedError
from .tilelang_exprs import from_prim_expr
from .tilelang_ir import expr_nodes, nodes

__all__ = ["InnerLoops", "inner_loops"]


@dataclass
class InnerLoops:
    """The chain of loops inside a parallel body: ``loops`` (TIR ``For`` nodes, outer to inner), their
    ``extents``, ``chained`` (how many leading ones are each the body of the one around it, counted from the
    parallel body), ``vars`` (each loop variable's expression over the placeholders after the parallel dims)
    and ``scalar``: TileLang plans width 1 whatever the accesses (the innermost extent is a runtime value,
    or a store inside the innermost loop does not move with it); ``extents`` is then empty."""

    loops: list[Any]
    extents: tuple[int, ...] = ()
    chained: int = 0
    vars: list[tuple[Any, Expr]] = field(default_factory=list)
    scalar: bool = False

    def lookup(self, v) -> Expr | None:
        for tv, ours in self.vars:
            if tv.same_as(v):
                return ours
        return None

    def indices(self, indices, shape, fallback, loop_var, is_global: bool) -> tuple[Expr, ...]:
        """One access's indices over the parallel and inner loop variables; a dim the expression cannot show
        (another variable, a selection) keeps the index the Program's access has (``fallback``)."""
        def lookup(v):
            e = loop_var(v)
            e = self.lookup(v) if e is None else e
            return Const(0) if e is None and is_global else e

        out = []
        for x, n, old in zip(indices, shape, fallback):
            try:
                e = from_prim_expr(x, lookup, "inner index")
            except UnsupportedError:
                e = old
            out.append(e if e.lo >= 0 and e.hi <= n - 1 else old)
        return tuple(out)


def inner_loops(body, first_dim: int, where: str) -> InnerLoops | None:
    """The :class:`InnerLoops` of the parallel body ``body`` (None when it has no loop); ``first_dim`` is the
    placeholder dim of the outermost inner loop (the parallel nest's depth)."""
    from tilelang import tvm

    tirx = tvm.tirx
    chain = list(reversed(nodes(body, tirx.For)))  # post order reversed: an outer loop before its inner ones
    if not chain:
        return None
    for k, f in enumerate(chain):
        if len(nodes(f.body, tirx.For)) != len(chain) - k - 1:
            raise UnsupportedError(f"from_prim_func: {where}: its body holds loops side by side; expected one chain "
                                   f"of inner loops (TileLang 0.1.15 vectorises along whichever it visits last)")
    last = chain[-1]
    if not isinstance(last.extent, tirx.IntImm):
        return InnerLoops(chain, scalar=True)
    along, earlier = _judged(body, last, tirx)
    if earlier:
        if any(isinstance(n, tirx.BufferStore) and not _uses(n.indices, last.loop_var) for n in along):
            return InnerLoops(chain, scalar=True)  # that store forces scalar code whatever the others allow
        raise UnsupportedError(f"from_prim_func: {where}: an access comes before inner loop {last.loop_var}; "
                               f"expected every access inside or after it, or a store there that does not move "
                               f"with it (TileLang 0.1.15 judges the earlier access along another loop)")
    chained, s = 0, body
    while chained < len(chain) and isinstance(s, tirx.For) and s.same_as(chain[chained]):
        chained, s = chained + 1, s.body
    out = InnerLoops(chain, chained=chained)
    extents = []
    for k, f in enumerate(chain):
        if not isinstance(f.extent, tirx.IntImm) or not isinstance(f.min, tirx.IntImm):
            raise UnsupportedError(f"from_prim_func: {where}: inner loop {f.loop_var} runs over [{f.min}, {f.min} + "
                                   f"{f.extent}); expected constant bounds")
        n = max(int(f.extent.value), 1)
        extents.append(n)
        out.vars.append((f.loop_var, placeholder(first_dim + k, n) + int(f.min.value)))
    out.extents = tuple(extents)
    return out


def _judged(body, last, tirx) -> tuple[list, list]:
    """The accesses of ``body`` TileLang's planner judges along ``last`` (the innermost loop: those it visits
    after entering it) and the others (visited before, along the parallel or an outer loop)."""
    order: list = []
    kinds = (tirx.For, tirx.BufferStore, tirx.BufferLoad)

    def visit(n) -> bool:
        if isinstance(n, kinds):
            order.append(n)
        return True  # keep descending

    tirx.stmt_functor.pre_order_visit(body, visit)
    along: list = []
    earlier: list = []
    seen = False
    for n in order:
        if isinstance(n, tirx.For):
            seen = n.same_as(last)
        else:
            (along if seen else earlier).append(n)
    return along, earlier


def _uses(indices, var) -> bool:
    """Whether any of the TIR ``indices`` mentions ``var``."""
    from tilelang import tvm

    return any(n.same_as(var) for x in indices for n in expr_nodes(x, tvm.tirx.Var))
