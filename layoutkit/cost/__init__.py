"""Pluggable cost models that score free-mode layout attempts (REFERENCE section 6).

``register-count`` (default), ``io-aware`` (exact global segments per warp instruction) and
``smem-aware`` (plus NV bank-model wavefronts); every model has ``explain()``.

>>> from layoutkit import cost
>>> cost.AttemptCost(0, 8) < cost.AttemptCost(0, 16) < cost.AttemptCost(1, 0)
True
>>> cost.get_cost_model("register-count").name
'register-count'
"""

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
from .smem_aware import Conversion, SharedMemoryAwareModel, _bank_report, conversion_cost, staged_conversion_cost
from .spill import spilled_bytes


def clear_caches() -> None:
    """Forget the memoised global-traffic and bank figures (they only save time)."""
    global_traffic.cache_clear()
    _bank_report.cache_clear()
    spilled_bytes.cache_clear()


__all__ = [
    "AttemptCost", "Conversion", "CostModel", "CostModelError", "GlobalTraffic", "IOAwareModel", "Operand",
    "REGISTER_LIMIT", "RegisterCountModel", "SharedMemoryAwareModel", "Statement", "StatementCost",
    "add_costs", "clear_caches", "conversion_cost", "conversion_price", "cost_model_names", "get_cost_model",
    "global_traffic", "register_cost_model",
    "shared_access", "staged_conversion_cost", "vector_width",
]
