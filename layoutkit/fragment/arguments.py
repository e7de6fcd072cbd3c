"""Arguments of the Fragment constructor: calling the user's thread and index functions (with ``_rep`` when
they take one more argument) and checking the thread range (integers, refused rather than truncated)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..algebra.nodes import Expr, Var
from ..algebra.shapes import call_index_fn, call_user, positional_arity
from ..errors import ExprError, ShapeError


def call_thread_fn(fn: Callable[..., object], variables: tuple[Var, ...], rep: Var, what: str) -> object:
    """Call a thread function with the placeholders, plus ``_rep`` when it takes one more."""
    n = len(variables)
    arity = positional_arity(fn)
    if arity is None:
        return call_user(fn, variables, what)
    lo, hi = arity

    def accepts(k: int) -> bool:
        return lo <= k and (hi is None or k <= hi)

    if accepts(n + 1) and (lo == n + 1 or not accepts(n)):
        return call_user(fn, (*variables, rep), what)
    if accepts(n):
        return call_user(fn, variables, what)
    raise ShapeError(f"{what} must take {n} arguments (one per input dim), or {n + 1} with _rep; it takes {lo}..{hi}")


def one_thread(outputs: tuple[Expr, ...]) -> Expr:
    """The one expression a thread function returned (an error naming them when it returned several)."""
    if len(outputs) != 1:
        raise ExprError(f"a thread function returns one thread expression; found {len(outputs)}: "
                        f"{', '.join(str(e) for e in outputs)}")
    return outputs[0]


def call_index(fn: Callable[..., object], variables: tuple[Var, ...]) -> tuple[Expr, ...]:
    """The index expressions of an index function called with the placeholders."""
    return call_index_fn(fn, variables, "Fragment forward_index_fn")


def check_thread_range(thread_range: Any) -> tuple[int, int] | None:
    """``(start, extent)`` as ints, or None; a non-integer or empty range is refused."""
    if thread_range is None:
        return None
    try:
        start, extent = thread_range
    except (TypeError, ValueError):
        raise ShapeError(f"thread_range must be (start, extent); found {thread_range!r}") from None
    # a float bound is refused, not truncated: (0.5, 32) names no thread range
    for name, v in (("start", start), ("extent", extent)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ShapeError(f"thread_range {name} must be an integer; found {type(v).__name__} {v!r} in "
                             f"{thread_range!r}")
    start, extent = int(start), int(extent)
    if start < 0 or extent <= 0:
        raise ShapeError(f"thread_range must have start >= 0 and extent > 0; found {thread_range!r}")
    return start, extent


__all__ = ["call_index", "call_thread_fn", "check_thread_range", "one_thread"]
