"""Wall-clock budgets for proofs whose cost cannot be bounded from the input (islpy on xor-heavy maps).

islpy holds the interpreter lock for the whole of a call and its operation quota does not track time,
so a budget is enforced by running the work in a forked child process that is killed when the budget
runs out.  Where the platform cannot fork, the work runs here and the budget is checked when it
returns (it then bounds what is reported, not how long the call takes).

>>> run_with_budget(lambda: 6 * 7, 5.0, "answer")
42
>>> run_with_budget(lambda: 1, -1, "answer")
Traceback (most recent call last):
    ...
layoutkit.errors.ShapeError: answer: budget_s must be a positive number of seconds or None; found -1
"""

from __future__ import annotations

import math
import multiprocessing
import numbers
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import LayoutError, ProofBudgetError, ShapeError

T = TypeVar("T")


def check_budget(budget_s: object, what: str) -> float | None:
    """``budget_s`` as a float of seconds (positive, finite) or None (no budget)."""
    if budget_s is None:
        return None
    if isinstance(budget_s, bool) or not isinstance(budget_s, numbers.Real) or not (
            0 < float(budget_s) < math.inf):
        raise ShapeError(f"{what}: budget_s must be a positive number of seconds or None; found {budget_s!r}")
    return float(budget_s)


def run_with_budget(fn: Callable[[], T], budget_s: object, what: str) -> T:
    """``fn()``, or a :class:`~layoutkit.errors.ProofBudgetError` once it has run ``budget_s`` seconds.

    ``fn``'s LayoutErrors reach the caller as they are; its result must be picklable."""
    budget = check_budget(budget_s, what)
    if budget is None:
        return fn()
    if "fork" not in multiprocessing.get_all_start_methods():
        start = time.perf_counter()
        result = fn()
        _check_elapsed(time.perf_counter() - start, budget, what)
        return result
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(sender, fn), daemon=True)
    start = time.perf_counter()
    with warnings.catch_warnings():
        # the child only computes and writes one message: no lock another thread holds is ever taken
        warnings.simplefilter("ignore", DeprecationWarning)
        child.start()
    sender.close()
    try:
        if not receiver.poll(budget):
            raise ProofBudgetError(f"{what}: still running after the budget of {budget:g} s; stopped (pass a "
                                   "larger budget_s, or None for no limit)", budget, time.perf_counter() - start)
        try:
            status, value = receiver.recv()
        except EOFError:
            raise LayoutError(f"{what}: the proof process ended without an answer") from None
        except Exception as err:  # noqa: BLE001 - an error whose class cannot be rebuilt from its arguments
            raise LayoutError(f"{what}: the proof failed and its error could not be returned: {err}") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()
    if status == "error":
        raise value
    return value  # type: ignore[no-any-return]


def _check_elapsed(elapsed: float, budget: float, what: str) -> None:
    if elapsed > budget:
        raise ProofBudgetError(f"{what}: took {elapsed:.3g} s, past the budget of {budget:g} s", budget, elapsed)


def _child(sender: Any, fn: Callable[[], object]) -> None:
    try:
        message: tuple[str, object] = ("ok", fn())
    except Exception as err:  # noqa: BLE001 - raised again in the parent, as it would be without a budget
        message = ("error", err)
    try:
        sender.send(message)
    except Exception as err:  # noqa: BLE001 - an unpicklable result or error
        sender.send(("error", LayoutError(f"the proof's answer could not be returned: {err}")))
    sender.close()


__all__ = ["check_budget", "run_with_budget"]
