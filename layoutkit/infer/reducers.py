"""Reducers (TileLang 0.1.15's reducer v2: ``T.alloc_reducer`` / ``T.reducer_update`` / ``T.finalize_reducer``).

A reducer is a ``local.reducer`` buffer laid out by a :class:`~layoutkit.PartialFragment`: its replicas are
addends of the reduction ``finalize_reducer`` completes, not copies (``docs/reference.md#reducers``).  Layout
inference treats it as TileLang does:

- a parallel loop's ``updates`` (``T.reducer_update(acc[i], x)``) never shape the loop layout; once the loop is
  laid out, each update *proposes* the partial its loop induces (:func:`induced_partial`: every loop dim that
  indexes no reducer dim is projected into the low, *combine* replicas, the loop's own replication becomes the
  high, *copy* replicas), or the participant-wide partial (every thread one addend of the whole buffer) when the
  site is not eligible for the narrow plan (:func:`site_problem` says why);
- two update sites proposing different partials widen the reducer to the wide partial (the lattice
  unset -> narrow -> wide; :func:`commit_reducer`); a reducer no loop updates starts wide;
- ``finalize_reducer(acc, dst)`` proposes, in free mode only, ``dst`` = the partial read after the collective
  (:meth:`~layoutkit.PartialFragment.as_post_collective`), and ``dst`` is *reserved* for it: other ops'
  non-strict proposals for ``dst`` are dropped until it has a layout (:func:`reservations`).

The law the partial keeps (tested in ``tests/test_reducers.py``): combining the addend lanes of any copy group
of the registers the updates leave gives the reduction of the contributions, and ``as_post_collective`` places
that result where every replica of ``acc`` was.

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128)
>>> A = p.tensor("A", (32, 128), "float32")
>>> a = p.alloc_fragment("a", (32, 128), "float32"); _ = p.copy(A, a)
>>> acc = p.alloc_reducer("acc", (32,), "float32")
>>> _ = p.reducer_init(acc)
>>> _ = p.parallel((32, 128), reads=[(a, lambda i, k: (i, k))], updates=[(acc, lambda i, k: (i,))])
>>> out = p.alloc_fragment("out", (32,), "float32"); _ = p.finalize_reducer(acc, out)
>>> r = infer_layouts(p)
>>> r.layout_map["acc"].combine_size, r.layout_map["out"].is_equal(r.layout_map["acc"].as_post_collective())
(32, True)
"""

from __future__ import annotations

from ..algebra.nodes import Const, Expr, Var, add, floordiv, floormod, scale, substitute
from ..algebra.shapes import placeholder
from ..errors import LayoutError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment, rep_var
from ..fragment.partial import PartialFragment
from ..scopes import FRAGMENT, REDUCER
from .rules import EMPTY, FREE, STRICT, Conflict, RuleResult, op_range
from .validate import OpValidationError, loop_indices

__all__ = ["check_op", "check_reducer", "commit_reducer", "finalize_args", "finalize_rule", "induced_partial",
           "init_rule", "reservations", "site_problem", "update_args", "update_partials", "wide_partial"]

OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")
"""The combine ops of a reducer (TileLang's ``ReducerV2OpType``)."""


def check_op(name: str, op: str) -> str:
    """``op`` when it is a reducer combine op (:data:`OPS`)."""
    if op not in OPS:
        raise OpValidationError(f"alloc_reducer {name!r}: op {op!r}; expected one of {OPS}", "alloc_reducer")
    return op


def check_reducer(program, acc, what: str) -> None:
    """``acc`` is a reducer of ``program``."""
    program.own(acc)
    if acc.scope != REDUCER:
        raise OpValidationError(f"{what}: {acc.name} is a {acc.scope} buffer; expected a reducer (alloc_reducer)",
                                what, acc.name)


def finalize_args(program, acc, dst, what: str) -> dict:
    """The args of ``finalize_reducer(acc, dst)``: ``dst`` a whole buffer of ``acc``'s shape and dtype."""
    check_reducer(program, acc, what)
    program.own(dst)
    if dst.shape != acc.shape or dst.dtype != acc.dtype:
        raise OpValidationError(f"{what}: destination {dst.name} {list(dst.shape)} {dst.dtype} for reducer "
                                f"{acc.name} {list(acc.shape)} {acc.dtype}; expected the same shape and dtype",
                                what, dst.name)
    return {"src": acc.name, "dst": dst.name, "op": program.reducer_ops[acc.name]}


