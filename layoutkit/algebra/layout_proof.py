"""Proving a :class:`~layoutkit.Layout` bijective (``Layout.prove_bijective``): checking the method,
choosing one under ``"auto"``, running it under a time budget and caching the verdict on the layout.

The provers themselves (enumeration, islpy, the F2 rank) are in :mod:`.proof` and :mod:`.bitlinear`;
this is the driver that picks among them for one layout, separate from the layout type so that the
type's module holds the map and its evaluation.  The limits it applies are the layout module's
``ENUMERATION_LIMIT`` and ``AUTO_BUDGET_S``, passed in by the method.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import LayoutError, ProofBudgetError, ProofError
from .bitlinear import bijection_by_f2
from .budget import check_budget, run_with_budget
from .proof import Proof, bijection_by_enumeration, bijection_by_isl, choose_method

if TYPE_CHECKING:
    from .layout import Layout


def prove_layout(
    layout: Layout, method: str, budget_s: float | None, enumeration_limit: int, auto_budget_s: float
) -> Proof:
    """``layout.prove_bijective(method, budget_s=budget_s)``: see that method for ``method`` and
    ``budget_s``; ``"auto"`` enumerates up to ``enumeration_limit`` coordinates and gives islpy
    ``auto_budget_s`` seconds when no budget is given."""
    budget = check_budget(budget_s, "prove_bijective")
    if not isinstance(method, str) or method not in ("auto", "enumerate", "isl", "f2"):
        raise LayoutError(f"unknown proof method {method!r}; expected 'auto', 'enumerate', 'isl' or 'f2'")
    if method == "auto":
        method = choose_method(layout.forward_index, layout.size, layout._bit_linear() is not None, enumeration_limit)
        if method == "isl" and budget is None:
            budget = auto_budget_s
    if method == "isl" and layout._bit_linear() is not None:
        f2 = layout.prove_bijective("f2")
        return dataclasses.replace(f2, detail=f"isl asked for; affine over F2, so the rank decided: {f2.detail}")
    key = ("proof", method)
    hit: Proof | None = layout._cache.get(key)
    if hit is None:
        methods: dict[str, Callable[[], Proof]] = {
            "enumerate": lambda: bijection_by_enumeration(layout.table(), layout.output_shape),
            "isl": lambda: bijection_by_isl(layout.forward_index, layout.forward_vars, layout.input_shape,
                                     layout.output_shape),
            "f2": lambda: f2_proof(layout)}
        spent: ProofBudgetError | None = layout._cache.get(("proof budget", method))
        if spent is not None and budget is not None and budget <= float(spent.limit or 0):
            raise spent  # this method already ran out of a budget at least as large
        try:
            hit = run_with_budget(methods[method], budget, f"prove_bijective({method!r}) of {layout.describe()}")
        except ProofBudgetError as err:
            layout._cache[("proof budget", method)] = err
            raise
        layout._cache[key] = hit
    return hit


def f2_proof(layout: Layout) -> Proof:
    """The F2 rank proof of ``layout``, or a ProofError saying why the map is not affine over F2."""
    bl = layout._bit_linear()
    if bl is None:
        raise ProofError(f"{layout.describe()}: not affine over F2 (an extent is not a power of two, or an "
                         "output is not built from bit shifts, masks, xors and carry-free sums)")
    return bijection_by_f2(bl)


__all__ = ["f2_proof", "prove_layout"]
