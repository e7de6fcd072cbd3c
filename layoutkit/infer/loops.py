"""Target-independent rules: parallel loops (also copies, fills, transposes, tile atomic adds, which
lower to one) and reductions, after TileLang's ``ParallelOp`` / ``ReduceOp``
(``docs/reference.md#parallel-loops-and-reductions``).

Free mode plans a loop as TileLang's ``PlanLoopPartition`` does, with the vector width of its
contiguity analysis (:mod:`.vectorize`).  Fills and transposes only follow layouts others set, as in
TileLang; a fragment nothing else lays out (TileLang gives up) is planned by its fill as a last resort:

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (64, 64), "float16")
>>> _ = p.fill(a, 1.0)
>>> print(infer_layouts(p).layout_map["a"].forward_thread)
_i % 16 * 8 + _j // 8
"""

from __future__ import annotations

import math

import numpy as np

from ..algebra.nodes import Const, Expr, Var, floordiv, linear, make_split, substitute
from ..algebra.shapes import placeholder
from ..caches import memoized
from ..cost.spill import thread_indexed
from ..dtypes import element_bits
from ..errors import LayoutError, UnsupportedError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment, rep_var
from ..scopes import FRAGMENT, GLOBAL, LOCAL, is_shared
from .completion import invert_completion
from .guards import THREAD, Guard, Predicate
from .inner import plan_extent, vector_domain
from .partition import deals_rows, partition_width, plan_partition, plan_slot_guard, slot_guard  # noqa: F401  (re-exported)
from .reducers import update_partials
from .rules import EMPTY, FREE, STRICT, RuleConflict, RuleResult
from .vectorize import VectorAccess, loop_vector_width

# ---- fragment helpers ------------------------------------------------------------------------------

def bind(frag: Fragment, rng: tuple[int, int]) -> Fragment:
    """``frag`` bound to the thread range ``rng``; a fragment already bound there is returned as is
    (an equal rebuild would drop the tables it has already evaluated)."""
    if frag.thread_range == tuple(rng):
        return frag
    return frag.bind_thread_range(*rng)


def _is_identity(indices, loop) -> bool:
    return len(indices) == len(loop) and all(e == placeholder(d, n) for d, (e, n) in enumerate(zip(indices, loop)))


def _var_offsets(indices) -> list[tuple[Var, int] | None]:
    """Each index as ``(loop var, offset)`` when it is one loop var plus a constant, else None."""
    out = []
    for e in indices:
        terms, c = linear(e)
        if len(terms) == 1:
            (atom, coeff), = terms.items()
            out.append((atom, c) if isinstance(atom, Var) and coeff == 1 else None)
        else:
            out.append(None)
    return out


@memoized(maxsize=4096)
def loop_from_buffer(src: Fragment, indices, loop, rng) -> Fragment:
    """The loop layout that follows ``src`` read/written at ``indices`` (``ComputeLoopLayoutFromBuffer``)."""
    if _is_identity(indices, loop) and src.input_shape == tuple(loop):
        return bind(src, rng)
    mapping = {v: e for v, e in zip(src.forward_vars, indices)}
    thread = substitute(src.forward_thread, mapping)
    return Fragment.from_exprs(tuple(loop), None, thread, src.replicate_size, rng)


