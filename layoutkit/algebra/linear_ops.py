"""Structural operations on :class:`~layoutkit.algebra.linear.F2Linear` maps: Triton's product and
its two quotients, sublayouts, concatenation and transposition of dims.

Laws (tested): ``(a * b).divide_left(a) == b`` and ``(a * b).divide_right(b) == a`` when the
quotient's dims are those of the product; ``f.transpose_ins(order)`` is the same map read in another
dim order; ``f.concat_ins(g).sublayout(f.in_names, f.out_names) == f``.

>>> from layoutkit.algebra.linear import F2Linear
>>> a, b = F2Linear.identity(2, "x", "y"), F2Linear.from_images([2, 1], "x", "y")
>>> (a * b).bases
(((1,), (4,), (2,)),)
>>> (a * b).divide_left(a) == b, (a * b).divide_right(b) == a
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ShapeError
from .bits import bit_width

if TYPE_CHECKING:
    from .linear import F2Linear

_Named = tuple[dict[str, int], dict[str, int], dict[str, list[dict[str, int]]]]


def _named(f: F2Linear) -> _Named:
    """The map keyed by dim names, so that dim order does not matter."""
    outs = f.out_names
    return (dict(f.in_dims), dict(f.out_dims),
            {n: [dict(zip(outs, im)) for im in per] for n, per in zip(f.in_names, f.bases)})


def same_map(a: F2Linear, b: F2Linear) -> bool:
    """Equal up to the order in which dims are listed."""
    return _named(a) == _named(b)


def supremum(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """The shortest list holding both name lists as subsequences, ``a``'s names first where either could
    come next (Triton's dim order for ``*``); dims the two share must be in the same relative order.

    >>> supremum(["a", "b"], ["a", "c"]), supremum(["a", "b"], ["b", "c"])
    (['a', 'b', 'c'], ['a', 'b', 'c'])
    >>> supremum(["register", "warp"], ["register", "lane", "warp"])
    ['register', 'lane', 'warp']
    """
    out: list[str] = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            out.append(a[i])
            i, j = i + 1, j + 1
        elif a[i] not in b[j:]:
            out.append(a[i])
            i += 1
        elif b[j] not in a[i:]:
            out.append(b[j])
            j += 1
        else:
            raise ShapeError(f"product: the dims {list(a)} and {list(b)} share {a[i]!r} and {b[j]!r} in opposite "
                             "orders (no dim order holds both)")
    return out + list(a[i:]) + list(b[j:])


def product(inner: F2Linear, outer: F2Linear) -> F2Linear:
    """``inner * outer`` (see :meth:`F2Linear.__mul__`)."""
    in_names = supremum(inner.in_names, outer.in_names)
    out_names = supremum(inner.out_names, outer.out_names)
    inner_out, outer_out = dict(inner.out_dims), dict(outer.out_dims)
    shift = {n: bit_width(inner_out.get(n, 1)) for n in out_names}

    def embed(f: F2Linear, image: tuple[int, ...], shifted: bool) -> tuple[int, ...]:
        values = dict(zip(f.out_names, image))
        return tuple(values.get(n, 0) << (shift[n] if shifted else 0) for n in out_names)

    inner_b, outer_b = dict(zip(inner.in_names, inner.bases)), dict(zip(outer.in_names, outer.bases))
    bases = tuple(
        tuple(embed(inner, im, False) for im in inner_b.get(n, ())) + tuple(embed(outer, im, True)
                                                                          for im in outer_b.get(n, ()))
        for n in in_names
    )
    out_sizes = tuple(inner_out.get(n, 1) * outer_out.get(n, 1) for n in out_names)
    return type(inner)(tuple((n, 1 << len(b)) for n, b in zip(in_names, bases)), tuple(zip(out_names, out_sizes)),
                       bases)


def _quotient_sizes(whole: F2Linear, part: F2Linear) -> tuple[tuple[str, int], ...] | None:
    if not set(part.in_names) <= set(whole.in_names) or not set(part.out_names) <= set(whole.out_names):
        return None
    part_out = dict(part.out_dims)
    sizes = []
    for n, s in whole.out_dims:
        k = part_out.get(n, 1)
        if s % k:
            return None
        sizes.append((n, s // k))
    return tuple(sizes)


def divide_left(whole: F2Linear, inner: F2Linear) -> F2Linear | None:
    """``C`` with ``inner * C == whole`` (dims in ``whole``'s order), or None."""
    sizes = _quotient_sizes(whole, inner)
    if sizes is None:
        return None
    inner_out, inner_bits = dict(inner.out_dims), dict(zip(inner.in_names, inner.in_bits))
    shift = [bit_width(inner_out.get(n, 1)) for n in whole.out_names]
    bases = []
    for n, per in zip(whole.in_names, whole.bases):
        rest = per[inner_bits.get(n, 0):]
        if inner_bits.get(n, 0) > len(per) or any(v & ((1 << sh) - 1) for im in rest for v, sh in zip(im, shift)):
            return None
        bases.append(tuple(tuple(v >> sh for v, sh in zip(im, shift)) for im in rest))
    c = type(whole)(tuple((n, 1 << len(b)) for n, b in zip(whole.in_names, bases)), sizes, tuple(bases))
    return c if same_map(product(inner, c), whole) else None


def divide_right(whole: F2Linear, outer: F2Linear) -> F2Linear | None:
    """``C`` with ``C * outer == whole`` (dims in ``whole``'s order), or None."""
    sizes = _quotient_sizes(whole, outer)
    if sizes is None:
        return None
    outer_bits = dict(zip(outer.in_names, outer.in_bits))
    bases = []
    for n, per in zip(whole.in_names, whole.bases):
        keep = len(per) - outer_bits.get(n, 0)
        if keep < 0 or any(v >= s for im in per[:keep] for v, (_, s) in zip(im, sizes)):
            return None
        bases.append(per[:keep])
    c = type(whole)(tuple((n, 1 << len(b)) for n, b in zip(whole.in_names, bases)), sizes, tuple(bases))
    return c if same_map(product(c, outer), whole) else None


def _check_names(have: Sequence[str], want: Sequence[str], side: str, what: str) -> None:
    unknown = [n for n in want if n not in have]
    if unknown:
        raise ShapeError(f"{what}: no {side} dim named {unknown[0]!r}; the map has {list(have)}")


def sublayout(f: F2Linear, ins: Sequence[str], outs: Sequence[str]) -> F2Linear:
    """The named in and out dims only (see :meth:`F2Linear.sublayout`)."""
    _check_names(f.in_names, ins, "in", "sublayout")
    _check_names(f.out_names, outs, "out", "sublayout")
    keep_in = [d for d, n in enumerate(f.in_names) if n in ins]
    keep_out = [k for k, n in enumerate(f.out_names) if n in outs]
    bases = tuple(tuple(tuple(im[k] for k in keep_out) for im in f.bases[d]) for d in keep_in)
    return type(f)(tuple(f.in_dims[d] for d in keep_in), tuple(f.out_dims[k] for k in keep_out), bases)


def concat_ins(a: F2Linear, b: F2Linear) -> F2Linear:
    """``(x, y) -> a(x) ^ b(y)`` (see :meth:`F2Linear.concat_ins`)."""
    if a.out_dims != b.out_dims:
        raise ShapeError(f"concat_ins: expected the same out dims; found {a.out_dims} and {b.out_dims}")
    clash = set(a.in_names) & set(b.in_names)
    if clash:
        raise ShapeError(f"concat_ins: in dim names must be disjoint; both have {sorted(clash)}")
    return type(a)(a.in_dims + b.in_dims, a.out_dims, a.bases + b.bases)


def concat_outs(a: F2Linear, b: F2Linear) -> F2Linear:
    """``x -> (a(x), b(x))`` (see :meth:`F2Linear.concat_outs`)."""
    if a.in_dims != b.in_dims:
        raise ShapeError(f"concat_outs: expected the same in dims; found {a.in_dims} and {b.in_dims}")
    clash = set(a.out_names) & set(b.out_names)
    if clash:
        raise ShapeError(f"concat_outs: out dim names must be disjoint; both have {sorted(clash)}")
    bases = tuple(tuple(x + y for x, y in zip(pa, pb)) for pa, pb in zip(a.bases, b.bases))
    return type(a)(a.in_dims, a.out_dims + b.out_dims, bases)


def _permutation(have: Sequence[str], order: Sequence[str], what: str) -> list[int]:
    if sorted(order) != sorted(have) or len(set(order)) != len(order):
        raise ShapeError(f"{what}: expected a permutation of {list(have)}; found {list(order)}")
    return [list(have).index(n) for n in order]


def transpose(f: F2Linear, ins: Sequence[str] | None, outs: Sequence[str] | None) -> F2Linear:
    """Relist the in dims in order ``ins`` and/or the out dims in order ``outs``."""
    pi = list(range(len(f.in_dims))) if ins is None else _permutation(f.in_names, ins, "transpose_ins")
    po = list(range(len(f.out_dims))) if outs is None else _permutation(f.out_names, outs, "transpose_outs")
    bases = tuple(tuple(tuple(im[k] for k in po) for im in f.bases[d]) for d in pi)
    return type(f)(tuple(f.in_dims[d] for d in pi), tuple(f.out_dims[k] for k in po), bases)


__all__ = [
    "supremum", "product", "divide_left", "divide_right", "sublayout", "concat_ins", "concat_outs", "transpose",
    "same_map",
]
