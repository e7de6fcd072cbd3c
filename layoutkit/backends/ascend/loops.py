"""Folding unrolled Ascend statement lists back into loops (:class:`~.ir.For`).

The lowering walks a program tile by tile and K step by K step; here runs of statements that repeat, equal
up to offsets moving by the same amount each time, become loops whose offsets are affine in the loop
variables (:class:`~.ir.Offset`): K steps (:func:`roll_k_loops`), then tiles and groups of tiles
(:func:`roll_tiles`, for statement lists written by hand; the lowering now folds tiles with
:mod:`.distribute`).  The loops run exactly the statements they replace, in the same order, so the
executor's results (and pipe-order checks) are those of the unrolled kernel.
"""

from __future__ import annotations

from dataclasses import replace

from ...targets.ascend import Nd2NzParams  # noqa: F401  (doctest)
from . import ir

__all__ = ["roll_k_loops", "roll_tiles", "MAX_PERIOD", "TILE_ENDS"]


def roll_k_loops(body: list) -> list:
    """Fold runs of consecutive K steps (the statements up to and including each ``Mmad``) that differ only by
    offsets moving evenly from step to step into :class:`~.ir.For` loops (variable ``kt0``; K loops are
    never nested, so they share the name).  The first K step of a tile (``cmatrixInitVal``) and tail steps
    (other ``Nd2NzParams``) stay outside; double-buffered K steps alternate their buffers, so there a loop
    iteration is a pair of steps.

    >>> m = ir.Mmad("c", "a", "b", ir.MmadParams(16, 16, 16, False), label="g")
    >>> ld = [ir.LoadData("a", 0, "a1", 0, ir.LoadData2DParams(0, 1, 1), label="x")]
    >>> steps = [ir.CopyGmToL1("a1", 0, "A", 16 * t, Nd2NzParams(1, 16, 16, 0, 64, 16, 1, 0), "c") for t in range(3)]
    >>> out = roll_k_loops([x for t in range(3) for x in [steps[t], *ld, m]])
    >>> loop, = out
    >>> loop.var, loop.extent, loop.body[0].src_offset
    ('kt0', 3, Offset(base=0, stride=16, var='kt0', terms=()))
    """
    segs, cur = [], []
    for s in body:
        cur.append(s)
        if isinstance(s, (ir.Mmad, ir.Fixpipe)):
            segs.append(cur)
            cur = []
    segs += [cur] if cur else []
    # period 2: double-buffered K steps alternate their buffers, so pairs of steps repeat
    units = _roll_units(segs, "kt0", 2, ok=lambda seg: isinstance(seg[-1], ir.Mmad))
    return [s for u in units for s in u]


TILE_ENDS = (ir.Fixpipe, ir.CopyUbToGm)
MAX_PERIOD = 4


def roll_tiles(body: list, levels: tuple[tuple[str, int], ...] = (("tj", 1), ("ti", MAX_PERIOD))) -> list:
    """Fold repeated tiles back into loops: the body is cut into tiles (each ending at a store to GM, with the
    cross-core signal right after it), then, once per ``(loop variable, longest period)`` of ``levels`` (inner
    first), runs of repeating groups of up to that many units whose statements are equal up to offsets that
    move evenly become one :class:`~.ir.For` (the inner level takes single tiles: a row of tiles; the
    outer one groups such as "a row loop and its tail tile").  Tiles that differ (tails, the first tile's extra flags)
    stay outside, so the result runs exactly the statements of ``body`` in order.

    >>> fix = [ir.Fixpipe("C", 64 * t, "c", 0, ir.FixpipeParamsV220(64, 64, 64, 256), f"copy#{t}") for t in range(4)]
    >>> loop, = roll_tiles(fix)
    >>> loop.var, loop.extent, loop.body[0].dst_offset
    ('tj', 4, Offset(base=0, stride=64, var='tj', terms=()))
    """
    units, cur, closed = [], [], False
    for s in body:
        if closed and not isinstance(s, ir.CrossCoreSetFlag):
            units.append(cur)
            cur, closed = [], False
        cur.append(s)
        closed = closed or isinstance(s, TILE_ENDS)
    units += [cur] if cur else []
    for var, longest in levels:
        units = _roll_units(units, var, longest)
    return [s for u in units for s in u]


