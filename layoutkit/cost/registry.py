"""Cost models by name: ``infer.register_cost_model(name, factory)``, ``infer_layouts(cost_model=...)``.

>>> {"io-aware", "register-count"} <= set(cost_model_names())
True
>>> get_cost_model("io-aware").name
'io-aware'
"""

from __future__ import annotations

from collections.abc import Callable

from .. import deferred
from ..errors import UnsupportedError
from .attempt import CostModel, adapt
from .io_aware import IOAwareModel
from .register_count import RegisterCountModel

_MODELS: dict[str, Callable[[], CostModel]] = {
    "register-count": RegisterCountModel,
    "io-aware": IOAwareModel,
}


def register_cost_model(name: str, factory: Callable[[], CostModel]) -> None:
    """Make ``infer_layouts(..., cost_model=name)`` use ``factory()``."""
    if not callable(factory):
        raise UnsupportedError(f"register_cost_model({name!r}, ...) needs a callable factory; found {factory!r}")
    _MODELS[str(name)] = factory


def cost_model_names() -> list[str]:
    deferred.load()  # the targets' models too
    return list(_MODELS)


def get_cost_model(model: str | CostModel) -> CostModel:
    """A model instance from a registered name, or ``model`` itself when it has a ``cost`` method (behind
    the :class:`CostModel` hooks when it does not derive from it)."""
    if not isinstance(model, str):
        if not callable(getattr(model, "cost", None)):
            raise UnsupportedError(f"a cost model needs a cost(layouts, program) method; found {model!r}")
        return adapt(model)
    if model not in _MODELS:
        deferred.load()  # a model a target registers
    if model not in _MODELS:
        raise UnsupportedError(f"unknown cost model {model!r}; known: {sorted(_MODELS)}")
    return adapt(_MODELS[model]())
