"""Layouts derived from a layout: linearized, repeated, expanded, reshaped, composed and inverted.

These are the bodies of the :class:`~layoutkit.algebra.layout.Layout` methods of the same names (the
methods keep the documentation and examples).

>>> from layoutkit.algebra.layout import Layout
>>> print(repeat(Layout([4], lambda i: i), 0, 2))
Layout((8,) -> (2, 4), transform: (_i,) -> (_i // 4, _i % 4))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np

from ..errors import CoordinateError, LayoutError, NotBijectiveError, ShapeError, UnsupportedError
from .layout import Layout
from .nodes import Const, Expr, Var
from .proof import describe_witness
from .shapes import check_shape, enumerable_grid, placeholder, positive_int, row_major_flat, unflatten_mapping
from .simplify import add, floordiv, floormod, scale, substitute


def linearized(layout: Layout) -> Layout:
    """``layout.linearized()``: one output, the row-major offset over ``output_shape``."""
    shape = layout.output_shape
    total: Expr = Const(0)
    for k, e in enumerate(layout._forward):
        total = add(total, scale(e, math.prod(shape[k + 1 :])))
    return Layout.from_exprs(layout._input_shape, (total,))


def repeat(layout: Layout, dim: int, factor: int) -> Layout:
    """``layout.repeat(dim, factor)``: input dim ``dim`` grown by ``factor``, the repeat number a new first output."""
    dim = layout._dim(dim)
    factor = positive_int(factor, "repeat factor")
    e = layout._input_shape[dim]
    shape = list(layout._input_shape)
    shape[dim] = e * factor
    new = placeholder(dim, e * factor)
    mapping: dict[Var, Expr] = {
        v: (new if d == dim else placeholder(d, shape[d])) for d, v in enumerate(layout._vars)
    }
    mapping[layout._vars[dim]] = floormod(new, Const(e))
    exprs = (floordiv(new, Const(e)),) + tuple(substitute(x, mapping) for x in layout._forward)
    return Layout.from_exprs(shape, exprs)


def expand(layout: Layout, leading_shape: Sequence[int]) -> Layout:
    """``layout.expand(leading_shape)``: leading input dims passed through as leading outputs."""
    lead = check_shape(leading_shape, "expand leading shape")
    shape = lead + layout._input_shape
    new_vars = [placeholder(d, e) for d, e in enumerate(shape)]
    mapping = {v: new_vars[len(lead) + d] for d, v in enumerate(layout._vars)}
    exprs: tuple[Expr, ...] = tuple(new_vars[: len(lead)]) + tuple(substitute(x, mapping) for x in layout._forward)
    out = Layout.from_exprs(shape, exprs)
    hook = getattr(layout._tag, "expanded", None)
    tag = hook(shape) if callable(hook) else None
    return out if tag is None else out.with_tag(tag)


def reshape(layout: Layout, shape: Sequence[int], rescale_num: int = 1, rescale_den: int = 1) -> Layout:
    """``layout.reshape(shape, rescale_num, rescale_den)``: the same storage under a new input shape."""
    new_shape = check_shape(shape, "reshape shape")
    num, den = positive_int(rescale_num, "rescale_num"), positive_int(rescale_den, "rescale_den")
    if layout.size * num != math.prod(new_shape) * den:
        raise ShapeError(
            f"reshape of {layout._input_shape} to {new_shape} with rescale {num}/{den}: "
            f"{layout.size} * {num} != {math.prod(new_shape)} * {den}"
        )
    flat = row_major_flat(new_shape)
    g = math.gcd(num, den)
    num, den = num // g, den // g
    if den == 1 and num > 1:
        old_flat = floordiv(flat, Const(num))
    elif num == 1 and den > 1:
        _check_groups_contiguous(layout, den)
        old_flat = scale(flat, den)
    elif num == 1 and den == 1:
        old_flat = flat
    else:
        raise UnsupportedError(f"reshape rescale {rescale_num}/{rescale_den} is neither a narrowing nor a widening")
    mapping = unflatten_mapping(layout._input_shape, old_flat)
    exprs = [substitute(x, mapping) for x in layout._forward]
    if num > 1:
        exprs[-1] = add(scale(exprs[-1], num), floormod(flat, Const(num)))
    elif den > 1:
        exprs[-1] = floordiv(exprs[-1], Const(den))
    return Layout.from_exprs(new_shape, exprs)


def _check_groups_contiguous(layout: Layout, f: int) -> None:
    """Raise unless every ``f`` consecutive elements are contiguous and aligned in the last output."""
    table = layout.table().reshape(-1, len(layout._forward))
    if table.shape[0] % f:
        raise ShapeError(f"widening by {f} needs the element count {table.shape[0]} to be a multiple of {f}")
    groups = table.reshape(-1, f, table.shape[1])
    first = groups[:, :1, :]
    lane = np.arange(f)
    ok_rest = np.all(groups[:, :, :-1] == first[:, :, :-1], axis=(1, 2))
    ok_last = np.all(groups[:, :, -1] == first[:, :, -1] + lane, axis=1) & (first[:, 0, -1] % f == 0)
    bad = np.flatnonzero(~(ok_rest & ok_last))
    if bad.size:
        start = tuple(int(v) for v in np.unravel_index(int(bad[0]) * f, layout._input_shape))
        raise ShapeError(
            f"widening reshape by {f}: the {f} elements starting at {start} are not contiguous and aligned "
            f"in the last output of {layout}"
        )


def compose(layout: Layout, inner: Layout) -> Layout:
    """``layout.compose(inner)``: ``x -> layout(inner(x))``."""
    if not isinstance(inner, Layout):
        raise LayoutError(f"compose expects a Layout, found {type(inner).__name__}")
    if len(inner.forward_index) != len(layout._input_shape):
        raise ShapeError(
            f"compose: {inner} has {len(inner.forward_index)} outputs but {layout} takes "
            f"{len(layout._input_shape)} inputs"
        )
    mapping = dict(zip(layout._vars, inner.forward_index))
    if all(0 <= e.lo and e.hi < n for e, n in zip(inner.forward_index, layout._input_shape)):
        # the node intervals contain the image: inside without evaluating the domain
        return Layout.from_exprs(inner.input_shape, tuple(substitute(e, mapping) for e in layout._forward))
    lows, highs = inner._output_range(enumerable_grid(inner.input_shape, lambda: f"compose with {inner.describe()}"))
    for k, (lo, hi) in enumerate(zip(lows, highs)):
        if lo < 0 or hi >= layout._input_shape[k]:
            bad = lo if lo < 0 else hi
            witness = inner._find(lambda outs, k=k, bad=bad: outs[k] == bad)
            raise CoordinateError(
                f"compose: {inner} maps {witness} to output {k} = {bad}, outside the input shape "
                f"{layout._input_shape} of {layout}"
            )
    return Layout.from_exprs(inner.input_shape, tuple(substitute(e, mapping) for e in layout._forward))


def inverse(layout: Layout) -> Layout:
    """``layout.inverse()``: the closed-form inverse, cached on the layout."""
    hit: Layout | None = layout._cache.get("inverse")
    if hit is not None:
        return hit
    inv = _permutation_inverse(layout)
    if inv is None:
        inv = _proved_by_round_trip(layout)
    if inv is not None:
        layout._cache["inverse"] = inv
        return inv
    proof = layout.prove_bijective()
    if not proof:
        raise NotBijectiveError(
            f"{layout} is not bijective onto its output box {layout.output_shape}: "
            f"{describe_witness(proof.witness or {})}",
            proof.witness,
        )
    from .inverse import solve_inverse

    outs = tuple(placeholder(k, e) for k, e in enumerate(layout.output_shape))
    sol = solve_inverse(layout._forward, layout._vars, outs)
    inv = None if sol is None else Layout.from_exprs(layout.output_shape, sol)
    if inv is None or not _round_trips(layout, inv):
        inv = _f2_inverse(layout)
        if inv is not None and not _round_trips(layout, inv):
            inv = None
    if inv is None:
        raise UnsupportedError(f"{layout} is bijective but layoutkit found no closed-form inverse for it")
    layout._cache["inverse"] = inv
    return inv


def _permutation_inverse(layout: Layout) -> Layout | None:
    """When the outputs are the input variables in some order (a transpose), the inverse puts them back: a
    bijection onto the permuted extents by its form, with nothing to prove or check.  None otherwise.

    The expressions are the ones digit matching finds (each input is the whole of one output; an input of
    extent 1 is the constant 0)."""
    fwd, variables = layout._forward, layout._vars
    if len(fwd) != len(variables) or set(fwd) != set(variables):
        return None
    where = {v: k for k, v in enumerate(fwd)}
    outs = tuple(placeholder(k, cast(Var, e).extent) for k, e in enumerate(fwd))
    return Layout.from_exprs(tuple(cast(int, o.extent) for o in outs),
                             tuple(Const(0) if v.extent == 1 else outs[where[v]] for v in variables))


def _proved_by_round_trip(layout: Layout) -> Layout | None:
    """The digit-matching inverse of an F2-affine layout when the bit matrices prove ``inv(layout(x)) == x`` and
    the output box has as many points as the domain, else None (the caller takes the general path).

    Injective (it has a left inverse) from a domain onto a box of the same size, with every image in the box (an
    F2 map's outputs are non-negative and ``output_shape`` is their maximum plus one): a bijection onto the box,
    so the separate rank test would only repeat the proof."""
    from .bitlinear import composes_to_identity
    from .inverse import solve_inverse

    fwd = layout._bit_linear()
    if fwd is None or math.prod(layout.output_shape) != layout.size:
        return None
    outs = tuple(placeholder(k, e) for k, e in enumerate(layout.output_shape))
    sol = solve_inverse(layout._forward, layout._vars, outs)
    if sol is None:
        return None
    inv = Layout.from_exprs(layout.output_shape, sol)
    back = inv._bit_linear()
    return inv if back is not None and composes_to_identity(fwd, back) is True else None


def _round_trips(layout: Layout, inv: Layout) -> bool:
    """``inv(layout(x)) == x`` everywhere: on the F2 bit matrices when both maps are affine over the bits (no
    evaluation), else over every coordinate."""
    from .bitlinear import composes_to_identity

    fwd, back = layout._bit_linear(), inv._bit_linear()
    if fwd is not None and back is not None:
        verdict = composes_to_identity(fwd, back)
        if verdict is not None:
            return verdict
    coords = np.moveaxis(np.indices(layout._input_shape), 0, -1)
    return bool(np.array_equal(inv.apply(layout.table()), coords))


def _f2_inverse(layout: Layout) -> Layout | None:
    from .linear import expressions_from_bases, inverse_bases

    view, _ = layout._linear_view()
    if view is None:
        return None
    bases = inverse_bases(view, layout.output_shape)
    if bases is None:
        return None
    outs = tuple(placeholder(k, e) for k, e in enumerate(layout.output_shape))
    return Layout.from_exprs(layout.output_shape, expressions_from_bases(bases, outs, len(layout._input_shape)))
