"""The reduction rule (TileLang's ``ReduceOp``): a destination fragment laid out from its source's layout with the
reduced dimension folded into the threads that share a row.

When a row of the source straddles threads that also hold other rows (the thread map mixes the reduced
dimension with a kept one, e.g. ``(_i * 12 + _j) % 32`` over ``(8, 12)``), the replicas of different rows
meet in one thread, and the register index TileLang infers from the thread map gives two of those rows one
register.  TileLang returns that layout, or throws where it must invert it; we never return it: TileLang-like
attempts treat it as a conflict, and the attempts beyond TileLang (see :mod:`.engine`) give every element of
the destination its own register instead.
"""

from __future__ import annotations

import math

import numpy as np

from ..algebra.nodes import Const, Expr, floordiv, floormod, make_sum, substitute
from ..algebra.shapes import placeholder
from ..caches import memoized
from ..fragment.fragment import Fragment, rep_var
from .guards import Guard, Predicate
from .loops import require_inverse
from .rules import COMMON, EMPTY, STRICT, RuleConflict, RuleResult

# ---- reductions ---------------------------------------------------------------------------------

@memoized(maxsize=4096)
def reducer_layout(src: Fragment, dim: int, dst_shape, injective: bool = False) -> Fragment:
    """``ComputeReducerLayout``: the reduced axis becomes replication, condensed.  ``injective``: when
    TileLang's inferred register index puts two elements on one thread register, index the destination
    row-major instead (one register per element; see the module doc).

    >>> src = Fragment([8, 12], forward_thread_fn=lambda i, j: (i * 12 + j) % 32,
    ...                forward_index_fn=lambda i, j: (i * 12 + j) // 32)
    >>> red = reducer_layout(src, 1, (8,))
    >>> print(red.forward_thread, red.forward_index[0], bool(red.prove_injective()), sep=" | ")
    (_i * 12 + _rep) % 32 | _i * 3 // 8 | False
    >>> fixed = reducer_layout(src, 1, (8,), injective=True)
    >>> print(fixed.forward_thread, fixed.forward_index[0], bool(fixed.prove_injective()), sep=" | ")
    (_i * 12 + _rep) % 32 | _i | True
    """
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
    frag = Fragment.from_exprs(tuple(dst_shape), None, thread, R).condense_rep_var()
    if injective and not frag.prove_injective():
        flat = make_sum({v: math.prod(frag.input_shape[d + 1:]) for d, v in enumerate(frag.forward_vars)})
        frag = Fragment.from_exprs(frag.input_shape, (flat,), frag.forward_thread, frag.replicate_size)
    return frag if src.thread_range is None else frag.bind_thread_range(*src.thread_range)


def reduce_rule(op, ctx, level) -> RuleResult:
    """A reduction: the destination's layout from the source's (or checked against it), with a note when
    some threads contribute the identity."""
    if level == STRICT:
        return EMPTY
    src, dst = op.args["src"], op.args["dst"]
    if not (ctx.is_fragment(src) and ctx.is_fragment(dst) and src in ctx.layouts):
        return EMPTY
    # TileLang-like free attempts refuse a layout with two elements on one register (TileLang throws where
    # it inverts one, and returns a wrong layout where it does not); the common level and the attempts
    # beyond TileLang index such a destination row-major instead
    red = reducer_layout(ctx.layouts[src], op.args["dim"], ctx.shape(dst), level == COMMON or ctx.fallback)
    injective = red.prove_injective()
    if not injective:
        raise RuleConflict(f"{op.name}: the reduction layout of {dst}, {red.describe()}, puts two elements on one "
                           f"thread register: {injective}", op.name, dst)
    width = ctx.shape(src)[op.args["dim"]]
    groups = _reduce_group(red)
    note = None
    if groups & (groups - 1):
        note = Predicate.of(Guard.note(f"all-reduce over {groups} threads (not a power of two): lanes padded to "
                                       f"{1 << groups.bit_length()} with the identity of {op.args['kind']}"))
    elif math.prod(ctx.shape(src)) % ctx.rng[1] or width % groups:
        note = Predicate.of(Guard.note(f"threads holding no element of a row contribute the identity ({width} wide)"))
    if dst not in ctx.layouts:
        return RuleResult({dst: red}, predicate=note)
    old = ctx.layouts[dst]
    require_inverse(red, op.name, dst, f"reduction layout of {dst}")
    # TileLang's ProveFragmentContains(orig_dst, reducer): every thread the existing layout says holds an
    # element must be one the reduction leaves it in, or that thread would read a value nobody wrote.
    if not (isinstance(old, Fragment) and red.contains(old)):
        raise RuleConflict(f"{op.name}: {dst}'s layout {old.describe()} puts elements in threads the reduction "
                           f"layout {red.describe()} does not fill", op.name, dst)
    return RuleResult(predicate=note)


def _reduce_group(red: Fragment) -> int:
    """Largest number of distinct threads sharing one output element."""
    t = red.thread_table().reshape(red.replicate_size, -1)
    cols = np.sort(t[:, : min(t.shape[1], 64)], axis=0)
    # distinct threads per column: 1 + the steps between sorted neighbours (numpy, no per-column set)
    return int((1 + np.count_nonzero(cols[1:] != cols[:-1], axis=0)).max())

