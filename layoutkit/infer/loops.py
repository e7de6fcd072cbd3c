"""Target-independent rules: parallel loops (also copies, fills, transposes, tile atomic adds, which
lower to one) and reductions, after TileLang's ``ParallelOp`` / ``ReduceOp`` (REFERENCE section 4).

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (64, 64), "float16")
>>> _ = p.fill(a, 1.0)
>>> print(infer_layouts(p).layout_map["a"].forward_thread)
_i % 16 * 8 + _j // 8
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..algebra.layout import placeholder
from ..algebra.nodes import Const, Expr, Var
from ..algebra.simplify import floordiv, floormod, linear, make_split, substitute
from ..dtypes import element_bits
from ..errors import LayoutError, UnsupportedError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment, rep_var
from .rules import FREE, STRICT, register_rule


class RuleConflict(LayoutError):
    """Raised by a rule when the layouts it sees cannot be reconciled (the engine turns it into a
    :class:`~layoutkit.errors.LayoutConflictError` or discards a free-mode attempt)."""

    def __init__(self, message: str, op: str, buffer: str | None = None):
        super().__init__(message)
        self.op = op
        self.buffer = buffer


# ---- fragment helpers ------------------------------------------------------------------------------

def condense(frag: Fragment) -> Fragment:
    """TileLang's ``CondenseReplicateVar`` (see :meth:`Fragment.condense_rep_var`)."""
    return frag.condense_rep_var()


def bind(frag: Fragment, rng: tuple[int, int]) -> Fragment:
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


@lru_cache(maxsize=4096)
def loop_from_buffer(src: Fragment, indices, loop, rng) -> Fragment:
    """The loop layout that follows ``src`` read/written at ``indices`` (``ComputeLoopLayoutFromBuffer``)."""
    if _is_identity(indices, loop) and src.input_shape == tuple(loop):
        return bind(src, rng)
    mapping = {v: e for v, e in zip(src.forward_vars, indices)}
    thread = substitute(src.forward_thread, mapping)
    return Fragment.from_exprs(loop, None, thread, src.replicate_size, rng)


@lru_cache(maxsize=4096)
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
        raise UnsupportedError(f"cannot invert the access {tuple(str(e) for e in indices)}: only loop vars "
                               f"plus constants are supported")
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
    frag = condense(Fragment.from_exprs(shape, None, thread, R))
    if not is_write and not frag.prove_injective():
        return make_fully_replicated_fragment(shape, loop_layout.thread_extent)
    return bind(frag, rng)


