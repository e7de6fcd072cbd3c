"""Cost models that score free-mode attempts: a re-export of :mod:`layoutkit.cost`.

>>> AttemptCost(0, 8) < AttemptCost(0, 16) < AttemptCost(1, 0)
True
>>> 'register-count' in cost_model_names()
True
"""

from ..cost import (  # noqa: F401
    REGISTER_LIMIT,
    AttemptCost,
    CostModel,
    IOAwareModel,
    Operand,
    RegisterCountModel,
    Statement,
    cost_model_names,
    get_cost_model,
    register_cost_model,
)