@memoized(maxsize=4096)
def complete_buffer(loop_layout: Fragment, indices, shape, loop, is_write: bool, rng) -> Fragment:
    """The layout of a buffer the loop touches at ``indices`` (``CompleteBufferFragment``): loop vars
    the indices do not use become replication."""
    if _is_identity(indices, loop) and tuple(shape) == tuple(loop):
        return loop_layout
    views = _var_offsets(indices)
    loop_vars = [placeholder(d, n) for d, n in enumerate(loop)]
    used = [v[0] for v in views if v is not None]
    if any(v is None for v in views) and not all(isinstance(e, Const) or v is not None
                                                 for e, v in zip(indices, views)):
        return bind(invert_completion(loop_layout, indices, shape, loop, is_write), rng)
    if len(set(used)) != len(used):
        raise UnsupportedError(f"access {tuple(str(e) for e in indices)} uses a loop var twice")
    unused = [v for v in loop_vars if v not in used]
    U = math.prod(v.hi + 1 for v in unused)
    R = U * loop_layout.replicate_size
    rep = rep_var(R)
    mapping: dict[Expr, Expr] = {}
    for d, view in enumerate(views):
        if view is not None:
            var, off = view
            mapping[var] = placeholder(d, shape[d]) - off if off else placeholder(d, shape[d])
    stride = 1
    for v in reversed(unused):
        n = v.hi + 1
        mapping[v] = make_split(rep, stride, stride * n) if stride * n < R else floordiv(rep, Const(stride))
        stride *= n
    if loop_layout.replicate_size > 1:
        mapping[loop_layout.rep_var] = floordiv(rep, Const(U))
    thread = substitute(loop_layout.forward_thread, mapping)
    frag = Fragment.from_exprs(tuple(shape), None, thread, R).condense_rep_var()
    if not is_write and not frag.prove_injective():
        return make_fully_replicated_fragment(shape, loop_layout.thread_extent)
    return bind(frag, rng)


# ---- containment checks (numpy) -----------------------------------------------------------------

def _owner_sets(frag: Fragment) -> np.ndarray:
    return frag.thread_table().reshape(frag.replicate_size, -1)


def _gather(buf_frag: Fragment, indices, loop) -> np.ndarray:
    """Thread tables of ``buf_frag`` at the loop points' indices: ``[R_b, N_loop]``."""
    from ..algebra.evaluate import evaluate_columns

    cols = np.indices(loop).reshape(len(loop), -1)
    variables = tuple(placeholder(d, n) for d, n in enumerate(loop))
    idx = evaluate_columns(tuple(indices), variables, list(cols)).T
    flat = np.ravel_multi_index(tuple(idx), buf_frag.input_shape, mode="clip")
    return _owner_sets(buf_frag)[:, flat]


def _subset(small: np.ndarray, big: np.ndarray) -> bool:
    """Every column's set of threads in ``small`` lies in that column's set in ``big``."""
    if big.shape[0] == 1:
        return bool((small == big).all())
    if small.shape[0] * big.shape[0] <= 1024:
        ok = np.zeros(small.shape, dtype=bool)
        for row in big:
            ok |= small == row
        return bool(ok.all())
    width = int(max(small.max(initial=0), big.max(initial=0))) + 1
    x = np.arange(small.shape[1], dtype=np.int64)
    return bool(np.isin(small + x * width, (big + x * width).ravel()).all())


@memoized(maxsize=4096)
def has_inverse(frag: Fragment) -> bool:
    """Whether TileLang can invert ``frag`` where it proves a containment: ``ProveFragmentContains``
    returns at once for a fully replicated containing fragment, and otherwise inverts
    ``(coords, replica) -> (index, thread)``, which must be a bijection (``DetectIterMap`` at the
    bijective level).  Two elements (or replicas) sharing one thread register make that impossible:
    TileLang throws, and free mode discards the attempt.  Such fragments come from reductions whose
    source thread map mixes the reduced dimension with a kept one, e.g. ``(_j * 24 + _i) % 64`` over
    ``(24, 40)`` reduced along ``j``: the replicas wrap around the 64 threads onto one register.

    >>> has_inverse(Fragment([24], forward_thread_fn=lambda i, rep: (rep * 24 + i) % 64, replicate=40))
    False
    >>> has_inverse(Fragment([24], forward_thread_fn=lambda i, rep: rep * 24 + i, replicate=2))
    True
    """
    return frag.is_fully_replicated() or bool(frag.prove_injective())


def require_inverse(frag: Fragment, op: str, buffer: str | None, role: str) -> None:
    """Raise :class:`RuleConflict` where TileLang's containment proof would fail to invert ``frag``
    (see :func:`has_inverse`)."""
    if not has_inverse(frag):
        raise RuleConflict(f"{op}: the {role} {frag.describe()} has no inverse, so TileLang cannot prove "
                           f"containment in it: {frag.prove_injective()}", op, buffer)


