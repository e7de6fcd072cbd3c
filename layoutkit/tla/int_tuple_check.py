"""The IntTuple type and the checks every TLA module builds on: validation (:func:`as_int_tuple`), the
nesting bound (:data:`MAX_NESTING`, :func:`bounded_nesting`) and the CuTe print form (:func:`to_str`).

Separate from :mod:`~layoutkit.tla.int_tuple_structure` and :mod:`~layoutkit.tla.int_tuple_arith` because
both of them use these (error messages print their arguments, every recursion is bounded); the names
are re-exported from :mod:`layoutkit.tla.int_tuple`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar, cast

from ..errors import LimitError, ShapeError
from .static_int import Int, is_int

IntTuple: TypeAlias = "int | tuple[IntTuple, ...]"
"""An integer or a (nested) tuple of IntTuples (leaves may be static :class:`Int`)."""

MAX_NESTING = 32
"""Deepest nesting of an IntTuple (shape, stride, coordinate) the TLA layer accepts; real layouts nest
two or three levels, and the recursive algebra must not run out of stack on a hostile one."""

_F = TypeVar("_F", bound=Callable[..., Any])


def bounded_nesting(fn: _F) -> _F:
    """Turn a RecursionError inside ``fn`` (an argument nested past any real IntTuple) into a
    :class:`~layoutkit.errors.LimitError` naming ``fn``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise nesting_error(fn.__name__) from None

    return cast(_F, wrapper)


def nesting_error(what: str, path: tuple[int, ...] = ()) -> LimitError:
    """The error for an IntTuple argument of ``what`` nested past :data:`MAX_NESTING` (a tuple at
    ``path``, when known)."""
    where = f" (found a tuple at depth {len(path)})" if path else ""
    return LimitError(f"{what}: an argument nests deeper than the {MAX_NESTING} levels an IntTuple may have{where}",
                      MAX_NESTING, len(path) or None)


def int_leaf(x: object, what: str) -> int:
    """``x`` when it is an integer leaf, else a ShapeError naming ``what``."""
    if not is_int(x):
        raise ShapeError(f"{what} needs integer leaves (an IntTuple); found {type(x).__name__} {x!r}")
    return x


# ---- validation -----------------------------------------------------------------------------------


def as_int_tuple(x: object, what: str = "IntTuple", minimum: int | None = None) -> IntTuple:
    """Validate and normalise an IntTuple: lists become tuples, numpy integers become ints
    (static :class:`Int` leaves stay static).  ``minimum`` bounds every leaf from below.

    >>> as_int_tuple([4, (2, Int(3))])
    (4, (2, _3))
    >>> as_int_tuple((4, 0), "shape", minimum=1)
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: shape must have integer leaves >= 1; found (4,0) (leaf (1,) is 0)
    """
    return _normalise(x, what, minimum, x, ())


def _normalise(x: object, what: str, minimum: int | None, whole: object, path: tuple[int, ...]) -> IntTuple:
    t = type(x)
    if (t is int or t is Int) and (minimum is None or x >= minimum):  # type: ignore[operator]
        return x  # type: ignore[return-value]
    if isinstance(x, (tuple, list)):
        if len(path) >= MAX_NESTING:
            raise nesting_error(what, path)
        return tuple(_normalise(v, what, minimum, whole, path + (k,)) for k, v in enumerate(x))
    if not is_int(x):
        raise ShapeError(
            f"{what} must be an integer or a tuple of IntTuples; found {safe_text(whole)} "
            f"(leaf {path} is {type(x).__name__} {x!r})"
        )
    value = x if type(x) is Int else int(x)
    if minimum is not None and value < minimum:
        raise ShapeError(f"{what} must have integer leaves >= {minimum}; found {safe_text(whole)} "
                         f"(leaf {path} is {value})")
    return value


def safe_text(x: object) -> str:
    """``to_str(x)``, or ``repr(x)`` when ``x`` is not an IntTuple (for error messages)."""
    try:
        return to_str(x)
    except Exception:  # noqa: BLE001 - only used inside error messages
        return repr(x)



# ---- printing -------------------------------------------------------------------------------------


def to_str(x: object) -> str:
    """CuTe print form: static ints as ``_N``, no spaces, a 1-tuple as ``(N)``.

    >>> to_str((Int(2), 4)), to_str(((16, 2), (16, 3))), to_str((Int(8),))
    ('(_2,4)', '((16,2),(16,3))', '(_8)')
    """
    try:
        return _to_str(x)
    except RecursionError:
        raise nesting_error("to_str") from None


def _to_str(x: object) -> str:
    if type(x) is tuple:
        return "(" + ",".join(_to_str(v) for v in x) + ")"
    if type(x) is Int:
        return "_" + int.__repr__(x)
    return str(x)


__all__ = ["IntTuple", "MAX_NESTING", "as_int_tuple", "bounded_nesting", "int_leaf", "nesting_error", "safe_text",
           "to_str"]
