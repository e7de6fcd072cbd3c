"""The strict -> common -> free solver (``docs/reference.md#solver-modes``).

0. Fragments no op touches become fully replicated; annotations enter the strict map.
1. kStrict: every op once.
2. kCommon: a BFS worklist; an op that changes a buffer's layout re-queues the buffer's other users
   (to the front when they touch a buffer with a known layout, as TileLang's ``EnqueueWithPriority``).
3. kFree: per connected component (union-find over the fragment buffers the ops share), try every op
   as the root (run it free and finish the queue, then every other op in order the same way), score
   with the cost model and keep the cheapest (ties: the earliest root in :func:`canonical_order`,
   TileLang's earliest root made independent of how independent ops are ordered).  When no attempt
   lays every fragment out because only fills (or transposes) touch it (TileLang fails there), the
   attempts are repeated with fills planning layouts like loops.  Beyond TileLang, an
   attempt may read a fragment through a converted view (:mod:`.conversions`): models that price
   conversions weigh them against re-rooting; the others convert only when every plain attempt
   conflicts.  Free mode lives in :mod:`.free`; it skips the roots :mod:`.settle` proves would end
   where the first attempt did (the same result, ``O(n)`` rule runs for a component of ``n`` ops).
4. Aliases of one storage get the layout, rescaled by the element-width ratio.
5. Every register fragment is checked before it leaves the solver (:mod:`.soundness`): the whole buffer,
   threads of the block, one element per (thread, register) slot; a violation is an internal error.
6. A conflict is explained by the minimal set of constraints (ops and annotations) that cannot hold
   together, found by deletion (removing any one of them makes the rest satisfiable).

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (4,), "float32")
>>> sorted(infer_layouts(p).layout_map)
['a']
>>> import layoutkit as lk
>>> p = Program(threads=128)
>>> A = p.alloc_shared("A", (64, 32), "float16"); B = p.alloc_shared("B", (32, 64), "float16")
>>> C = p.alloc_fragment("C", (64, 64), "float32")
>>> _ = p.clear(C); _ = p.gemm(A, B, C, policy="square"); _ = p.gemm(A, B, C, policy="fullrow")
>>> try:
...     _ = infer_layouts(p)
... except lk.LayoutConflictError as e:
...     print(e.buffer, e.constraints)
C ('gemm#1', 'gemm#2')
"""

from __future__ import annotations

import json
from collections import Counter, deque

from ..caches import clear_all
from ..cost import get_cost_model
from ..errors import LayoutConflictError, LayoutError, ShapeError
from ..fragment.fragment import make_fully_replicated_fragment
from ..scopes import FRAGMENT, REDUCER
from .free import free_component
from .guards import texts as guard_texts
from .program import Program
from .reducers import reservations, seed_wide
from .result import InferenceResult, NameKeyed
from .rules import COMMON, STRICT, Conflict
from .serialize import op_dict
from .soundness import check_solved
from .state import Context, alias_layout, bfs, run
from .target import check_scopes, get_target


def thread_range(program) -> tuple[int, int]:
    """``(min, extent)`` of the threads running the tile ops, as the program's target says
    (:meth:`~layoutkit.infer.target.Target.thread_range`; NVIDIA sm_90 warp specialisation puts the
    consumers after a producer warp group).

    >>> from layoutkit.infer import programs
    >>> thread_range(programs.gemm(threads=256, target="sm_90")), thread_range(programs.gemm(threads=256))
    ((128, 256), (0, 256))
    """
    return get_target(program.target).thread_range(program)


def _users(ops) -> dict[str, list]:
    users: dict[str, list] = {}
    for op in ops:
        for b in op.buffers:
            users.setdefault(b, []).append(op)
    return users


