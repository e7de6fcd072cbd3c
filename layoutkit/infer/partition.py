"""Loop partitioning (TileLang's ``PlanLoopPartition``): deal a loop's elements to the threads, and the guard
of the slots a plan leaves empty.
"""

from __future__ import annotations

import math

from ..algebra.nodes import Const, Expr, Var, add, floordiv, floormod, make_sum, scale
from ..algebra.shapes import placeholder
from ..caches import memoized
from ..fragment.fragment import Fragment, rep_var
from .guards import INDEX, THREAD, Guard


@memoized(maxsize=4096)
def plan_partition(loop, vec: int, threads: int, has_fragment: bool, rng,
                   whole_rows: bool = False) -> tuple[Fragment, Guard | None]:
    """Free mode (TileLang's ``PlanLoopPartition``): fuse the loop row-major, cut it into vectors of
    ``vec`` and deal them round-robin to the threads; a loop over fragments with fewer vectors than
    threads is replicated ``threads // used`` times (every thread gets work).  Returns the layout and
    a guard predicate over ``_thread`` / ``_index`` when the domain does not fill every slot.

    Beyond TileLang: a fragment loop whose size exceeds the thread count without being a multiple of
    it (TileLang finds no layout: the fused split is not exact, see :func:`deals_rows`) deals whole rows
    (the last dim stays in one thread) to the most threads that divide the row count and guards the idle
    threads; ``whole_rows`` (fills nothing else lays out, which TileLang cannot infer at all) also deals
    whole rows when rows would straddle thread vectors.  The loop rule asks for such a plan only in the
    engine's fallback attempts, after every TileLang-like attempt failed.

    >>> f, guard = plan_partition((8, 8), 1, 128, True, (0, 128))
    >>> print(f.forward_thread, f.replicate_size, guard, sep=" | ")
    _rep * 64 + _i * 8 + _j | 2 | None
    >>> f, guard = plan_partition((100, 7), 1, 128, True, (0, 128))
    >>> print(f.forward_thread, f.forward_index[0], guard, sep=" | ")
    _i | _j | _thread < 100
    >>> f, guard = plan_partition((200, 7), 1, 128, True, (0, 128))
    >>> print(f.forward_thread, f.forward_index[0], guard, sep=" | ")
    _i % 100 | _i // 100 * 7 + _j | _thread < 100
    """
    total = math.prod(loop)
    variables = [placeholder(d, n) for d, n in enumerate(loop)]
    used = _row_threads(loop, vec, threads, has_fragment, whole_rows)
    if used is not None:
        inner = loop[-1] if len(loop) > 1 else 1
        o_flat = _flat(variables[:-1], loop[:-1]) if len(loop) > 1 else variables[0]
        i_flat = variables[-1] if len(loop) > 1 else Const(0)
        thread = floormod(o_flat, Const(used))
        index = floordiv(o_flat, Const(used)) * inner + i_flat
        guard = None if used == threads else Guard.less(Var(THREAD, threads), used)
        return Fragment.from_exprs(loop, (index,), thread, 1, rng), guard
    flat = _flat(variables, loop)
    thread = floormod(floordiv(flat, Const(vec)), Const(threads))
    # divided by the vector first, as TileLang does: over a fused nest whose inner extent the vector
    # divides (192 by 8) that keeps one split of the fused index, which TVM's iterator analysis needs
    index = floordiv(floordiv(flat, Const(vec)), Const(threads)) * vec + floormod(flat, Const(vec))
    extent = _plan_thread_extent(total, vec, threads)
    replicas = threads // extent if has_fragment else 1
    if replicas > 1:
        # ``Fragment.replicate``'s thread map, built directly (the extent is known, no table needed)
        thread = add(thread, scale(floordiv(rep_var(replicas), Const(1)), extent))
    guard = None
    if not has_fragment and total % (threads * vec):
        # printed unsimplified, as TileLang prints it (``_index // 1 * ...``); the condition is the same sum
        t, ix = Var(THREAD, threads), Var(INDEX, max(1, -(-total // (vec * threads)) * vec))
        cond = add(add(scale(floordiv(ix, Const(vec)), vec * threads), scale(t, vec)), floormod(ix, Const(vec)))
        text = f"_index // {vec} * {vec * threads} + _thread * {vec} + _index % {vec} < {total}"
        guard = Guard.less(cond, total, text)
    return Fragment.from_exprs(loop, (index,), thread, replicas, rng), guard


def deals_rows(loop, vec: int, threads: int, has_fragment: bool, whole_rows: bool = False) -> bool:
    """Whether :func:`plan_partition` deals whole rows (a plan TileLang does not have) rather than
    TileLang's round-robin plan: a fragment loop of more points than threads, not a multiple of them
    (TileLang's attempt fails there: "no available layout found" when no other root lays the
    fragments out), or, with ``whole_rows``, rows that straddle thread vectors.

    >>> deals_rows((16, 14), 1, 128, True), deals_rows((24, 16), 1, 128, True), deals_rows((16, 14), 1, 128, False)
    (True, False, False)
    >>> deals_rows((8, 8), 1, 128, True)
    False
    """
    return _row_threads(loop, vec, threads, has_fragment, whole_rows) is not None


def _row_threads(loop, vec: int, threads: int, has_fragment: bool, whole_rows: bool) -> int | None:
    """The threads :func:`plan_partition` deals whole rows to, or None for the round-robin plan."""
    total = math.prod(loop)
    span = vec * threads
    straddles = whole_rows and len(loop) > 1 and loop[-1] % span and span % loop[-1]
    ragged = total > threads and total % threads
    if not (has_fragment and (ragged or straddles or (whole_rows and total % threads))):
        return None
    outer = total // (loop[-1] if len(loop) > 1 else 1)
    # the most threads that split the rows evenly: every used thread holds the same rows, so no
    # register slot stays empty and the layout lowers as an ordinary (exact) partition
    return max(d for d in range(1, min(outer, threads) + 1) if outer % d == 0)


def _plan_thread_extent(total: int, vec: int, threads: int) -> int:
    """``thread_extent`` of the round-robin plan (thread ``flat // vec % threads``) of ``total`` points.

    >>> _plan_thread_extent(4096, 8, 128), _plan_thread_extent(64, 1, 128), _plan_thread_extent(60, 8, 128)
    (128, 64, 8)
    """
    return threads if total >= vec * threads else (total - 1) // vec + 1


def plan_slot_guard(loop, vec: int, threads: int, has_fragment: bool, whole_rows: bool = False) -> Guard | None:
    """:func:`slot_guard` of :func:`plan_partition`'s layout, from the plan's arithmetic (no tables):
    the plan deals vectors round-robin, so only its extent and its last, possibly short, round
    decide whether slots stay empty.

    >>> plan_slot_guard((8, 8), 1, 128, True), str(plan_slot_guard((8, 12), 8, 128, True))
    (None, '_thread < 120')
    >>> print(plan_slot_guard((100,), 8, 4, True))
    slot (_thread, _index) holds an element of [100]

    It agrees with tabulating the planned layout:

    >>> cases = [(loop, v, t, h, w) for loop in ((8, 8), (100, 7), (96, 8), (3, 5), (130,), (24, 40))
    ...          for v in (1, 2, 8) for t in (32, 128) for h in (False, True) for w in (False, True)]
    >>> all(plan_slot_guard(*c) == slot_guard(plan_partition(*c[:4], (0, c[2]), c[4])[0], c[2]) for c in cases)
    True
    """
    total = math.prod(loop)
    used = _row_threads(loop, vec, threads, has_fragment, whole_rows)
    if used is not None:  # whole rows: every used thread holds the same rows, no register slot empty
        return None if used == threads else Guard.less(Var(THREAD, threads), used)
    extent = _plan_thread_extent(total, vec, threads)
    replicas = threads // extent if has_fragment else 1
    if extent * replicas < threads:
        return Guard.less(Var(THREAD, threads), extent * replicas)
    # registers: the bounding box of ``flat // (vec * threads) * vec + flat % vec``
    last = (total - 1) // (vec * threads)
    local = last * vec + min(vec, total - last * vec * threads)
    if extent * replicas * local > total * replicas:
        return _slot_note(loop)
    return None


def partition_width(loop, width: int, threads: int, has_fragment: bool) -> int:
    """The vector width the partition uses (``ComputePlanCandidate``): with fragments, halve
    ``width`` until the loop is a whole number of ``threads * width`` rounds; without, the width of
    the least padding (ties: the widest).

    >>> partition_width((64, 64), 8, 128, True), partition_width((8, 8), 8, 128, True)
    (8, 1)
    >>> partition_width((100, 7), 1, 128, False), partition_width((96, 8), 8, 128, False)
    (1, 2)
    """
    total = math.prod(loop)
    if has_fragment:
        while width > 1 and total % (threads * width):
            width //= 2
        return width
    best, best_pad = width, None
    w = width
    while w >= 1:
        pad = -(-total // (threads * w)) * threads * w - total
        if best_pad is None or pad < best_pad:
            best, best_pad = w, pad
        w //= 2
    return best


def slot_guard(layout: Fragment, threads: int) -> Guard | None:
    """A guard when the layout leaves (thread, register) slots empty: idle threads or a ragged last
    register round."""
    if layout.thread_extent < threads:
        return Guard.less(Var(THREAD, threads), layout.thread_extent)
    if layout.thread_extent * layout.local_size > layout.size * layout.replicate_size:
        return _slot_note(layout.input_shape)
    return None


def _slot_note(loop) -> Guard:
    """Which slots of a ragged round hold an element is a property of the layout's table, not one comparison."""
    return Guard.note(f"slot (_thread, _index) holds an element of {[int(n) for n in loop]}")


def _flat(variables, shape) -> Expr:
    """The row-major flattening ``sum(v_d * stride_d)``, canonicalised once (one ``make_sum`` of all
    terms, not one per addition).

    >>> from layoutkit.algebra.layout import placeholder
    >>> print(_flat([placeholder(0, 4), placeholder(1, 1), placeholder(2, 8)], (4, 1, 8)))
    _i * 8 + _k
    """
    return make_sum({v: math.prod(shape[d + 1:]) for d, v in enumerate(variables)})
