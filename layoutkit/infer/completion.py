"""The layout of a fragment a parallel loop reads or writes through a non-trivial index, completed
from the loop layout by inverting the access (TileLang 0.1.15's ``CompleteBufferFragment``,
``docs/reference.md#buffer-completion``).

Two paths, tried in TileLang's order:

1. the indices map the loop one-to-one onto the whole buffer (``x[i * 2 + j // 32, j % 32]``): the
   access is inverted and each buffer element follows the loop point it came from;
2. otherwise the digits of the loop variables the indices never read (``DivideUnusedIterators``:
   ``j % 2`` of ``B[i, j // 2]``) become one more, flattened output, the replica index ``rep_b``;
   the loop then maps one-to-one onto ``buffer x rep_b`` and is inverted as in 1, with the buffer's
   replicas running over ``rep_b`` (fastest) and the loop layout's own replicas.  A read-only
   buffer whose completion puts two replicas on one (thread, register) slot is fully replicated
   instead, as in TileLang.

>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 64), placeholder(1, 64)
>>> unused_digits((i, j // 2), (64, 64))
((1, 1, 2),)
>>> loop = Fragment.from_exprs((64, 64), (j % 32,), i * 2 + j // 32)
>>> print(invert_completion(loop, (i, j // 2), (64, 32), (64, 64), False).forward_thread)
_i * 2 + _j // 16
"""

from __future__ import annotations

from ..algebra.layout import Layout
from ..algebra.nodes import Const, Expr, Var, floordiv, floormod, linear, make_split, split_view, substitute
from ..algebra.shapes import placeholder
from ..errors import LayoutError, UnsupportedError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment, rep_var

__all__ = ["invert_completion", "unused_digits"]


def unused_digits(indices, loop) -> tuple[tuple[int, int, int], ...] | None:
    """``(dim, lower, extent)`` of each digit ``v_dim // lower % extent`` of the loop variables that
    no index reads, in TileLang's order: by loop dim, the higher digits of one variable first (a
    variable no index reads is one digit of its whole extent).  None when an index is not a sum of
    digits of single loop variables (TileLang would see fused iterators there), or digits of one
    variable overlap or leave a gap that is not a whole digit.

    >>> from layoutkit.algebra.layout import placeholder
    >>> i, j = placeholder(0, 8), placeholder(1, 64)
    >>> unused_digits((j % 32 // 2,), (8, 64))
    ((0, 1, 8), (1, 32, 2), (1, 1, 2))
    >>> unused_digits((i * 64 + j,), (8, 64))
    ()
    >>> unused_digits((i * j,), (8, 64)) is None
    True
    """
    loop_vars = [placeholder(d, n) for d, n in enumerate(loop)]
    used: list[list[tuple[int, int]]] = [[] for _ in loop]
    for e in indices:
        terms, _const = linear(e)
        for atom in terms:
            base, lower, upper = split_view(atom)
            if not isinstance(base, Var) or base not in loop_vars:
                return None
            d = loop_vars.index(base)
            top = loop[d] if upper is None else min(upper, loop[d])
            if top > lower:
                used[d].append((lower, top))
    out: list[tuple[int, int, int]] = []
    for d, n in enumerate(loop):
        gaps = []
        expected = 1
        for lower, top in sorted(used[d]):
            if lower < expected or lower % expected:
                return None  # overlapping digits (a variable read twice), or a gap that is no digit
            if lower > expected:
                gaps.append((d, expected, lower // expected))
            expected = top
        if expected < n:
            if n % expected:
                return None
            gaps.append((d, expected, n // expected))
        out += reversed(gaps)
    return tuple(out)


def _flattened(digits: tuple[tuple[int, int, int], ...], loop) -> tuple[Expr, int]:
    """``rep_b``, the digits flattened (the last one fastest), and its extent."""
    expr: Expr = Const(0)
    scale = 1
    for d, lower, extent in reversed(digits):
        var = placeholder(d, loop[d])
        digit = make_split(var, lower, lower * extent if lower * extent < loop[d] else None)
        expr = expr + digit * scale if scale != 1 else expr + digit
        scale *= extent
    return expr, scale


def invert_completion(loop_layout: Fragment, indices, shape, loop, is_write: bool) -> Fragment:
    """The buffer's fragment from ``loop_layout`` through the access ``indices`` (see the module
    docstring); :class:`UnsupportedError` when the access, with its unused digits, does not map the
    loop one-to-one onto the whole buffer (times ``rep_b``).  Unbound: the caller binds it."""
    what = f"cannot invert the access {tuple(str(e) for e in indices)} over the loop {tuple(loop)}"
    digits = unused_digits(indices, loop) or ()
    rep_b, r_idx = _flattened(digits, loop) if digits else (Const(0), 1)
    outputs = tuple(indices) + ((rep_b,) if digits else ())
    want = tuple(shape) + ((r_idx,) if digits else ())
    try:
        access = Layout.from_exprs(tuple(loop), outputs)
    except LayoutError as err:
        raise UnsupportedError(f"{what}: {err}") from None
    if tuple(access.output_shape) != want:
        raise UnsupportedError(f"{what}: it does not cover the buffer {tuple(shape)} one-to-one"
                               + (f" (with the unused loop digits, {r_idx} replicas)" if digits else ""))
    try:
        inv = access.inverse()
    except LayoutError as err:
        raise UnsupportedError(f"{what}: {err}") from None
    r_loop = loop_layout.replicate_size
    rep = rep_var(r_idx * r_loop)
    mapping: dict[Expr, Expr] = {v: placeholder(d, n) for d, (v, n) in enumerate(zip(inv.forward_vars, shape))}
    if digits:
        mapping[inv.forward_vars[-1]] = floormod(rep, Const(r_idx)) if r_loop > 1 else rep
    coords = [substitute(e, mapping) for e in inv.forward_index]
    loop_map: dict[Expr, Expr] = {placeholder(d, n): c for d, (n, c) in enumerate(zip(loop, coords))}
    if r_loop > 1:
        loop_map[loop_layout.rep_var] = floordiv(rep, Const(r_idx)) if digits else rep
    thread = substitute(loop_layout.forward_thread, loop_map)
    frag = Fragment.from_exprs(tuple(shape), None, thread, r_idx * r_loop).condense_rep_var()
    if digits and not is_write and not frag.prove_injective():
        return make_fully_replicated_fragment(shape, loop_layout.thread_extent)
    return frag