def update_args(program, updates, loop: tuple[int, ...], what: str) -> list[dict]:
    """The ``updates`` argument of a parallel op: per update its reducer, ``dims`` (the loop dim indexing
    each reducer dim, -1 for a constant 0; None when an index is anything else) and ``safe``.  An item is
    ``(reducer, fn)`` or ``(reducer, fn, flags)``, ``flags`` a mapping of ``safe`` (default True) and
    ``fused`` (the nest is one flattened loop to the solver, as TileLang fuses nests that touch no fragment:
    an index using a loop variable is then no plain loop variable)."""
    out = []
    for item in updates:
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise OpValidationError(f"{what} updates: expected (reducer, index fn[, flags]) items; found {item!r}",
                                    what)
        acc, fn = item[0], item[1]
        flags = dict(item[2]) if len(item) == 3 else {}
        program.own(acc)
        if acc.scope != REDUCER:
            raise OpValidationError(f"{what} updates: {acc.name} is a {acc.scope} buffer; expected a reducer", what,
                                    acc.name)
        loop_vars: list[Expr] = [placeholder(d, n) for d, n in enumerate(loop)]
        dims: list[int] = []
        for e in loop_indices(acc, fn, loop, what):
            if isinstance(e, Const) and e.value == 0:
                dims.append(-1)
            elif e in loop_vars and not flags.get("fused"):
                dims.append(loop_vars.index(e))
            else:
                break
        plain = len(dims) == len(acc.shape)
        out.append({"buffer": acc.name, "dims": dims if plain else None, "safe": bool(flags.get("safe", True))})
    return out


def wide_partial(shape, rng: tuple[int, int]) -> PartialFragment:
    """The participant-wide plan: each of the ``rng`` threads holds one addend of every element.

    >>> wide_partial((4,), (0, 64)).combine_size
    64
    """
    full = make_fully_replicated_fragment(tuple(shape), rng[1]).bind_thread_range(*rng)
    return PartialFragment(full)


def _project(src: Fragment, dim: int) -> Fragment:
    """One projection of the induced layout (TileLang's ``ProjectReducerDimNoCondense``): loop dim ``dim``
    becomes the low digit of the replication, the existing replication moves above it; no condensation."""
    ext = src.input_shape[dim]
    R = ext * src.replicate_size
    rep = rep_var(R)
    shape = src.input_shape[:dim] + src.input_shape[dim + 1:] or (1,)
    mapping: dict[Expr, Expr] = {src.rep_var: floordiv(rep, Const(ext))}
    k = 0
    for d, v in enumerate(src.forward_vars):
        if d == dim:
            mapping[v] = floormod(rep, Const(ext))
        else:
            mapping[v] = placeholder(k, shape[k])
            k += 1
    return Fragment.from_exprs(shape, None, substitute(src.forward_thread, mapping), R)


def _condense_keeping_boundary(frag: Fragment, combine: int) -> tuple[Fragment, int]:
    """``CondenseReplicateVarKeepingBoundary``: condense the combine replicas (``_rep % combine``) and the copy
    replicas (``_rep // combine``) each on its own, so the boundary survives; returns the fragment and its new
    combine width."""
    shape, n = frag.input_shape, len(frag.input_shape)
    copies = frag.replicate_size // combine
    hi_slot = placeholder(n, copies)
    lo_only = substitute(frag.forward_thread, {frag.rep_var: add(rep_var(combine), scale(hi_slot, combine))})
    g = Fragment.from_exprs(shape + (copies,), (Const(0),), lo_only, combine).condense_rep_var()
    w = g.replicate_size
    lo_tmp = Var("_lo", w)
    t = substitute(g.forward_thread, {g.rep_var: lo_tmp})
    t = substitute(t, {hi_slot: rep_var(copies)})
    t = substitute(t, {lo_tmp: placeholder(n, w)})
    h = Fragment.from_exprs(shape + (w,), (Const(0),), t, copies).condense_rep_var()
    c = h.replicate_size
    hi_tmp = Var("_hi", c)
    final = rep_var(w * c)
    t = substitute(h.forward_thread, {h.rep_var: hi_tmp})
    t = substitute(t, {placeholder(n, w): floormod(final, Const(w)) if c > 1 else final,
                       hi_tmp: floordiv(final, Const(w))})
    return Fragment.from_exprs(shape, frag.forward_index, t, w * c), w