def _roll_units(units: list[list], var: str, longest: int, ok=lambda unit: True) -> list[list]:
    """Runs of ``reps >= 2`` repeating groups of ``period <= longest`` units (all satisfying ``ok``) folded
    into one loop unit each; the longest cover wins, then the shortest period."""
    out: list[list] = []
    i = 0
    while i < len(units):
        best = None  # (covered units, period, repeats, delta)
        for period in range(1, longest + 1):
            if i + 2 * period > len(units):
                break
            reps, delta = 1, None
            while i + (reps + 1) * period <= len(units) and all(ok(u) for u in units[i:i + (reps + 1) * period]):
                prev = [s for u in units[i + (reps - 1) * period:i + reps * period] for s in u]
                nxt = [s for u in units[i + reps * period:i + (reps + 1) * period] for s in u]
                d = _step_delta(prev, nxt)
                if d is None or (delta is not None and d != delta):
                    break
                delta, reps = d, reps + 1
            if reps >= 2 and (best is None or reps * period > best[0]):
                best = (reps * period, period, reps, delta)
        if best is None:
            out.append(units[i])
            i += 1
            continue
        _, period, reps, delta = best
        groups = [[s for u in units[i + r * period:i + (r + 1) * period] for s in u] for r in range(reps)]
        out.append([_loop(groups, delta, var)])
        i += reps * period
    return out


# ---- offsets of a statement (loop bodies included), in a fixed order --------------------------------

_OFFSETS = ("src_offset", "dst_offset")


def _slots(s) -> list:
    """Every offset of ``s`` (for a loop, those of its body) in a fixed order."""
    if isinstance(s, ir.For):
        return [v for x in s.body for v in _slots(x)]
    out = [getattr(s, f) for f in _OFFSETS if hasattr(s, f)]
    if isinstance(s, ir.VecOp):
        out += [o for _, o in s.srcs]
    return out


def _with_slots(s, values: list, label=None):
    """``s`` with its offsets replaced by ``values`` (consumed in :func:`_slots` order) and, when ``label`` is
    given, its labels (and those of a loop body) mapped through it."""
    if isinstance(s, ir.For):
        return replace(s, body=tuple(_with_slots(x, values, label) for x in s.body))
    changes = {f: values.pop(0) for f in _OFFSETS if hasattr(s, f)}
    if isinstance(s, ir.VecOp):
        changes["srcs"] = tuple((b, values.pop(0)) for b, _ in s.srcs)
    if label is not None and hasattr(s, "label"):
        changes["label"] = label(s.label)
    return replace(s, **changes) if changes else s


def _bare(s):
    """``s`` without what may change from one step to the next (offset bases, labels)."""
    return _with_slots(s, [ir.offset(0, ir.linear(v)[1]) for v in _slots(s)], label=lambda _: "")


def _step_delta(a: list, b: list) -> tuple | None:
    """How far every offset moves from statements ``a`` to ``b`` (``None`` when they differ otherwise)."""
    if len(a) != len(b) or any(_bare(x) != _bare(y) for x, y in zip(a, b)):
        return None
    return tuple(ir.linear(v)[0] - ir.linear(u)[0] for x, y in zip(a, b) for u, v in zip(_slots(x), _slots(y)))


def _loop(segs: list[list], delta: tuple, var: str) -> ir.For:
    """The loop over ``segs`` (statement lists equal up to offsets moving by ``delta`` per step)."""
    values = [ir.offset(base, terms + ((var, d),)) for (base, terms), d in
              zip((ir.linear(v) for x in segs[0] for v in _slots(x)), delta)]
    first, last = segs[0], segs[-1]
    body = []
    for j, s in enumerate(first):
        end = getattr(last[j], "label", "")
        body.append(_with_slots(s, values, label=(lambda t, end=end: f"{t}..{end}" if t and end and t != end
                                                   and ".." not in t else t)))
    return ir.For(var, len(segs), tuple(body))
