"""The structure of IntTuples: rank, depth, modes, products, flattening and congruence (CuTe's
``rank``, ``depth``, ``get``, ``size``, ``flatten``, ``congruent``, ...).

These read a shape without building new integers; the arithmetic that does (``ceil_div``, compact
strides) is :mod:`~layoutkit.tla.int_tuple_arith`.  Re-exported from :mod:`layoutkit.tla.int_tuple`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ShapeError
from .int_tuple_check import bounded_nesting, int_leaf, nesting_error, safe_text
from .static_int import Int, is_int

# ---- structure ------------------------------------------------------------------------------------


def _shape_of(x: object) -> object:
    """The shape of a TLA layout (anything with ``_tla_shape``), else ``x`` itself."""
    return getattr(x, "_tla_shape", x)


def rank(x: object) -> int:
    """Number of top-level modes; an integer has rank 1 (a Layout: the rank of its shape).

    >>> rank((2, (3, 4))), rank(7)
    (2, 1)
    """
    x = _shape_of(x)
    return len(x) if type(x) is tuple else 1


@bounded_nesting
def depth(x: object) -> int:
    """Nesting depth: 0 for an integer, 1 + the deepest mode for a tuple.

    >>> depth(4), depth((4, 2)), depth(((16, 7), (16, 7)))
    (0, 1, 2)
    """
    return _depth(_shape_of(x))


def _depth(x: object) -> int:
    if type(x) is not tuple:
        return 0
    deepest = 0
    for v in x:
        if type(v) is tuple:
            d = _depth(v)
            if d > deepest:
                deepest = d
    return deepest + 1


def get(x: object, *index: int) -> object:
    """``get<I0, I1, ...>(x)``: walk down the modes; ``get(int, 0)`` is the int itself (CuTe).

    >>> get(((16, 7), (16, 7)), 1, 0)
    16
    >>> get((2, 3), 2)
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: get: mode index 2 is out of range for (2,3) of rank 2
    """
    mode = getattr(x, "mode", None)  # a layout walks its own modes (this module sits below the layout type)
    if mode is not None and callable(mode):
        return mode(*index)
    cur = x
    for i in index:
        if type(cur) is tuple:
            if not (is_int(i) and -len(cur) <= i < len(cur)):
                raise ShapeError(f"get: mode index {i!r} is out of range for {safe_text(cur)} of rank {len(cur)}")
            cur = cur[i]
        elif i != 0:
            raise ShapeError(f"get: mode index {i!r} is out of range for the integer {safe_text(cur)} (rank 1)")
    return cur


def product(x: object) -> int:
    """Product of every leaf (``size`` of a shape); ``()`` has product 1.

    >>> product(((16, 7), (16, 7))), product(Int(4))
    (12544, _4)
    """
    try:
        return leaf_product(x)
    except RecursionError:
        raise nesting_error("product") from None


def leaf_product(x: object) -> int:
    if type(x) is tuple:
        result: int = Int(1)
        for v in x:
            result = result * leaf_product(v)
        return result
    return int_leaf(x, "product")


size = product


@bounded_nesting
def product_each(x: object) -> tuple[int, ...]:
    """The product of each top-level mode (an integer counts as one mode).

    >>> product_each(((16, 7), (16, 7))), product_each(8)
    ((112, 112), (8,))
    """
    if type(x) is tuple:
        return tuple(product(v) for v in x)
    return (int_leaf(x, "product_each"),)


@bounded_nesting
def flatten(x: object) -> object:
    """Leaves in order: a tuple for a tuple, the integer itself for an integer (C++ ``flatten``).

    >>> flatten(((4, 2), (4, (3, 5)))), flatten(6)
    ((4, 2, 4, 3, 5), 6)
    """
    if type(x) is tuple:
        return leaves(x)
    return x


def leaves(x: object) -> tuple[Any, ...]:
    """Leaves in order, always as a tuple.

    >>> leaves(6), leaves((1, (2, 3)))
    ((6,), (1, 2, 3))
    """
    if type(x) is tuple:
        out: list[Any] = []  # the leaves of shapes are ints; of coordinates also arrays or Exprs
        for v in x:
            if type(v) is tuple:
                out.extend(leaves(v))
            else:
                out.append(v)
        return tuple(out)
    return (x,)


@bounded_nesting
def unflatten(flat: tuple[object, ...], profile: object) -> object:
    """Fold a flat tuple back into the nesting of ``profile`` (same number of leaves).

    >>> unflatten((1, 2, 3), ((0, 0), 0))
    ((1, 2), 3)
    """
    if not isinstance(flat, (tuple, list)):
        raise ShapeError(f"unflatten: the values must be a tuple; found {type(flat).__name__} {flat!r}")
    flat = tuple(flat)
    if len(flat) != len(leaves(profile)):
        raise ShapeError(
            f"unflatten: {len(flat)} values do not fit the {len(leaves(profile))} leaves of {safe_text(profile)}"
        )
    it = iter(flat)

    def build(p: object) -> object:
        return tuple(build(v) for v in p) if type(p) is tuple else next(it)

    return build(profile)


@bounded_nesting
def profile(x: object) -> object:
    """The nesting of ``x`` with every leaf replaced by 0 (CuTe ``repeat_like(x, _0)``).

    >>> profile((4, (2, 3)))
    (0, (0, 0))
    """
    if type(x) is tuple:
        return tuple(profile(v) for v in x)
    return 0


@bounded_nesting
def congruent(a: object, b: object) -> bool:
    """Same nesting (profile).

    >>> congruent((4, (2, 3)), (1, (8, 4))), congruent((4, 6), (4, (2, 3)))
    (True, False)
    """
    if type(a) is tuple:
        if type(b) is not tuple or len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if not congruent(x, y):
                return False
        return True
    return type(b) is not tuple


@bounded_nesting
def weakly_congruent(a: object, b: object) -> bool:
    """``a``'s nesting is a coarsening of ``b``'s (an integer in ``a`` may stand for a tuple in ``b``).

    >>> weakly_congruent((4, 6), (4, (2, 3))), weakly_congruent((4, (2, 3)), (4, 6))
    (True, False)
    """
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))
    return True


@bounded_nesting
def compatible(a: object, b: object) -> bool:
    """Every coordinate of shape ``a`` is a coordinate of shape ``b`` (same size at each leaf of ``a``).

    >>> compatible(24, (4, 6)), compatible((4, 6), (4, (2, 3))), compatible((4, 6), (6, 4))
    (True, True, False)
    """
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))
    return a == product(b)


__all__ = ["compatible", "congruent", "depth", "flatten", "get", "leaf_product", "leaves", "product", "product_each",
           "profile", "rank", "size", "unflatten", "weakly_congruent"]