@memoized(maxsize=8192)
def loop_agrees(loop_layout: Fragment, buf_frag: Fragment, indices, loop, is_read: bool, is_write: bool) -> bool:
    """Reads: every loop thread finds the element; writes: the owner sets are equal."""
    # the symbolic test first: a loop following the fragment agrees without tabulating either
    if _is_identity(indices, loop) and (loop_layout is buf_frag or (
            loop_layout.input_shape == buf_frag.input_shape
            and loop_layout.forward_thread == buf_frag.forward_thread
            and loop_layout.replicate_size == buf_frag.replicate_size)):
        return True
    if buf_frag.is_fully_replicated() and not is_write:
        return True
    lt = _owner_sets(loop_layout)
    bt = _gather(buf_frag, indices, loop)
    if lt.shape[1] != bt.shape[1]:
        return False
    ok = _subset(lt, bt) if (is_read or is_write) else True
    if ok and is_write:
        ok = _subset(bt, lt)
    return ok


# ---- the loop rule ------------------------------------------------------------------------------

SILENT_KINDS = ("fill", "transpose", "atomic_max", "atomic_min")
"""Ops whose TileLang ``InferLayout`` proposes nothing (they only follow layouts others set)."""


def _merged_accesses(op, ctx):
    """Fragment accesses merged per buffer, in first-access order: ``name -> [indices, read, write]``."""
    out: dict[str, list] = {}
    for a in op.accesses:
        if not ctx.is_fragment(a.buffer):
            continue
        entry = out.setdefault(a.buffer, [a.indices, False, False])
        entry[2 if a.is_write else 1] = True
    return out


def loop_rule(op, ctx, level) -> RuleResult:
    """A parallel loop (or a copy, fill, transpose, atomic add lowered to one): its loop layout from a laid-out
    fragment it accesses, or (free level) a thread partition plan; the other fragments' layouts completed
    from it; the guard of idle slots and replicas."""
    if op.loop is None:
        return EMPTY
    loop = op.loop
    acc = _merged_accesses(op, ctx)
    if op.name in ctx.loops:
        if level == FREE:
            _validate(op, ctx, ctx.loops[op.name], acc)
        return EMPTY
    pinned = getattr(ctx.program, "loop_annotations", {}).get(op.name)
    if pinned is not None:  # TileLang takes an annotated loop layout first, at any level
        return _laid_out(op, ctx, pinned.bind_thread_range(*ctx.rng), acc, None)
    const = _constant_accesses(op, acc)
    if level == STRICT:
        res = {}
        for name, (indices, _r, _w) in acc.items():
            if name in ctx.layouts or name not in const:
                continue
            if any(e.value != 0 for e in indices):
                raise UnsupportedError(f"{op.name}: fragment {name} accessed at a constant non-zero index")
            res[name] = make_fully_replicated_fragment(ctx.shape(name), ctx.rng[1]).bind_thread_range(*ctx.rng)
        return RuleResult(res)
    if op.kind in SILENT_KINDS and not ctx.fallback and any(n not in ctx.layouts for n in acc):
        # TileLang's fill and transpose propose nothing: their fragments are laid out by other users
        # (a fragment only they touch is planned by them in the engine's fallback attempts)
        return EMPTY
    allow = not const or len(acc) > len(const)
    source = read_source = None
    source_is_write = False
    for name, (ix, _r, w) in acc.items():
        lay = ctx.layouts.get(name)
        if not isinstance(lay, Fragment):
            continue
        if w:
            source, source_is_write = name, True
        else:
            if read_source is None or len(ix) > len(acc[read_source][0]):
                read_source = name
            if lay.replicate_size == 1 and source is None:
                source = name
    guard = None
    if source is not None and (allow or source_is_write):
        _check_outer_source(op, ctx, source, acc[source][0])
        layout = loop_from_buffer(ctx.layouts[source], acc[source][0], loop, ctx.rng)
    elif level == FREE:
        threads = ctx.rng[1]
        width = _plan_width(op, ctx, loop, threads, bool(acc))
        if not ctx.fallback and deals_rows(loop, width, threads, bool(acc), op.kind == "fill"):
            # TileLang has no plan here (its fused split is not exact): this attempt fails, as TileLang's
            # does, so another root may lay the fragments out; only the fallback attempts deal rows
            raise RuleConflict(f"{op.name}: no partition of the {'x'.join(map(str, loop))} loop over "
                               f"{threads} threads (not a multiple of them)", op.name)
        plan, guard = plan_partition(loop, width, threads, bool(acc), ctx.rng, op.kind == "fill")
        # the plan's slot guard follows from its arithmetic (slot_guard would tabulate the layout)
        guard = guard or plan_slot_guard(loop, width, threads, bool(acc), op.kind == "fill")
        layout = plan
        if read_source is not None and allow:
            _check_outer_source(op, ctx, read_source, acc[read_source][0])
            cand = loop_from_buffer(ctx.layouts[read_source], acc[read_source][0], loop, ctx.rng)
            layout = choose_candidate(op, ctx, cand, plan, acc)
            if layout is cand:
                guard = None
    else:
        return EMPTY
    return _laid_out(op, ctx, layout, acc, guard)


