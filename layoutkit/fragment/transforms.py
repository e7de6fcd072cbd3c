"""Fragments derived from a fragment: repeated, replicated, with ``_rep`` condensed, reshaped and expanded.

These are the bodies of the :class:`~layoutkit.fragment.fragment.Fragment` methods of the same names
(the methods keep the documentation and examples).

>>> F = Fragment([4], forward_thread_fn=lambda i: i)
>>> print(replicate(F, 2).forward_thread)
_rep * 4 + _i
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..algebra.layout import check_shape, placeholder, positive_int, reshape_mapping
from ..algebra.nodes import (
    Const,
    Expr,
    Var,
    add,
    floordiv,
    floormod,
    free_vars,
    linear,
    make_split,
    scale,
    split_view,
    substitute,
)
from ..errors import LayoutError, ShapeError
from .fragment import Fragment, rep_var


def repeat(
    fragment: Fragment, repeats: Sequence[int], repeat_on_thread: bool = False, lower_dim_first: bool = True
) -> Fragment:
    """``fragment.repeat(repeats, ...)``: the fragment tiled ``repeats[d]`` times along each dim."""
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        given: tuple[object, ...] = (repeats,)
    elif isinstance(repeats, Sequence) and not isinstance(repeats, (str, bytes)):
        given = tuple(repeats)
    else:
        raise ShapeError(f"repeat needs a sequence of positive factors, one per input dim; found {repeats!r}")
    if len(given) != len(fragment.input_shape):
        raise ShapeError(f"repeat needs one factor per input dim ({len(fragment.input_shape)}); found {given}")
    reps = tuple(positive_int(r, "repeat factor") for r in given)
    shape = tuple(e * r for e, r in zip(fragment.input_shape, reps))
    new_vars = [placeholder(d, e) for d, e in enumerate(shape)]
    mapping = {v: floormod(nv, Const(e)) for v, nv, e in zip(fragment.forward_vars, new_vars, fragment.input_shape)}
    order = range(len(shape) - 1, -1, -1) if lower_dim_first else range(len(shape))
    ri: Expr = Const(0)
    stride = 1
    for d in order:
        ri = add(ri, scale(floordiv(new_vars[d], Const(fragment.input_shape[d])), stride))
        stride *= reps[d]
    index = [substitute(e, mapping) for e in fragment.forward_index]
    thread = substitute(fragment._thread, mapping)
    if repeat_on_thread:
        thread = add(thread, scale(ri, fragment.thread_extent))
    else:
        if len(index) != 1:
            raise ShapeError(f"repeat on the index needs a 1-D index; {fragment.describe()} has {len(index)} dims")
        index[0] = add(index[0], scale(ri, fragment.output_shape[0]))
    return Fragment.from_exprs(shape, index, thread, fragment._replicate)


def replicate(fragment: Fragment, k: int) -> Fragment:
    """``fragment.replicate(k)``: ``k`` times more replicas."""
    k = positive_int(k, "replicate factor")
    r = fragment._replicate
    new_rep = rep_var(r * k)
    thread = substitute(fragment._thread, {fragment.rep_var: floormod(new_rep, Const(r))})
    thread = add(thread, scale(floordiv(new_rep, Const(r)), fragment.thread_extent))
    return Fragment.from_exprs(fragment.input_shape, fragment.forward_index, thread, r * k)


def condense_rep_var(fragment: Fragment) -> Fragment:
    """``fragment.condense_rep_var()``: only the digits of ``_rep`` the thread map reads."""
    from .splits import digit_extent, used_digits

    rep = fragment.rep_var
    if rep not in free_vars(fragment._thread):
        return fragment._rebuild(thread=fragment._thread, replicate=1)
    terms, _ = linear(fragment._thread)
    rep_terms = [(atom, coeff) for atom, coeff in terms.items() if rep in free_vars(atom)]
    pure_digits = all(split_view(atom)[0] == rep for atom, _ in rep_terms)
    if pure_digits:
        # TileLang order: larger thread stride -> lower digit of the new _rep
        digits = sorted(((abs(c), *split_view(a)[1:], a) for a, c in rep_terms), key=lambda d: -d[0])
        atoms = [d[3] for d in digits]
        extents = [digit_extent((rep, lo, up if up is not None else fragment._replicate)) for _, lo, up, _ in digits]
    else:
        used = sorted(set(used_digits(fragment._thread, (rep,))[rep]))
        merged: list[tuple[int, int]] = []
        for lo, up in used:
            if merged and lo < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(up, merged[-1][1]))
            else:
                merged.append((lo, up))
        atoms = [make_split(rep, lo, None if up >= fragment._replicate else up) for lo, up in merged]
        extents = [digit_extent((rep, lo, up)) for lo, up in merged]
    new_r = math.prod(extents)
    if new_r > fragment._replicate or (new_r == fragment._replicate and not pure_digits):
        # nothing to drop, and no digits to re-order
        return fragment
    # a stand-in for the new _rep, which may equal the old one (same extent)
    fresh = Var("_rep_condensed", new_r)
    mapping: dict[Expr, Expr] = {}
    stride = 1
    for atom, ext in zip(atoms, extents):
        digit = floordiv(fresh, Const(stride))
        mapping[atom] = digit if stride * ext >= new_r else floormod(digit, Const(ext))
        stride *= ext
    thread = substitute(fragment._thread, mapping)
    if rep in free_vars(thread):
        raise LayoutError(f"cannot condense _rep in {fragment._thread}: it is read other than through digits")
    thread = substitute(thread, {fresh: rep_var(new_r)})
    if new_r == fragment._replicate and thread == fragment._thread:
        return fragment
    return fragment._rebuild(thread=thread, replicate=new_r)


def reshape(fragment: Fragment, shape: Sequence[int], rescale_num: int = 1, rescale_den: int = 1) -> Fragment:
    """``fragment.reshape(shape)``: index and thread map reshaped (no change of element width)."""
    if rescale_num != rescale_den:
        raise ShapeError("Fragment.reshape does not change element widths; reshape a plain Layout for that")
    new_shape = check_shape(shape, "reshape shape")
    if math.prod(new_shape) != fragment.size:
        raise ShapeError(f"reshape of {fragment.input_shape} to {new_shape}: {fragment.size} != {math.prod(new_shape)}")
    mapping = reshape_mapping(fragment.input_shape, new_shape)
    index = tuple(substitute(e, mapping) for e in fragment.forward_index)
    return Fragment.from_exprs(new_shape, index, substitute(fragment._thread, mapping), fragment._replicate,
                                 fragment._thread_range)


def expand(fragment: Fragment, leading_shape: Sequence[int]) -> Fragment:
    """``fragment.expand(leading_shape)``: leading dims passed through as leading index outputs."""
    lead = check_shape(leading_shape, "expand leading shape")
    shape = lead + fragment.input_shape
    new_vars = [placeholder(d, e) for d, e in enumerate(shape)]
    mapping = {v: new_vars[len(lead) + d] for d, v in enumerate(fragment.forward_vars)}
    index = tuple(new_vars[: len(lead)]) + tuple(substitute(e, mapping) for e in fragment.forward_index)
    return Fragment.from_exprs(shape, index, substitute(fragment._thread, mapping), fragment._replicate,
                                 fragment._thread_range)