def site_problem(loop_layout: Fragment, loop: tuple[int, ...], dims, reducer_shape, rng: tuple[int, int],
                 safe: bool) -> str | None:
    """Why an update site cannot take the narrow plan (TileLang's ``AnalyzeReducerUpdateSite`` checks before
    it projects), or None.  ``dims[d]``: the loop dim indexing reducer dim ``d`` (-1: a constant 0 on a unit
    dim); None when some index is neither."""
    if dims is None:
        return "an update index is neither a parallel loop variable nor 0 on a unit dim"
    used = [p for p in dims if p >= 0]
    if len(set(used)) != len(used):
        return "update index is not a distinct parallel loop var"
    if any(p >= 0 and loop[p] != n for p, n in zip(dims, reducer_shape)):
        return "loop extent does not match the reducer dim extent"
    if any(p < 0 and n != 1 for p, n in zip(dims, reducer_shape)):
        return "constant update index on a non-unit reducer dim"
    if loop_layout.thread_extent != rng[1]:
        return "loop layout does not cover the full participant extent"
    lo = loop_layout.thread_range[0] if loop_layout.thread_range is not None else 0
    if lo != rng[0]:
        return "loop layout thread range mismatch"
    if not safe:
        return "contribution value is not replica-safe"
    return None


def induced_partial(loop_layout: Fragment, dims, reducer_shape) -> PartialFragment:
    """The partial an update site induces: the loop dims indexing no reducer dim projected (innermost first)
    into the low replicas, condensed keeping the combine / copy boundary, over the reducer's dim order.

    >>> loop = Fragment([8], forward_thread_fn=lambda i, r: r * 8 + i, replicate=16, forward_index_fn=lambda i: 0)
    >>> P = induced_partial(loop, [-1], (1,))
    >>> P.combine_size, P.copy_size, str(P.forward_thread)
    (8, 16, '_rep')
    """
    out = {p for p in dims if p >= 0}
    induced, combine = loop_layout, 1
    for dim in reversed(range(len(loop_layout.input_shape))):
        if dim not in out:
            combine *= induced.input_shape[dim]
            induced = _project(induced, dim)
    induced, w = _condense_keeping_boundary(induced, combine)
    order = sorted(out)  # the surviving loop dims, in nest order: the induced layout's input slots
    slots = {p: k for k, p in enumerate(order)}
    if tuple(slots.get(p, -1) for p in dims) != tuple(range(len(dims))):
        fresh = {placeholder(k, induced.input_shape[k]): Var(f"_slot{k}", induced.input_shape[k])
                 for k in range(len(induced.input_shape))}
        target = {Var(f"_slot{slots[p]}", induced.input_shape[slots[p]]): placeholder(d, n)
                  for d, (p, n) in enumerate(zip(dims, reducer_shape)) if p >= 0}

        def move(e: Expr) -> Expr:
            return substitute(substitute(e, fresh), target)

        induced = Fragment.from_exprs(tuple(reducer_shape), [move(e) for e in induced.forward_index],
                                      move(induced.forward_thread), induced.replicate_size)
    if loop_layout.thread_range is not None:
        induced = induced.bind_thread_range(*loop_layout.thread_range)
    return PartialFragment(induced, w)


def _steps_problem(partial: PartialFragment, threads: int) -> str | None:
    """Why the finishing collective of ``partial`` cannot be the XOR butterfly TileLang emits, or None."""
    try:
        steps = partial.combine_steps()
    except LayoutError:
        return "the addend lane is mixed with other terms of the thread map"
    for extent, stride in steps:
        if extent & (extent - 1):
            return "collective width is not a power of two"
        if stride & (stride - 1):
            return "collective thread stride is not a power of two"
        if extent * stride > threads:
            return "collective width exceeds the participant extent"
    return None