def _laid_out(op, ctx, layout: Fragment, acc, guard: Guard | None) -> RuleResult:
    """The loop laid out as ``layout``: checked against the laid-out fragments, the others completed
    from it, guarded on idle slots and replicas."""
    _validate(op, ctx, layout, acc)
    res = {}
    for name, (ix, _r, w) in acc.items():
        if name not in ctx.layouts:
            res[name] = complete_buffer(layout, ix, ctx.shape(name), op.loop, w, ctx.rng)
    predicate = Predicate.of(guard or slot_guard(layout, ctx.rng[1]), replica_guard(op, ctx, layout))
    if op.args.get("updates"):  # each reducer update proposes the partial its loop induces
        res.update(update_partials(op, ctx, layout))
    return RuleResult(res, loop=layout, predicate=predicate)


def _plan_width(op, ctx, loop, threads: int, has_fragment: bool) -> int:
    """The vector width a free-level plan uses.  A loop whose outermost extent is a runtime value
    (``args["dynamic"]``: ``T.Parallel(T.min(n, 512))``, planned over its bound) is planned as TileLang
    plans the symbolic loop: no vectors when that dim is the innermost (its extent is not provably a
    multiple of any width), else the vectoriser's width as is (a symbolic size has no least padding).
    With inner loops (``args["inner"]``) the vectoriser plans along the innermost of them and the
    partition divides the size down the loops' chain of bodies (see :mod:`.inner`)."""
    full, indices = vector_domain(op)
    # gcd with 0 is the width itself: no cap
    vector = math.gcd(loop_vector_width(full, _vector_accesses(op, ctx, indices), _max_vector_bits(op, ctx)),
                      op.args.get("vector_cap") or 0)
    if op.args.get("dynamic"):
        return 1 if len(full) == 1 else vector
    return partition_width(plan_extent(op), vector, threads, has_fragment)


def replica_guard(op, ctx, layout: Fragment) -> Guard | None:
    """``BuildReplicationGuardsIfNeeded``: a replicated loop that touches shared or global memory and
    stores to no fragment runs its memory accesses on replica 0 only (one store per element).

    >>> from layoutkit.infer import Program, infer_layouts
    >>> p = Program(threads=128)
    >>> x = p.alloc_fragment("x", (64, 128), "float32"); r = p.alloc_fragment("r", (64,), "float32")
    >>> O = p.tensor("O", (64,), "float32")
    >>> _ = p.fill(x, 1.0); _ = p.reduce(x, r, dim=1)
    >>> store = p.parallel((64,), writes=[(O, lambda i: (i,))], reads=[(r, lambda i: (i,))])
    >>> infer_layouts(p).predicates[store.name]
    '_thread % 32 == 0'
    >>> infer_layouts(p).guards[store.name].holds(_thread=np.arange(4) * 16).tolist()
    [True, False, True, False]
    """
    if layout.replicate_size == 1 or not op.accesses:
        return None
    scopes = {a.buffer: ctx.buffer(a.buffer).scope for a in op.accesses}
    if not any(s == GLOBAL or is_shared(s) for s in scopes.values()):
        return None
    if any(a.is_write and scopes[a.buffer] == FRAGMENT for a in op.accesses):
        return None
    return _replica_zero(layout)


