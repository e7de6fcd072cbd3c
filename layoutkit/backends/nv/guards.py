"""Bounds guards proved by the expression intervals, dropped from a lowered kernel.

A guard pair ``(expr, bound)`` of a :class:`~.ir.Copy`, :class:`~.ir.Load`, :class:`~.ir.Store` or
:class:`~.ir.Compute` means ``expr < bound``.  Inside a kernel the thread and block indices are bounded by the
launch (``tid < threads``, ``bx < grid[0]``, ``by < grid[1]``) and every loop variable by its extent, so the
interval every expression node carries (:mod:`layoutkit.algebra.nodes`) proves many guards true for every
thread: a static shape that the tile divides leaves nothing to check, and a printed comparison there is only
integer work on the hot path.  Guards of tails (a shape the tile does not divide) stay.

>>> from layoutkit.algebra.nodes import Var
>>> from layoutkit.backends.nv import ir
>>> i = Var("i", 4)
>>> st = ir.Store("y", ir.BX * 128 + i * 32 + ir.TID, "r", i, 1, ((ir.BX * 128 + i * 32 + ir.TID, 256),))
>>> k = ir.Kernel("k", 32, (2, 1), (), (ir.For(i, 4, (st,)),))
>>> prove_guards(k).body[0].body[0].guard
()
>>> prove_guards(ir.Kernel("k", 32, (3, 1), (), (ir.For(i, 4, (st,)),))).body[0].body[0].guard == st.guard
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ...algebra.nodes import Expr, Var, substitute
from . import ir

_GUARDED = (ir.Copy, ir.Load, ir.Store, ir.Compute)


def proved(expr: Expr | int, bound: int, extents: Mapping[Var, Expr]) -> bool:
    """Whether ``expr < bound`` holds for every value of its variables, the launch variables bounded by
    ``extents`` (a mapping from :data:`~.ir.TID` / :data:`~.ir.BX` / :data:`~.ir.BY` to bounded variables).

    >>> proved(ir.TID // 4, 32, {ir.TID: Var("tid", 128)}), proved(ir.TID // 4, 31, {ir.TID: Var("tid", 128)})
    (True, False)
    """
    if not isinstance(expr, Expr):
        return int(expr) < bound
    return substitute(expr, extents).hi < bound


def _prune(guard: ir.Guard, extents) -> ir.Guard:
    return tuple((e, b) for e, b in guard if not proved(e, b, extents))


def _statement(st, extents):
    if isinstance(st, ir.For):
        return dataclasses.replace(st, body=tuple(_statement(s, extents) for s in st.body))
    if not isinstance(st, _GUARDED):
        return st
    changes = {"guard": _prune(st.guard, extents)}
    if isinstance(st, ir.Copy):
        changes["mask"] = _prune(st.mask, extents)
    return dataclasses.replace(st, **changes)


def prove_guards(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every guard pair that the launch bounds and loop extents prove removed (the kernel
    computes the same values: a removed pair held for every thread of every block)."""
    gx, gy = kernel.grid
    extents = {ir.TID: Var("tid", kernel.threads), ir.BX: Var("bx", gx), ir.BY: Var("by", gy)}
    return dataclasses.replace(kernel, body=tuple(_statement(st, extents) for st in kernel.body))