def update_partials(op, ctx, loop_layout: Fragment) -> dict[str, PartialFragment]:
    """What each reducer update of parallel ``op`` proposes once its loop is laid out as ``loop_layout``
    (TileLang's ``ProposeReducerPartial``): the induced partial when the site is eligible, else wide."""
    rng = op_range(op, ctx.rng)
    out: dict[str, PartialFragment] = {}
    for u in op.args.get("updates") or ():
        name, dims = u["buffer"], u.get("dims")
        shape = ctx.shape(name)
        partial = None
        if site_problem(loop_layout, op.loop, dims, shape, rng, bool(u.get("safe", True))) is None:
            try:
                cand = induced_partial(loop_layout, dims, shape)
            except LayoutError:
                cand = None
            if cand is not None and _steps_problem(cand, rng[1]) is None:
                partial = cand
        out[name] = partial if partial is not None else wide_partial(shape, rng)
    return out


def commit_reducer(ctx, name: str, old, new, op: str, level: int, rule: str) -> bool:
    """The reducer lattice (unset -> narrow -> wide): equal proposals are absorbed, different ones widen to
    the wide partial over the proposal's threads; an annotated reducer is never widened (a conflict)."""
    if not isinstance(new, PartialFragment):
        raise Conflict(f"reducer {name} must carry a PartialFragment; {op} proposes {new.describe()}", name,
                       (op,), (new,))
    if old is None:
        ctx._set(name, new, op, level, rule, "set")
        return True
    if old.is_equal(new):
        return False
    if name in ctx.strict:
        raise Conflict(f"reducer {name}: an update site ({op}) induces {new.describe()}, the annotation is "
                       f"{old.describe()}", name, (ctx.setter.get(name, "?"), op), (old, new))
    rng = new.thread_range or (0, new.thread_extent)
    wide = wide_partial(ctx.shape(name), rng)
    if wide.is_equal(old):
        return False
    ctx._set(name, wide, op, level, rule, "widened")
    return True


def reservations(program, ops, annotations, rng: tuple[int, int]) -> dict[str, set[str]]:
    """Finalize destinations whose first layout only their finalize may give (``ReducerDstSteering``): a
    fragment of the reducer's shape, not annotated, on more than one thread."""
    out: dict[str, set[str]] = {}
    for op in ops:
        if op.kind != "finalize_reducer":
            continue
        dst, acc = op.args["dst"], op.args["src"]
        if dst in annotations or program.buffers[dst].scope != FRAGMENT:
            continue
        if program.shape_of(dst) != program.shape_of(acc) or op_range(op, rng)[1] <= 1:
            continue
        out.setdefault(dst, set()).add(op.name)
    return out


def seed_wide(ctx, ops) -> None:
    """Reducers no loop updates start wide, over the threads of their first user (TileLang's step 0.5)."""
    updated = {u["buffer"] for op in ops for u in op.args.get("updates") or ()}
    for op in ops:
        for b in op.buffers:
            if ctx.buffer(b).scope == REDUCER and b not in updated and b not in ctx.layouts:
                ctx._set(b, wide_partial(ctx.shape(b), op_range(op, ctx.rng)), op.name, STRICT, "reducer", "set")


def finalize_rule(op, ctx, level) -> RuleResult:
    """``finalize_reducer(acc, dst)``: in free mode, ``dst`` not laid out yet and steerable, ``dst`` takes
    the partial read after the collective."""
    acc, dst = op.args["src"], op.args["dst"]
    if level != FREE or dst in ctx.layouts or acc not in ctx.layouts or not ctx.is_fragment(dst):
        return EMPTY
    rng = op_range(op, ctx.rng)
    if ctx.shape(dst) != ctx.shape(acc) or rng[1] <= 1:
        return EMPTY
    partial = ctx.layouts[acc]
    lay = partial.as_post_collective() if isinstance(partial, PartialFragment) else partial
    if lay.thread_range is None:
        lay = lay.bind_thread_range(*rng)
    return RuleResult({dst: lay})


def init_rule(op, ctx, level) -> RuleResult:
    """``reducer_init`` proposes nothing: the updates plan the partial."""
    return EMPTY