@memoized(maxsize=1024)
def _replica_zero(layout: Fragment) -> Guard:
    """``rep(_thread) == 0`` from the inverse layout (the replica a thread holds)."""
    try:
        inv = layout.inverse()
    except LayoutError:
        return Guard.note("replica 0 of the loop layout only")
    *index_vars, thread_var = inv.forward_vars
    mapping = {v: Const(0) for v in index_vars}
    mapping[thread_var] = Var(THREAD, thread_var.hi + 1)
    return Guard.equals(substitute(inv.forward_index[-1], mapping), 0)


def _max_vector_bits(op, ctx) -> int:
    """The target's widest vector for this loop (a loop touching global memory and no shared memory may be
    wider: 256 bits on sm_100)."""
    scopes = [ctx.buffer(a.buffer).scope for a in op.accesses]
    global_only = GLOBAL in scopes and not any(is_shared(s) for s in scopes)
    return ctx.hooks.max_vector_bits(ctx.target, global_only)


def _vector_accesses(op, ctx, indices=None) -> tuple[VectorAccess, ...]:
    """The op's accesses as the vectoriser sees them (``indices``: each access's, over the vector domain)."""
    out = []
    align = op.args.get("align") or {}
    for a, ix in zip(op.accesses, indices or [a.indices for a in op.accesses]):
        buf = ctx.buffer(a.buffer)
        out.append(VectorAccess(tuple(ix), ctx.shape(a.buffer), element_bits(buf.dtype),
                                buf.scope in (FRAGMENT, LOCAL), a.is_write, ctx.layouts.get(a.buffer),
                                int(align.get(a.buffer, 0))))
    return tuple(out)


def choose_candidate(op, ctx, from_buffer: Fragment, from_plan: Fragment, acc) -> Fragment:
    """TileLang's ``ChooseBestCandidate`` between the layout following a read fragment and the
    partition plan: the only valid one; else the one whose fragment register indices do not depend
    on the thread (a thread-indexed register array would spill); else the one the other contains
    (less replication, same coverage); else the plan when its replication is not larger."""
    buf_ok = _validate(op, ctx, from_buffer, acc, strict=False)
    plan_ok = _validate(op, ctx, from_plan, acc, strict=False)
    if buf_ok != plan_ok:
        return from_buffer if buf_ok else from_plan
    if not buf_ok:
        return from_buffer
    buf_tid, plan_tid = _thread_indexed(from_buffer, ctx, acc, op.loop), _thread_indexed(from_plan, ctx, acc, op.loop)
    if buf_tid != plan_tid:
        return from_plan if buf_tid else from_buffer
    require_inverse(from_buffer, op.name, None, "loop layout from a fragment")
    require_inverse(from_plan, op.name, None, "planned loop layout")
    bt, pt = _owner_sets(from_buffer), _owner_sets(from_plan)
    buf_has_plan, plan_has_buf = _subset(pt, bt), _subset(bt, pt)
    if buf_has_plan and not plan_has_buf:
        return from_plan
    if plan_has_buf and not buf_has_plan:
        return from_buffer
    return from_plan if from_plan.replicate_size <= from_buffer.replicate_size else from_buffer


def _thread_indexed(loop_layout: Fragment, ctx, acc, loop) -> bool:
    """Some fragment with a layout is read at a register index that, for one register of the loop
    layout, differs between the threads running it (``HasThreadDependentFragmentIndex``)."""
    for name, (ix, _r, _w) in acc.items():
        frag = ctx.layouts.get(name)
        if isinstance(frag, Fragment) and thread_indexed(loop_layout, frag, tuple(ix), tuple(loop)):
            return True
    return False


