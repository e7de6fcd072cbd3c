"""Fragments indexed by variables from outside their parallel loop (``lse_local[k, j]`` inside
``for k in T.serial(...)`` around ``T.Parallel(...)``, ``T.copy(lse_local[k, 0], ...)``).

TileLang 0.1.15 keeps ``k`` symbolic in its ``ParallelOp``: a loop following such a fragment gets
the thread map ``thread(k, j)``, a fragment the loop lays out gets a thread map that ignores that
dim (``k`` is no loop variable), and its containment proofs hold for every ``k``.  So whenever the
fragment's thread map does not depend on the selected dim, TileLang's layouts are those of the
access read with ``k = 0``, which is how the adapter reads it (the Program's index is the constant
the expression takes at ``k = 0``, clamped into the dim).  When the solved thread map does depend
on it, TileLang's loop layout would be a function of ``k`` (a layout no Program can hold) or its
proof would fail, so :func:`check_selections` refuses the result, naming the statement.

An index that mixes the two, ``x_frag[i, jj * 4 + j]`` (``p * k + e``, ``e`` of loop variables),
is read likewise at ``k = 0``; TileLang's loop layout is the fragment's thread map at
``(i, jj * 4 + j)``, the same for every ``jj`` exactly when that map repeats every ``p`` along the dim,
which :func:`check_selections` checks (a :class:`Selection` with ``period=p``).

An access whose every index is then constant (``x[k]`` alone, every thread reading the same element)
stays a non-constant access, as TileLang counts it: the Program's loop records the selection, so layout
inference neither replicates ``x`` at its strict level nor skips it when choosing the loop's source
(:meth:`layoutkit.infer.Program.select`).  A fully replicated ``x`` (a read-back of a
``make_fully_replicated_layout_fragment``, a column sum on every thread) lays the loop out on every
thread, the same for every ``k``; an ``x`` spread over threads would make TileLang's loop layout a
function of ``k``, which layout inference refuses, naming the loop
(``docs/reference.md#indices-from-outside-the-loop``).

>>> import layoutkit as lk
>>> f = lk.Fragment([4, 128], forward_thread_fn=lambda k, j: j, forward_index_fn=lambda k, j: k)
>>> check_selections([Selection("parallel#3", "x", (0,), "loop")], {"x": f})
>>> g = lk.Fragment([4, 32], forward_thread_fn=lambda k, j: k * 32 + j, forward_index_fn=lambda k, j: 0)
>>> try:
...     check_selections([Selection("parallel#3", "x", (0,), "loop `for j`")], {"x": g})
... except UnsupportedError as err:
...     print(str(err).split("(")[1].split(")")[0])
thread 0 at [0, 0], 32 at [1, 0]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedError
from ..fragment.fragment import Fragment

__all__ = ["Selection", "check_selections", "outer_stride"]


@dataclass(frozen=True)
class Selection:
    """Op ``op`` reads or writes fragment ``buffer`` with dims ``dims`` indexed by variables from
    outside its loop; ``where`` names the statement."""

    op: str
    buffer: str
    dims: tuple[int, ...]
    where: str
    period: int = 0
    """0: the dims are indexed by outer variables alone (``lse_local[k, j]``), so the thread map may not
    depend on them; ``p > 0``: each dim's index is ``p * k + e`` with ``k`` from outside the loop and
    ``e`` of loop variables (``x_frag[i, jj * 4 + j]``, read with ``k = 0``), so the thread map must
    repeat with period ``p`` along the dims for the loop's layout not to depend on ``k``."""


def check_selections(selections: Iterable[Selection], layout_map: Mapping) -> None:
    """Raise :class:`UnsupportedError` where a solved fragment's thread map depends on a dim a
    selection fixes (see the module doc); ``layout_map`` maps buffer names to layouts."""
    for sel in selections:
        lay = layout_map.get(sel.buffer)
        if not isinstance(lay, Fragment):
            continue
        table = lay.thread_table()
        if sel.period:
            _check_period(sel, table)
            continue
        for d in sel.dims:
            first = np.take(table, [0], axis=d + 1)
            moved = np.argwhere(table != first)
            if len(moved):
                rep, *at = (int(x) for x in moved[0])
                at0 = list(at)
                at0[d] = 0
                was, now = int(table[tuple([rep, *at0])]), int(table[tuple([rep, *at])])
                raise UnsupportedError(
                    f"{sel.where}: fragment {sel.buffer} is indexed in dim {d} by a variable from outside the "
                    f"parallel loop, and its layout's thread depends on that dim (thread "
                    f"{was} at {at0}, {now} at {at}): TileLang 0.1.15 "
                    f"would lay the loop out as a function of that variable; expected a thread map independent "
                    f"of dim {d}")


def _check_period(sel: Selection, table: np.ndarray) -> None:
    """Raise where the thread ``table`` (replica first) does not repeat with ``sel.period`` along a dim."""
    p = sel.period
    for d in sel.dims:
        n = table.shape[d + 1]
        if p >= n:
            continue
        here, there = np.take(table, range(n - p), axis=d + 1), np.take(table, range(p, n), axis=d + 1)
        moved = np.argwhere(here != there)
        if len(moved):
            rep, *at = (int(x) for x in moved[0])
            at2 = list(at)
            at2[d] += p
            raise UnsupportedError(
                f"{sel.where}: fragment {sel.buffer} is indexed in dim {d} by {p} * k + (loop variables) with k "
                f"from outside the parallel loop, and its layout's thread does not repeat every {p} along that dim "
                f"(thread {int(table[tuple([rep, *at])])} at {at}, {int(table[tuple([rep, *at2])])} at {at2}): "
                f"TileLang 0.1.15 would lay the loop out as a function of k; expected a thread map of period {p}")


def outer_stride(x, loop_var) -> tuple[int, object] | None:
    """``(p, e)`` where the TIR index ``x`` is ``p * k + e`` with ``k`` the one variable of ``x`` from
    outside the loop (``loop_var(v)`` None), ``p > 0`` a constant and ``e`` free of ``k``
    (``jj * 4 + j`` gives ``(4, j)``); None for any other index.  Needs TileLang."""
    from tilelang import tvm

    found: list = []
    tvm.tirx.stmt_functor.post_order_visit(
        tvm.tirx.Evaluate(x), lambda n: found.append(n) if isinstance(n, tvm.tirx.Var) else None)
    outer: list = []
    for v in found:
        if loop_var(v) is None and not any(v.same_as(o) for o in outer):
            outer.append(v)
    if len(outer) != 1:
        return None
    coef = tvm.arith.detect_linear_equation(x, outer)
    if len(coef) != 2 or not isinstance(coef[0], tvm.tirx.IntImm) or int(coef[0].value) <= 0:
        return None
    return int(coef[0].value), coef[1]
