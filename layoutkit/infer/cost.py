"""Cost models that score free-mode attempts (REFERENCE section 6).

>>> AttemptCost(0, 8) < AttemptCost(0, 16) < AttemptCost(1, 0)
True
>>> 'register-count' in cost_model_names()
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..errors import UnsupportedError
from ..fragment.fragment import Fragment

REGISTER_LIMIT = 255


@dataclass(frozen=True, order=True)
class AttemptCost:
    """Compared lexicographically: ``mem`` (bytes spilled to local memory) first, then ``regs``."""

    mem: int
    regs: int


class CostModel(Protocol):
    def cost(self, layouts: Mapping[str, object], program) -> AttemptCost: ...


class RegisterCountModel:
    """``regs`` = register slots of every fragment of the component; ``mem`` = 4-byte slots beyond
    255 per thread, in bytes."""

    name = "register-count"

    def cost(self, layouts, program) -> AttemptCost:
        regs = 0
        for lay in layouts.values():
            if isinstance(lay, Fragment):
                regs += lay.local_size
        return AttemptCost(max(0, regs - REGISTER_LIMIT) * 4, regs)


_MODELS: dict[str, Callable[[], CostModel]] = {"register-count": RegisterCountModel}


def register_cost_model(name: str, factory: Callable[[], CostModel]) -> None:
    """Make ``infer_layouts(..., cost_model=name)`` use ``factory()``."""
    _MODELS[str(name)] = factory


def cost_model_names() -> list[str]:
    return list(_MODELS)


def get_cost_model(model: str | CostModel) -> CostModel:
    if not isinstance(model, str):
        if not hasattr(model, "cost"):
            raise UnsupportedError(f"a cost model needs a cost(layouts, program) method; found {model!r}")
        return model
    if model not in _MODELS:
        raise UnsupportedError(f"unknown cost model {model!r}; known: {sorted(_MODELS)}")
    return _MODELS[model]()