@memoized(maxsize=1024)
def thread_varies(frag: Fragment, dims: tuple[int, ...]) -> bool:
    """Whether ``frag``'s thread (of some replica) changes along one of ``dims``.

    >>> thread_varies(Fragment([4, 8], forward_thread_fn=lambda k, j: j, forward_index_fn=lambda k, j: k), (0,))
    False
    >>> thread_varies(Fragment([4, 8], forward_thread_fn=lambda k, j: k * 8 + j), (0,))
    True
    """
    table = frag.thread_table()
    return any(bool((table != np.take(table, [0], axis=d + 1)).any()) for d in dims)


def _constant_accesses(op, acc) -> list[str]:
    """The fragments the loop accesses at constant indices only (TileLang's const-index fragments: laid out
    fully replicated at the strict level, no source of the loop layout when every fragment is one).  A
    fragment indexed by a variable from outside the loop (:meth:`~layoutkit.infer.Program.select`) is
    not one, though its index is read as a constant: TileLang keeps the variable symbolic."""
    selected = _selected(op)
    return [n for n, (ix, _r, _w) in acc.items() if n not in selected and all(isinstance(e, Const) for e in ix)]


def _check_outer_source(op, ctx, name: str, indices) -> None:
    """Refuse a loop laid out from fragment ``name`` when the loop reads or writes it only at variables from
    outside the loop (``x[k]``, every index constant once read) and its thread depends on them: TileLang
    0.1.15 keeps ``k`` symbolic, so its loop layout is a function of ``k`` (no Program holds one) where we
    would read it at ``k = 0``.  A thread map independent of ``k`` (a fully replicated ``x``) gives the
    loop every replica of ``x[k]``, the same for every ``k``, which is how the loop is laid out
    (``docs/reference.md#indices-from-outside-the-loop``)."""
    dims = _selected(op).get(name)
    frag = ctx.layouts[name]
    if dims is None or not all(isinstance(e, Const) for e in indices) or not thread_varies(frag, dims):
        return
    raise UnsupportedError(f"{op.name}: fragment {name} laid out as {frag.describe()} is indexed only by "
                           f"variables from outside the loop (dims {list(dims)}) and its thread depends on them: "
                           f"TileLang 0.1.15 lays the loop out from {name} as a function of those variables, "
                           f"which no Program holds; expected a thread map of {name} independent of dims "
                           f"{list(dims)}")


def _selected(op) -> dict[str, tuple[int, ...]]:
    return {name: tuple(dims) for name, dims in (op.args.get("selected") or {}).items()}


def _validate(op, ctx, layout, acc, strict: bool = True) -> bool:
    """``ValidateCandidateAgainstFragments``: stops at the first fragment the loop cannot address
    (raising when ``strict``).  Its containment proofs invert the fragment (and, for a written
    fragment, the loop layout too), which raises even when not ``strict`` (:func:`has_inverse`).
    For a fragment only written, TileLang inverts it only once the loop layout is shown to hold its
    threads; we require its inverse first (the two differ only in whether a non-strict check
    raises or answers False for a fragment that is both uninvertible and not addressable)."""
    selected = _selected(op)
    for name, (ix, r, w) in acc.items():
        frag = ctx.layouts.get(name)
        if not isinstance(frag, Fragment):
            continue
        if name in selected and thread_varies(frag, selected[name]):
            # TileLang keeps the outer variable symbolic: its proofs for every value fail (or its loop
            # layout would be a function of the variable, which no Program holds)
            if strict:
                raise RuleConflict(f"{op.name}: fragment {name} laid out as {frag.describe()} is indexed in dims "
                                   f"{list(selected[name])} by a variable from outside the loop, and its thread "
                                   f"depends on them", op.name, name)
            return False
        if w:
            require_inverse(layout, op.name, name, "loop layout")
        if r or w:
            require_inverse(frag, op.name, name, f"fragment {name}")
        if not loop_agrees(layout, frag, ix, op.loop, r, w):
            if strict:
                raise RuleConflict(f"{op.name}: loop layout {layout.describe()} cannot address fragment {name} "
                                   f"laid out as {frag.describe()}", op.name, name)
            return False
    return True

