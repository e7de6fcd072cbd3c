"""Placeholders, shape and arity checks, and row-major index helpers shared by layouts and fragments.

>>> placeholder(0, 4), check_shape(8), positive_int(3, "factor")
(Var('_i', 4), (8,), 3)
>>> print(row_major_flat((2, 4)))
_i * 4 + _j
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import ExprError, ShapeError
from .nodes import Const, Expr, Var, as_expr
from .simplify import add, floordiv, floormod, scale

_NAMES = "ijklmnopqrstuvwxyzabcdefgh"


def placeholder(dim: int, extent: int | None) -> Var:
    """The TileLang placeholder of input dim ``dim``: ``_i, _j, _k, _l, ...``.

    >>> placeholder(2, 8)
    Var('_k', 8)
    """
    return Var("_" + _NAMES[dim % len(_NAMES)] + ("" if dim < len(_NAMES) else str(dim // len(_NAMES))), extent)


def check_shape(shape: object, what: str = "Layout input shape") -> tuple[int, ...]:
    """Validate a shape: a non-empty sequence of positive integers."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims: tuple[object, ...] = tuple(shape)  # type: ignore[arg-type]
    except TypeError:
        raise ShapeError(f"{what} must be a sequence of positive integers; found {shape!r}") from None
    if not dims:
        raise ShapeError(f"{what} must have at least one dimension; found ()")
    out = []
    for d, e in enumerate(dims):
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
            raise ShapeError(f"{what} must be positive integers; found {dims!r} (dim {d} is {e!r})")
        if e <= 0:
            raise ShapeError(f"{what} must be positive integers; found {dims!r} (dim {d} is {e})")
        out.append(int(e))
    return tuple(out)


def positional_arity(fn: Callable[..., object]) -> tuple[int, int | None] | None:
    """``(required, most)`` positional arguments ``fn`` takes (``most`` None for ``*args``), or None
    when its signature cannot be read.

    >>> positional_arity(lambda i, j=0: i), positional_arity(lambda *a: 0)
    ((1, 2), (0, None))
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    lo, hi = 0, 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return lo, None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            hi += 1
            if p.default is p.empty:
                lo += 1
    return lo, hi


def call_index_fn(fn: Callable[..., object], args: Sequence[Expr], what: str) -> tuple[Expr, ...]:
    """Call a user index function with placeholder variables and normalise what it returns."""
    arity = positional_arity(fn)
    n = len(args)
    if arity is not None and not (arity[0] <= n and (arity[1] is None or n <= arity[1])):
        want = arity[0] if arity[0] == arity[1] else f"{arity[0]}..{arity[1]}"
        raise ShapeError(f"{what} must take {n} arguments (one per input dim); the function takes {want}")
    result = fn(*args)
    return normalize_outputs(result, what)


def normalize_outputs(result: object, what: str) -> tuple[Expr, ...]:
    items = result if isinstance(result, (tuple, list)) else (result,)
    if not items:
        raise ShapeError(f"{what} returned no output expressions")
    out = []
    for k, item in enumerate(items):
        if isinstance(item, (np.ndarray,)) or item is None:
            raise ExprError(f"{what}: output {k} is {item!r}, expected an integer index expression")
        try:
            out.append(as_expr(item))
        except ExprError as err:
            raise ExprError(f"{what}: output {k}: {err}") from None
    return tuple(out)


def row_major_flat(shape: Sequence[int]) -> Expr:
    """``sum_d x_d * stride_d`` over the placeholders of ``shape`` (row-major)."""
    flat: Expr = Const(0)
    for d, (e, stride) in enumerate(zip(shape, _strides(shape))):
        flat = add(flat, scale(placeholder(d, e), stride))
    return flat


def unflatten_mapping(shape: Sequence[int], flat: Expr) -> dict[Var, Expr]:
    """Placeholders of ``shape`` as digits of a row-major flat index expression."""
    return {
        placeholder(d, e): floormod(floordiv(flat, Const(stride)), Const(e))
        for d, (e, stride) in enumerate(zip(shape, _strides(shape)))
    }


def reshape_mapping(old_shape: Sequence[int], new_shape: Sequence[int]) -> dict[Var, Expr]:
    """Substitution that re-expresses the placeholders of ``old_shape`` through those of
    ``new_shape`` (same element count, row-major on both sides)."""
    return unflatten_mapping(old_shape, row_major_flat(new_shape))


def _strides(shape: Sequence[int]) -> list[int]:
    return [math.prod(shape[d + 1 :]) for d in range(len(shape))]


def positive_int(value: object, what: str) -> int:
    """``value`` as an int when it is a positive integer (not a bool), else a ShapeError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ShapeError(f"{what} must be a positive integer; found {value!r}")
    return int(value)
