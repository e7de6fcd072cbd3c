"""Layout inference over tile programs (``docs/reference.md#layout-inference``, ``docs/design.md#data-flow``).

Tile ops are definitions (:class:`TileOp`: builders, JSON arguments, checks, target-free rule) in one
registry (:mod:`.library`; :func:`register_op` adds one).  Target-free: a target joins through :mod:`.target`
(its backend registers its rules, tile ops, merge and hooks by target family; ``import layoutkit`` registers
the built-in NVIDIA and Ascend backends, imported by the first lookup of their targets).
The names below are imported on first use, so ``import layoutkit.infer`` costs only this module.

>>> from layoutkit import infer
>>> p = infer.Program(threads=128, target="sm_80")
>>> x = p.alloc_fragment("x", (64, 64), "float16")
>>> _ = p.clear(x)
>>> r = infer.infer_layouts(p)
>>> print(r.layout_map[x].forward_index[0])
_i // 16 * 8 + _j % 8
"""

from typing import TYPE_CHECKING

from .. import deferred as _deferred

if TYPE_CHECKING:  # pragma: no cover - imported on first use (see _LAZY)
    from ..cost import AttemptCost, CostModel, RegisterCountModel, register_cost_model
    from .conversions import LayoutConversion
    from .engine import InferenceConflictError, clear_caches, infer_layouts, minimal_constraints, solve
    from .library import get_op, get_rule, register_op, register_rule, unregister_op, unregister_rule
    from .ops import Access, Buffer, Op, Region
    from .program import Program
    from .result import Derivation, InferenceResult
    from .rules import COMMON, FREE, STRICT, RuleConflict, RuleContext, RuleResult
    from .target import Target, get_target, register_target
    from .tileop import TileOp
    from .validate import OpValidationError

_LAZY = {
    **dict.fromkeys(("InferenceConflictError", "minimal_constraints"), ".engine"),
    "LayoutConversion": ".conversions",
    **dict.fromkeys(("AttemptCost", "CostModel", "RegisterCountModel", "register_cost_model"), "..cost"),
    **dict.fromkeys(("clear_caches", "infer_layouts", "solve"), ".engine"),
    **dict.fromkeys(("Access", "Buffer", "Op", "Region"), ".ops"),
    "Program": ".program",
    **dict.fromkeys(("Derivation", "InferenceResult"), ".result"),
    **dict.fromkeys(("get_op", "get_rule", "register_op", "register_rule", "unregister_op", "unregister_rule"),
                    ".library"),
    **dict.fromkeys(("COMMON", "FREE", "STRICT", "RuleConflict", "RuleContext", "RuleResult"), ".rules"),
    "TileOp": ".tileop",
    **dict.fromkeys(("Target", "get_target", "register_target"), ".target"),
    "OpValidationError": ".validate",
}
__getattr__ = _deferred.lazy_attributes(__name__, _LAZY)

__all__ = [
    "Access", "AttemptCost", "Buffer", "COMMON", "clear_caches",
    "CostModel", "Derivation", "FREE", "InferenceConflictError",
    "InferenceResult", "LayoutConversion", "Op", "OpValidationError", "Program", "Region", "RegisterCountModel",
    "STRICT", "Target", "get_rule", "get_target",
    "infer_layouts", "minimal_constraints", "register_cost_model", "register_rule", "get_op", "register_op",
    "unregister_op", "unregister_rule", "RuleConflict", "RuleContext", "RuleResult", "TileOp",
    "register_target", "solve",
]