@lru_cache(maxsize=4096)
def plan_partition(loop, bits: int, threads: int, has_fragment: bool, rng) -> tuple[Fragment, str | None]:
    """Free mode (``PlanLoopPartition``): fuse row-major, vectorise by ``128 / bits`` (halved until it
    divides the last extent and, with fragments, the total by ``threads * vec``), deal vectors
    round-robin.  Returns the layout and a guard predicate over ``_thread`` / ``_index`` when the
    domain does not fill every slot.  Beyond TileLang: a fragment loop whose size is not a multiple of
    the thread count deals whole rows (the last dim stays in one thread) and guards the idle threads,
    instead of a fused map whose rows straddle threads.

    >>> f, guard = plan_partition((100, 7), 32, 128, True, (0, 128))
    >>> print(f.forward_thread, f.forward_index[0], guard, sep=" | ")
    _i | _j | _thread < 100
    """
    total = math.prod(loop)
    vec = max(1, 128 // bits)
    while vec > 1 and (loop[-1] % vec or (has_fragment and total % (threads * vec))):
        vec //= 2
    variables = [placeholder(d, n) for d, n in enumerate(loop)]
    span = vec * threads
    straddles = len(loop) > 1 and loop[-1] % span and span % loop[-1]
    if has_fragment and (total % threads or straddles):
        inner = loop[-1] if len(loop) > 1 else 1
        outer = total // inner
        o_flat = _flat(variables[:-1], loop[:-1]) if len(loop) > 1 else variables[0]
        i_flat = variables[-1] if len(loop) > 1 else Const(0)
        thread = floormod(o_flat, Const(threads))
        index = floordiv(o_flat, Const(threads)) * inner + i_flat
        guard = None if outer % threads == 0 else f"_thread < {outer}" if outer < threads else \
            f"_index // {inner} * {threads} + _thread < {outer}"
        return Fragment.from_exprs(loop, (index,), thread, 1, rng), guard
    flat = _flat(variables, loop)
    thread = floormod(floordiv(flat, Const(vec)), Const(threads))
    index = floordiv(flat, Const(vec * threads)) * vec + floormod(flat, Const(vec))
    frag = Fragment.from_exprs(loop, (index,), thread, 1, rng)
    guard = None
    if total % (threads * vec):
        guard = f"_index // {vec} * {vec * threads} + _thread * {vec} + _index % {vec} < {total}"
    return frag, guard


def slot_guard(layout: Fragment, threads: int) -> str | None:
    """A guard when the layout leaves (thread, register) slots empty: idle threads or a ragged last
    register round."""
    if layout.thread_extent < threads:
        return f"_thread < {layout.thread_extent}"
    if layout.thread_extent * layout.local_size > layout.size * layout.replicate_size:
        return f"slot (_thread, _index) holds an element of {list(layout.input_shape)}"
    return None


def _flat(variables, shape) -> Expr:
    flat: Expr = Const(0)
    stride = 1
    for v, n in zip(reversed(variables), reversed(shape)):
        flat = flat + v * stride
        stride *= n
    return flat


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


def loop_agrees(loop_layout: Fragment, buf_frag: Fragment, indices, loop, is_read: bool, is_write: bool) -> bool:
    """Reads: every loop thread finds the element; writes: the owner sets are equal."""
    if buf_frag.is_fully_replicated() and not is_write:
        return True
    if _is_identity(indices, loop) and (loop_layout is buf_frag or (
            loop_layout.input_shape == buf_frag.input_shape
            and loop_layout.forward_thread == buf_frag.forward_thread
            and loop_layout.replicate_size == buf_frag.replicate_size)):
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

def _merged_accesses(op, ctx):
    """Fragment accesses merged per buffer, in first-access order: ``name -> [indices, read, write]``."""
    out: dict[str, list] = {}
    for a in op.accesses:
        if not ctx.is_fragment(a.buffer):
            continue
        entry = out.setdefault(a.buffer, [a.indices, False, False])
        entry[2 if a.is_write else 1] = True
    return out


def loop_rule(op, ctx, level) -> dict:
    if op.loop is None:
        return {}
    loop = op.loop
    acc = _merged_accesses(op, ctx)
    if op.name in ctx.loops:
        if level == FREE:
            _validate(op, ctx, ctx.loops[op.name], acc)
        return {}
    if level == STRICT:
        res = {}
        for name, (indices, _r, _w) in acc.items():
            if name in ctx.layouts or not all(isinstance(e, Const) for e in indices):
                continue
            if any(e.value != 0 for e in indices):
                raise UnsupportedError(f"{op.name}: fragment {name} accessed at a constant non-zero index")
            res[name] = make_fully_replicated_fragment(ctx.shape(name), ctx.rng[1]).bind_thread_range(*ctx.rng)
        return res
    const = [n for n, (ix, _r, _w) in acc.items() if all(isinstance(e, Const) for e in ix)]
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
        layout = loop_from_buffer(ctx.layouts[source], acc[source][0], loop, ctx.rng)
    elif level == FREE:
        bits = min(element_bits(ctx.buffer(a.buffer).dtype) for a in op.accesses)
        plan, guard = plan_partition(loop, bits, ctx.rng[1], bool(acc), ctx.rng)
        layout = plan
        if read_source is not None and allow:
            cand = loop_from_buffer(ctx.layouts[read_source], acc[read_source][0], loop, ctx.rng)
            if _validate(op, ctx, cand, acc, strict=False) and (
                    cand.replicate_size <= plan.replicate_size or not _validate(op, ctx, plan, acc, strict=False)):
                layout, guard = cand, None
    else:
        return {}
    _validate(op, ctx, layout, acc)
    res = {}
    for name, (ix, _r, w) in acc.items():
        if name not in ctx.layouts:
            res[name] = complete_buffer(layout, ix, ctx.shape(name), loop, w, ctx.rng)
    ctx.loops[op.name] = layout
    guard = guard or slot_guard(layout, ctx.rng[1])
    if guard is not None:
        ctx.predicates[op.name] = guard
    return res


def _validate(op, ctx, layout, acc, strict: bool = True) -> bool:
    for name, (ix, r, w) in acc.items():
        frag = ctx.layouts.get(name)
        if not isinstance(frag, Fragment):
            continue
        if not loop_agrees(layout, frag, ix, op.loop, r, w):
            if strict:
                raise RuleConflict(f"{op.name}: loop layout {layout.describe()} cannot address fragment {name} "
                                   f"laid out as {frag.describe()}", op.name, name)
            return False
    return True


# ---- reductions ---------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def reducer_layout(src: Fragment, dim: int, dst_shape) -> Fragment:
    """``ComputeReducerLayout``: the reduced axis becomes replication, condensed."""
    ext = src.input_shape[dim]
    R = ext * src.replicate_size
    rep = rep_var(R)
    keep = len(dst_shape) == len(src.input_shape)
    mapping: dict[Expr, Expr] = {}
    k = 0
    for d, v in enumerate(src.forward_vars):
        if d == dim:
            mapping[v] = floormod(rep, Const(ext)) if src.replicate_size > 1 else rep
            if keep:
                k += 1
        else:
            mapping[v] = placeholder(k, dst_shape[k])
            k += 1
    if src.replicate_size > 1:
        mapping[src.rep_var] = floordiv(rep, Const(ext))
    thread = substitute(src.forward_thread, mapping)
    frag = condense(Fragment.from_exprs(tuple(dst_shape), None, thread, R))
    return frag if src.thread_range is None else frag.bind_thread_range(*src.thread_range)


def reduce_rule(op, ctx, level) -> dict:
    if level == STRICT:
        return {}
    src, dst = op.args["src"], op.args["dst"]
    if not (ctx.is_fragment(src) and ctx.is_fragment(dst) and src in ctx.layouts):
        return {}
    red = reducer_layout(ctx.layouts[src], op.args["dim"], ctx.shape(dst))
    width = ctx.shape(src)[op.args["dim"]]
    groups = _reduce_group(red)
    if groups & (groups - 1):
        ctx.predicates[op.name] = f"all-reduce over {groups} threads (not a power of two): lanes padded to " \
                                  f"{1 << groups.bit_length()} with the identity of {op.args['kind']}"
    elif math.prod(ctx.shape(src)) % ctx.rng[1] or width % groups:
        ctx.predicates[op.name] = f"threads holding no element of a row contribute the identity ({width} wide)"
    if dst not in ctx.layouts:
        return {dst: red}
    old = ctx.layouts[dst]
    if not (isinstance(old, Fragment) and old.contains(red)):
        raise RuleConflict(f"{op.name}: reduction layout of {dst} {red.describe()} is not contained in its "
                           f"layout {old.describe()}", op.name, dst)
    return {}


def _reduce_group(red: Fragment) -> int:
    """Largest number of distinct threads sharing one output element."""
    t = red.thread_table().reshape(red.replicate_size, -1)
    return int(max(len(set(col.tolist())) for col in t.T[: min(t.shape[1], 64)]))


for _kind in ("parallel", "copy", "fill", "transpose", "atomic_add"):
    register_rule(_kind, "*", loop_rule)
register_rule("reduce", "*", reduce_rule)