def _components(ops, program) -> list[list]:
    """Connected components of ops linked by the fragment buffers they share (views of one storage
    count as one buffer), as TileLang's free mode groups them; shared and global buffers link none."""
    parent = list(range(len(ops)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, int] = {}
    for k, op in enumerate(ops):
        for b in op.buffers:
            buf = program.buffers[b]
            if buf.scope not in (FRAGMENT, REDUCER):
                continue
            key = buf.alias_of or b
            if key in owner:
                parent[find(k)] = find(owner[key])
            else:
                owner[key] = k
    groups: dict[int, list] = {}
    for k, op in enumerate(ops):
        groups.setdefault(find(k), []).append(op)
    return list(groups.values())


def canonical_order(ops) -> dict[int, tuple]:
    """A sort key per op uid: its depth in the order ops sharing a buffer must keep (1 + the deepest
    earlier op touching one of its buffers), then its content.  Free mode tries roots in this order
    and keeps the first of equally cheap attempts, as TileLang keeps the earliest root; unlike
    program order, the key does not change when independent ops are permuted."""
    depth = _depths(ops)
    return {op.uid: (depth[op.uid], _content(op)) for op in ops}


def _depths(ops) -> dict[int, int]:
    """The first part of :func:`canonical_order`'s key: op uid -> depth."""
    depth: dict[str, int] = {}
    out = {}
    for op in ops:
        d = 1 + max((depth[b] for b in op.buffers if b in depth), default=-1)
        for b in op.buffers:
            depth[b] = d
        out[op.uid] = d
    return out


def _content(op) -> str:
    d = op_dict(op)
    d.pop("uid")
    return json.dumps(d, sort_keys=True, default=str)


def _unsolved(ctx: Context, comp) -> bool:
    """Free mode still has work: a fragment without a layout, or a loop without a loop layout."""
    for op in comp:
        if op.loop is not None and op.name not in ctx.loops:
            return True
        if any(ctx.needs_layout(b) and b not in ctx.layouts for b in op.buffers):
            return True
    return False


def solve(program, ops=None, annotations=None, cost_model="register-count", counts: Counter | None = None) -> Context:
    """Run the three levels on ``ops`` (default: all) with ``annotations`` (default: the program's);
    ``counts`` (default: a fresh one) receives the solve's counts (``"rule runs"``), also when it raises."""
    model = get_cost_model(cost_model)
    ops = list(program.ops if ops is None else ops)
    annotations = program.annotations if annotations is None else annotations
    ctx = Context(program, thread_range(program))
    if counts is not None:
        ctx.counts = counts
    touched = {b for op in ops for b in op.buffers}
    for name, buf in program.buffers.items():
        if buf.scope == FRAGMENT and name not in touched and buf.alias_of is None:
            ctx._set(name, make_fully_replicated_fragment(buf.shape, ctx.rng[1]).bind_thread_range(*ctx.rng),
                     "floating", STRICT, "floating", "set")
    for name, lay in annotations.items():
        ctx._set(name, lay, "annotate_layout", STRICT, "annotation", "set")
        ctx.strict.add(name)
    seed_wide(ctx, ops)
    ctx.reserved = reservations(program, ops, annotations, ctx.rng)
    users = _users(ops)
    everything = {op.uid for op in ops}
    queue: deque = deque()
    queued: set = set()
    for op in ops:
        run(ctx, op, STRICT, everything, users, queue, queued)
    bfs(ctx, ops, COMMON, everything, users)
    depth = _depths(ops)
    for comp in _components(ops, program):
        if not _unsolved(ctx, comp):
            continue
        if len(comp) > 1:  # the order of canonical_order; an op's content is only needed to sort
            comp = sorted(comp, key=lambda op: (depth[op.uid], _content(op)))
        free_component(ctx, comp, model, users)
    _aliases(ctx)
    check_solved(program, ctx.layouts, ctx.rng[1])
    return ctx


def _aliases(ctx: Context) -> None:
    """Views of one storage that no op reached: copy the layout of a laid-out view (rescaled)."""
    for name, buf in ctx.program.buffers.items():
        root = buf.alias_of
        if root is None:
            continue
        src, dst = (root, name) if root in ctx.layouts else (name, root)
        if src not in ctx.layouts or dst in ctx.layouts:
            continue
        ctx._set(dst, alias_layout(ctx, src, dst, ctx.layouts[src]), f"alias of {src}", STRICT, "alias", "copied")


def clear_caches() -> None:
    """Forget the memoised rule and cost results (layouts are immutable, so the caches only save time):
    every cache registered with :func:`layoutkit.caches.memoized`."""
    clear_all()


def infer_layouts(program, cost_model="register-count", *, explain_conflicts: bool = True) -> InferenceResult:
    """Infer a layout for every buffer and loop of ``program`` (see the module doc).  A conflict raises
    :class:`~layoutkit.errors.LayoutConflictError` with a minimal set of constraints; a buffer in a scope the
    program's target does not have (a program re-targeted after it was built),
    :class:`~layoutkit.errors.ScopeError` naming it (:func:`~.target.check_scopes`)."""
    if not isinstance(program, Program):
        raise ShapeError(f"infer_layouts: expected a layoutkit.infer.Program; found {type(program).__name__} "
                         f"{program!r:.80}")
    check_scopes(program, "infer_layouts")
    try:
        ctx = solve(program, cost_model=cost_model)
    except Conflict as err:
        if not explain_conflicts:
            raise LayoutConflictError(str(err)) from None
        raise explain(program, err, cost_model) from None
    return InferenceResult(NameKeyed(ctx.layouts), NameKeyed(ctx.loops), NameKeyed(guard_texts(ctx.predicates)),
                           dict(ctx.derivations), tuple(ctx.conversions), NameKeyed(ctx.predicates))


# ---- conflict explanations -----------------------------------------------------------------------
MAX_CONSTRAINTS = 200
"""Constraints (ops and annotations) past which a conflict's constraints are reported unminimised."""
EXPLAIN_WORK = 20_000
"""Work the deletion search of :func:`minimal_constraints` may spend over all its re-solves, counted as
each re-solve's rule runs plus its ops (a re-solve that conflicts at once still sets every op up); past it
the search stops and the constraints it kept, which still conflict, are reported as not minimised."""


class InferenceConflictError(LayoutConflictError):
    """A conflict with ``buffer``, the ``ops`` and ``layouts`` that disagree and ``constraints``: a
    minimal unsatisfiable subset (op names and ``annotate_layout(buf)``)."""

    def __init__(self, message: str, buffer: str, ops, layouts, constraints):
        super().__init__(message)
        self.buffer = buffer
        self.ops = tuple(ops)
        self.layouts = tuple(layouts)
        self.constraints = tuple(constraints)


def _fails(program, ops, annotations, cost_model, counts: Counter) -> bool:
    try:
        solve(program, ops, annotations, cost_model, counts)
    except Conflict:
        return True
    except LayoutError:
        return False
    return False


def minimal_constraints(program, cost_model="register-count") -> tuple[str, ...]:
    """Deletion-based minimisation over ops and annotations (each removal re-solves): a minimal set of
    constraints that conflict, within :data:`MAX_CONSTRAINTS` and :data:`EXPLAIN_WORK` (past them, a
    conflicting set that may not be minimal; :func:`explain` says so)."""
    return conflicting_constraints(program, cost_model)[0]


def conflicting_constraints(program, cost_model="register-count") -> tuple[tuple[str, ...], bool]:
    """``(constraints, minimal)``: the constraints :func:`minimal_constraints` keeps, and whether the
    deletion search finished (False past :data:`MAX_CONSTRAINTS` or :data:`EXPLAIN_WORK`)."""
    items = [("op", op) for op in program.ops] + [("ann", k) for k in program.annotations]
    if len(items) > MAX_CONSTRAINTS:
        return tuple(_label(i) for i in items), False
    keep = list(items)
    counts: Counter = Counter()
    k = 0
    while k < len(keep):
        if counts["rule runs"] + counts["ops"] > EXPLAIN_WORK:
            return tuple(_label(i) for i in keep), False
        trial = keep[:k] + keep[k + 1:]
        ops = [x for t, x in trial if t == "op"]
        ann = {x: program.annotations[x] for t, x in trial if t == "ann"}
        counts["ops"] += len(ops)
        if _fails(program, ops, ann, cost_model, counts):
            keep = trial
        else:
            k += 1
    return tuple(_label(i) for i in keep), True


def _label(item) -> str:
    kind, x = item
    return x.name if kind == "op" else f"annotate_layout({x})"


def explain(program, err, cost_model="register-count") -> InferenceConflictError:
    constraints, minimal = conflicting_constraints(program, cost_model)
    kind = "minimal conflicting constraints" if minimal else (
        f"conflicting constraints (not minimised: past {MAX_CONSTRAINTS} constraints or {EXPLAIN_WORK} rule runs "
        "and ops of re-solving (EXPLAIN_WORK), the deletion search stops)")
    msg = f"{err}\n  {kind}: {', '.join(constraints)}"
    return InferenceConflictError(msg, err.buffer, err.ops, err.layouts, constraints)
