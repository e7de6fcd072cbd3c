"""Pluggable cost models that score free-mode layout attempts (``docs/reference.md#cost-models``).

``register-count`` (default) and ``io-aware`` (exact global segments per warp instruction) live here;
target-aware models register by name from their backend (NVIDIA: ``smem-aware``, io-aware plus the bank
model's wavefronts).  Every model has ``explain()``.

>>> from layoutkit import cost
>>> cost.AttemptCost(0, 8) < cost.AttemptCost(0, 16) < cost.AttemptCost(1, 0)
True
>>> cost.get_cost_model("register-count").name
'register-count'
"""

from ..caches import clear_all
from .access import GlobalTraffic, global_traffic, shared_access, vector_width
from .attempt import (
    REGISTER_LIMIT,
    AttemptCost,
    CostModel,
    CostModelError,
    Operand,
    Statement,
    StatementCost,
    add_costs,
    conversion_price,
)
from .io_aware import IOAwareModel
from .register_count import RegisterCountModel
from .registry import cost_model_names, get_cost_model, register_cost_model
from .spill import spilled_bytes


def clear_caches() -> None:
    """Forget every memoised figure (they only save time): one loop over the registered caches."""
    clear_all()


__all__ = [
    "AttemptCost", "CostModel", "CostModelError", "GlobalTraffic", "IOAwareModel", "Operand",
    "REGISTER_LIMIT", "RegisterCountModel", "Statement", "StatementCost",
    "add_costs", "clear_caches", "conversion_price", "cost_model_names", "get_cost_model",
    "global_traffic", "register_cost_model", "shared_access", "spilled_bytes", "vector_width",
]
